// Types of the emscripten factory (copied next to build/wasm/edgesfm-engine.mjs by the
// build; the threaded module's factory has the same type). The exported C functions are typed
// by the wrappers in ts/, not here.
export interface EmscriptenModuleOptions {
  wasmBinary?: ArrayBuffer | Uint8Array;
  locateFile?: (path: string, scriptDirectory: string) => string;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
  /** The threaded module: where its pthread workers import the module from. */
  mainScriptUrlOrBlob?: string | Blob;
}
declare const createEdgeSfmEngine: (options?: EmscriptenModuleOptions) => Promise<unknown>;
export default createEdgeSfmEngine;

// Types of the emscripten factory (copied next to build/wasm/edgesfm-engine.mjs by the
// build). The exported C functions are typed by the wrappers in ts/, not here.
export interface EmscriptenModuleOptions {
  wasmBinary?: ArrayBuffer | Uint8Array;
  locateFile?: (path: string, scriptDirectory: string) => string;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
}
declare const createEdgeSfmEngine: (options?: EmscriptenModuleOptions) => Promise<unknown>;
export default createEdgeSfmEngine;

/**
 * @module Loads the EdgeSfM wasm engine the same way in Node and in browsers/workers and
 * exposes a typed handle with helpers to move arrays through the wasm heap.
 *
 * Node: the .wasm is read from disk and handed to the factory as `wasmBinary` (Debian
 * emscripten 3.1.6 cannot fetch a file path). Browsers/workers: the factory fetches the
 * .wasm next to the .mjs (or `wasmUrl`), or uses `wasmBinary` when given.
 *
 * Two modules come from the same objects (engine-wasm/README.md): the plain one, and a threaded
 * one (shared memory, pthreads) whose parallel loops use the device's cores with the same
 * results; `{threads: true}` loads the threaded one, in cross-origin isolated browsers only.
 */
import createEdgeSfmEngine from "../build/wasm/edgesfm-engine.mjs";
import { heapAddress } from "./heap";

/** The raw emscripten module: heap views, malloc/free and the flat C API. */
export interface EngineModule {
  HEAPU8: Uint8Array;
  HEAP32: Int32Array;
  HEAPU32: Uint32Array;
  HEAPF32: Float32Array;
  HEAPF64: Float64Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  /** The threaded module's pthread workers and shared memory (emscripten's runtime). */
  PThread?: { terminateAllThreads(): void };
  wasmMemory?: WebAssembly.Memory;
  [cFunction: `_edgesfm_${string}`]: (...args: number[]) => number;
}

/** Must equal edgesfm_abi_version() in src/bindings/engine.cc. */
export const ENGINE_ABI_VERSION = 2;

/**
 * The most memory one engine's heap grows to: all that wasm32 addresses (4 GiB; Emscripten's
 * default would stop at 2 GiB). Must equal -sMAXIMUM_MEMORY in engine-wasm/CMakeLists.txt.
 */
export const ENGINE_MAXIMUM_MEMORY_BYTES = 4 * 1024 ** 3;

/**
 * A binding refused its input or failed (the C++ message, e.g. "two-view: camera 1: focal
 * length 0 of PINHOLE must be positive"); the engine instance stays usable. `trapped`: the module
 * itself stopped (a WebAssembly trap), so this instance refuses every later call and
 * `loadEngine()` makes a new one. A runner reports it as the task's `error_class`.
 */
export class EngineError extends Error {
  override name = "EngineError";
  constructor(
    message: string,
    readonly binding: string,
    readonly trapped = false,
  ) {
    super(message);
  }
}

export interface LoadEngineOptions {
  /** The .wasm bytes; skips any file or network access. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Where browsers fetch the .wasm from (default: beside the .mjs). */
  wasmUrl?: string | URL;
  /**
   * The threaded module (the other options do not apply): browsers with SharedArrayBuffer on a
   * cross-origin isolated page. Throws where it cannot load, or after `threadsTimeoutMs`.
   */
  threads?: boolean;
  /** How long the threaded module may take to start its pthread workers (default 60 s). */
  threadsTimeoutMs?: number;
}

const WASM_URL = new URL("../build/wasm/edgesfm-engine.wasm", import.meta.url);
/**
 * The threaded module's files, each named for the bundler: its pthread workers import the
 * module by URL, so it is an asset of its own, not part of a bundle.
 */
const THREADED_FILES = {
  module: new URL("../build/wasm/edgesfm-engine-mt.mjs", import.meta.url),
  "edgesfm-engine-mt.wasm": new URL("../build/wasm/edgesfm-engine-mt.wasm", import.meta.url),
  "edgesfm-engine-mt.worker.js": new URL("../build/wasm/edgesfm-engine-mt.worker.js", import.meta.url),
};
const DEFAULT_THREADS_TIMEOUT_MS = 60_000;

function isNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === "string";
}

async function readWasmInNode(): Promise<Uint8Array> {
  // A computed specifier keeps browser bundlers from trying to resolve node:fs.
  const fsModule = "node:fs/promises";
  const fs = (await import(/* @vite-ignore */ fsModule)) as typeof import("node:fs/promises");
  return fs.readFile(WASM_URL);
}

/**
 * A loaded engine. Arrays cross into wasm through `HeapScope`s; every binding wrapper
 * in ts/ takes an Engine.
 */
export class Engine {
  /** Why the module stopped, once it trapped. */
  private trap: string | null = null;
  /** The cores each call may use (shareCores). */
  private cores: (() => number) | null = null;

  constructor(readonly module: EngineModule) {}

  /** False once the module trapped: its memory may be inconsistent, so it is not used again. */
  get usable(): boolean {
    return this.trap === null;
  }

  /** Threads the engine's parallel loops use at most: 1 in the plain module. */
  get threads(): number {
    return this.module._edgesfm_parallel_threads!();
  }

  /**
   * Each later call's parallel loops use at most `cores()` threads (at least one): the cores
   * that the runner's other engines leave free when the call starts. Results do not depend on it.
   */
  shareCores(cores: () => number): this {
    this.cores = cores;
    return this;
  }

  /**
   * Calls a C function of the flat API by name (without the leading underscore). What the
   * binding caught (bindings/guard.h) is thrown here as an EngineError, once.
   */
  call(name: `edgesfm_${string}`, ...args: number[]): number {
    if (this.trap !== null)
      throw new EngineError(`${name}: this engine instance stopped earlier (${this.trap}); load a new one`, name, true);
    const fn = this.module[`_${name}`];
    if (typeof fn !== "function") throw new Error(`engine: no exported function ${name}`);
    if (this.cores) this.module._edgesfm_set_parallel_threads!(Math.max(1, Math.floor(this.cores())));
    let result: number;
    try {
      result = fn(...args);
    } catch (e) {
      if (!(e instanceof WebAssembly.RuntimeError)) throw e;
      this.trap = e.message;
      // A discarded threaded module's pool workers would otherwise live as long as this worker.
      this.module.PThread?.terminateAllThreads();
      throw new EngineError(`${name}: the engine trapped (${e.message}); this instance is discarded`, name, true);
    }
    this.refreshViews();
    const error = this.module._edgesfm_last_error!();
    if (error !== 0) {
      const message = this.readString(error);
      this.module._edgesfm_clear_error!();
      throw new EngineError(`${name}: ${message}`, name);
    }
    return result;
  }

  /**
   * A pthread that grows the threaded module's shared memory leaves this thread's heap views on the
   * old, shorter buffer (emscripten refreshes them only when this thread grows it): new views on the
   * grown one.
   */
  private refreshViews(): void {
    const buffer = this.module.wasmMemory?.buffer;
    if (!buffer || buffer === this.module.HEAPU8.buffer) return;
    Object.assign(this.module, {
      HEAPU8: new Uint8Array(buffer),
      HEAP32: new Int32Array(buffer),
      HEAPU32: new Uint32Array(buffer),
      HEAPF32: new Float32Array(buffer),
      HEAPF64: new Float64Array(buffer),
    });
  }

  /** Runs `body` with a scope whose allocations are all freed afterwards. */
  withHeap<T>(body: (heap: HeapScope) => T): T {
    const heap = new HeapScope(this.module);
    try {
      return body(heap);
    } finally {
      heap.free();
    }
  }

  /** Copies `count` doubles out of the heap (views are re-read: memory may have grown). */
  readF64(ptr: number, count: number): Float64Array {
    const at = heapAddress(ptr) / 8;
    return this.module.HEAPF64.slice(at, at + count);
  }

  readI32(ptr: number, count: number): Int32Array {
    const at = heapAddress(ptr) / 4;
    return this.module.HEAP32.slice(at, at + count);
  }

  /** Copies a NUL-terminated UTF-8 string out of the heap. */
  readString(ptr: number): string {
    const heap = this.module.HEAPU8;
    const start = heapAddress(ptr);
    let end = start;
    while (heap[end] !== 0) end += 1;
    // A copy: TextDecoder refuses views of the threaded module's shared memory.
    return new TextDecoder().decode(heap.slice(start, end));
  }
}

/** Allocations in the wasm heap that are freed together. */
export class HeapScope {
  private readonly allocations: number[] = [];

  constructor(private readonly module: EngineModule) {}

  /** Allocates `bytes` in the heap; answers the address, unsigned (heapAddress). */
  alloc(bytes: number): number {
    const ptr = heapAddress(this.module._malloc(Math.max(bytes, 8)));
    if (ptr === 0) throw new Error(`engine: out of memory allocating ${bytes} bytes`);
    this.allocations.push(ptr);
    return ptr;
  }

  /** Copies numbers into a fresh float64 array in the heap; returns its address. */
  f64(values: ArrayLike<number>): number {
    const ptr = this.alloc(values.length * 8);
    this.module.HEAPF64.set(values, ptr / 8);
    return ptr;
  }

  /** Copies integers into a fresh int32 array in the heap; returns its address. */
  i32(values: ArrayLike<number>): number {
    const ptr = this.alloc(values.length * 4);
    this.module.HEAP32.set(values, ptr / 4);
    return ptr;
  }

  /** Copies a string (UTF-8, NUL-terminated) into the heap; returns its address. */
  string(text: string): number {
    const bytes = new TextEncoder().encode(text);
    const ptr = this.alloc(bytes.length + 1);
    this.module.HEAPU8.set(bytes, ptr);
    this.module.HEAPU8[ptr + bytes.length] = 0;
    return ptr;
  }

  free(): void {
    for (const ptr of this.allocations.splice(0)) this.module._free(ptr);
  }
}

let shared: Promise<Engine> | undefined;
let sharedEngine: Engine | null = null;

/** Instantiates a new engine (its own memory). */
export async function createEngine(options: LoadEngineOptions = {}): Promise<Engine> {
  if (options.threads) return checked(await instantiateThreaded(options.threadsTimeoutMs ?? DEFAULT_THREADS_TIMEOUT_MS));
  const wasmBinary = options.wasmBinary ?? (isNode() ? await readWasmInNode() : undefined);
  const module = (await createEdgeSfmEngine({
    ...(wasmBinary ? { wasmBinary } : {}),
    ...(options.wasmUrl ? { locateFile: () => String(options.wasmUrl) } : {}),
  })) as EngineModule;
  return checked(module);
}

/**
 * Emscripten 3.1.6's pthread workers (EXPORT_ES6) are classic workers that `import()` the
 * module from `mainScriptUrlOrBlob`; `locateFile` names the worker script and the .wasm, so the
 * bundler's hashed asset names work. The factory settles only once every pool worker has
 * loaded, and never if one cannot: hence the timeout.
 */
async function instantiateThreaded(timeoutMs: number): Promise<EngineModule> {
  if (isNode()) throw new Error("engine: the threaded module runs in browsers only (pthreads under Node need a CommonJS build)");
  if (typeof SharedArrayBuffer === "undefined" || globalThis.crossOriginIsolated !== true) {
    throw new Error("engine: the threaded module needs a cross-origin isolated page (COOP same-origin, COEP require-corp)");
  }
  const moduleUrl = String(THREADED_FILES.module);
  const { default: factory } = (await import(/* @vite-ignore */ moduleUrl)) as { default: typeof createEdgeSfmEngine };
  const files: Record<string, URL> = THREADED_FILES;
  const starting = factory({ mainScriptUrlOrBlob: moduleUrl, locateFile: (path) => String(files[path] ?? path) });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`engine: the threaded module did not start within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return (await Promise.race([starting, timeout])) as EngineModule;
  } finally {
    clearTimeout(timer);
  }
}

function checked(module: EngineModule): Engine {
  const engine = new Engine(module);
  // Asked directly: a module older than the error reporting has no edgesfm_last_error.
  const abi = module._edgesfm_abi_version!();
  if (abi !== ENGINE_ABI_VERSION) {
    throw new Error(`engine: wasm ABI ${abi}, bindings expect ${ENGINE_ABI_VERSION}; rebuild with npm run build:engine`);
  }
  return engine;
}

/**
 * The process-wide (or worker-wide) engine, instantiated once on first use, and again after a
 * trap. The first call's options choose the module.
 */
export function loadEngine(options: LoadEngineOptions = {}): Promise<Engine> {
  if (sharedEngine && !sharedEngine.usable) {
    shared = undefined;
    sharedEngine = null;
  }
  shared ??= createEngine(options).then(
    (engine) => (sharedEngine = engine),
    (error: unknown) => {
      shared = undefined;
      throw error;
    },
  );
  return shared;
}

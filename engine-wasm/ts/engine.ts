/**
 * @module Loads the EdgeSfM wasm engine the same way in Node and in browsers/workers and
 * exposes a typed handle with helpers to move arrays through the wasm heap.
 *
 * Node: the .wasm is read from disk and handed to the factory as `wasmBinary` (Debian
 * emscripten 3.1.6 cannot fetch a file path). Browsers/workers: the factory fetches the
 * .wasm next to the .mjs (or `wasmUrl`), or uses `wasmBinary` when given.
 */
import createEdgeSfmEngine from "../build/wasm/edgesfm-engine.mjs";

/** The raw emscripten module: heap views, malloc/free and the flat C API. */
export interface EngineModule {
  HEAPU8: Uint8Array;
  HEAP32: Int32Array;
  HEAPU32: Uint32Array;
  HEAPF32: Float32Array;
  HEAPF64: Float64Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  [cFunction: `_edgesfm_${string}`]: (...args: number[]) => number;
}

/** Must equal edgesfm_abi_version() in src/bindings/engine.cc. */
export const ENGINE_ABI_VERSION = 1;

export interface LoadEngineOptions {
  /** The .wasm bytes; skips any file or network access. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Where browsers fetch the .wasm from (default: beside the .mjs). */
  wasmUrl?: string | URL;
}

const WASM_URL = new URL("../build/wasm/edgesfm-engine.wasm", import.meta.url);

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
  constructor(readonly module: EngineModule) {}

  /** Calls a C function of the flat API by name (without the leading underscore). */
  call(name: `edgesfm_${string}`, ...args: number[]): number {
    const fn = this.module[`_${name}`];
    if (typeof fn !== "function") throw new Error(`engine: no exported function ${name}`);
    return fn(...args);
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
    return this.module.HEAPF64.slice(ptr >> 3, (ptr >> 3) + count);
  }

  readI32(ptr: number, count: number): Int32Array {
    return this.module.HEAP32.slice(ptr >> 2, (ptr >> 2) + count);
  }

  /** Copies a NUL-terminated UTF-8 string out of the heap. */
  readString(ptr: number): string {
    const heap = this.module.HEAPU8;
    let end = ptr;
    while (heap[end] !== 0) end += 1;
    return new TextDecoder().decode(heap.subarray(ptr, end));
  }
}

/** Allocations in the wasm heap that are freed together. */
export class HeapScope {
  private readonly allocations: number[] = [];

  constructor(private readonly module: EngineModule) {}

  alloc(bytes: number): number {
    const ptr = this.module._malloc(Math.max(bytes, 8));
    if (ptr === 0) throw new Error(`engine: out of memory allocating ${bytes} bytes`);
    this.allocations.push(ptr);
    return ptr;
  }

  /** Copies numbers into a fresh float64 array in the heap; returns its address. */
  f64(values: ArrayLike<number>): number {
    const ptr = this.alloc(values.length * 8);
    this.module.HEAPF64.set(values, ptr >> 3);
    return ptr;
  }

  /** Copies integers into a fresh int32 array in the heap; returns its address. */
  i32(values: ArrayLike<number>): number {
    const ptr = this.alloc(values.length * 4);
    this.module.HEAP32.set(values, ptr >> 2);
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

/** Instantiates a new engine (its own memory). */
export async function createEngine(options: LoadEngineOptions = {}): Promise<Engine> {
  const wasmBinary = options.wasmBinary ?? (isNode() ? await readWasmInNode() : undefined);
  const module = (await createEdgeSfmEngine({
    ...(wasmBinary ? { wasmBinary } : {}),
    ...(options.wasmUrl ? { locateFile: () => String(options.wasmUrl) } : {}),
  })) as EngineModule;
  const engine = new Engine(module);
  const abi = engine.call("edgesfm_abi_version");
  if (abi !== ENGINE_ABI_VERSION) {
    throw new Error(`engine: wasm ABI ${abi}, bindings expect ${ENGINE_ABI_VERSION}; rebuild with npm run build:engine`);
  }
  return engine;
}

/** The process-wide (or worker-wide) engine, instantiated once on first use. */
export function loadEngine(options: LoadEngineOptions = {}): Promise<Engine> {
  shared ??= createEngine(options).catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}

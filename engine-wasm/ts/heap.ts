/**
 * @module An address the engine answered, as an offset into the heap views. Wasm hands i32 values
 * to JS signed, so an address past 2 GiB arrives negative; every pointer is read through this.
 * A module of its own, without the engine's build, so bindings that only read results (feature.ts,
 * loaded as plain modules by the WebGPU page of browser-runtime/gpu/chromium.test.ts) need no more.
 */
export const heapAddress = (pointer: number) => pointer >>> 0;

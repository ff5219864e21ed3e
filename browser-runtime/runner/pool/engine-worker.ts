/**
 * @module One engine worker of a runner's pool (engine-pool.ts): its own wasm engine, serving the
 * per-item calls of extract, match and verify over comlink. The same code in a browser's nested
 * dedicated Web Worker (browser-worker.ts) and in a Node worker thread (node-worker.ts); results
 * are transferred, not copied.
 */
import * as Comlink from "comlink";
import { createEngine } from "../../../engine-wasm/ts/engine";
import { type EngineCalls, engineCalls } from "./engine-calls";

export interface EngineWorkerApi extends EngineCalls {
  /** Instantiates the engine: from `wasm` when given, else as `createEngine` finds it (Node: from disk). */
  start(wasm: Uint8Array | undefined): Promise<void>;
}

/** Serves the engine calls on `endpoint` (default: this Web Worker's own scope). */
export function serveEngine(endpoint?: Comlink.Endpoint): void {
  let calls: EngineCalls | null = null;
  const ready = (): EngineCalls => {
    if (!calls) throw new Error("engine worker: start() first");
    return calls;
  };
  const api: EngineWorkerApi = {
    async start(wasm) {
      calls = engineCalls(await createEngine(wasm ? { wasmBinary: wasm } : {}));
    },
    async extract(gray, width, height, options) {
      const f = await ready().extract(gray, width, height, options);
      return Comlink.transfer(f, [f.keypoints.buffer, f.descriptors.buffer]);
    },
    async match(descA, descB, options) {
      const m = await ready().match(descA, descB, options);
      return Comlink.transfer(m, [m.buffer]);
    },
    verify: (pairs) => ready().verify(pairs),
  };
  Comlink.expose(api, endpoint);
}

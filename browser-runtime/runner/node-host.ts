/**
 * @module The runner's host in Node (tests, `npm run runner -- --node`): the engine from the
 * local wasm build, libvips decoding (sharp), an in-memory blob cache, and a pool of engine
 * workers as worker threads (pool/engine-pool.ts), one per core.
 */
import { readFile } from "node:fs/promises";
import { availableParallelism, totalmem } from "node:os";
import { Worker } from "node:worker_threads";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { decodeImage, encodeImage } from "../decode/node";
import { type Projector, selectProjector } from "../gpu/projection-gpu";
import { selectSiftStages, type SiftStages } from "../gpu/select";
import { loadShaderSources } from "../gpu/shader-sources";
import { runtimeVersionsOf } from "../runtime-versions";
import { MemoryBlobCache } from "./blob-cache";
import { type WorkerHandle, createEnginePool } from "./pool/engine-pool";
import type { RunnerHost } from "./runner";

const WASM_FILE = new URL("../../engine-wasm/build/wasm/edgesfm-engine.wasm", import.meta.url);
const ENGINE_WORKER = new URL("./pool/node-worker.ts", import.meta.url).href;
const KEEP_ALIVE_WORKER = new URL("./keep-alive/node-worker.ts", import.meta.url).href;
/** tsx's API, which loads the worker's TypeScript (the Node runner always runs from source under tsx or vitest). */
const TSX_API = import.meta.resolve("tsx/esm/api");

/** A worker thread running `file` (an engine worker, the keep-alive); unref'd, so an idle pool never keeps the process alive. */
function spawnWorker(file: string): WorkerHandle {
  const boot = `import(${JSON.stringify(TSX_API)}).then((tsx) => tsx.tsImport(${JSON.stringify(file)}, ${JSON.stringify(file)}))`;
  const worker = new Worker(boot, { eval: true });
  worker.unref();
  return {
    endpoint: nodeEndpoint(worker),
    terminate: () => void worker.terminate(),
    onExit(listener) {
      worker.on("error", listener);
      worker.on("exit", (code) => listener(new Error(`exited with code ${code}`)));
    },
  };
}

/** The runtime versions of this checkout's engine build and shaders. */
export async function localRuntimeVersions(): Promise<Record<string, string>> {
  return runtimeVersionsOf(new Uint8Array(await readFile(WASM_FILE)), await loadShaderSources());
}

/**
 * Node runners compute on the CPU (wasm): Node has no GPU here, and Dawn on a software adapter
 * loses to wasm by far (gpu/select.ts measures that in its tests). `engineWorkers` overrides the
 * core count the engine pool is sized by (1: the single-thread path).
 */
export async function nodeRunnerHost(name = "node-runner", o: { engineWorkers?: number } = {}): Promise<RunnerHost> {
  let sift: Promise<SiftStages> | undefined;
  let projector: Promise<Projector> | undefined;
  const abilities: RunnerHost["abilities"] = {
    webgpu: null,
    wasm: { simd: true, threads: false },
    memory_bytes: totalmem(),
    hardware_concurrency: availableParallelism(),
  };
  const engines = createEnginePool({
    abilities,
    engine: () => loadEngine(),
    spawn: () => spawnWorker(ENGINE_WORKER),
    size: o.engineWorkers,
  });
  return {
    name,
    abilities,
    runtimeVersions: await localRuntimeVersions(),
    engine: () => loadEngine(),
    engines,
    keepAlive: () => spawnWorker(KEEP_ALIVE_WORKER),
    sift: () => (sift ??= loadEngine().then((engine) => selectSiftStages(engine, undefined, undefined, undefined, engines))),
    decode: (bytes, options) => decodeImage(bytes, { respectExifOrientation: options.respectExifOrientation }),
    encode: (image, format, quality) => encodeImage(image, format, quality),
    projector: () => (projector ??= loadEngine().then((engine) => selectProjector(engine, undefined))),
    cache: new MemoryBlobCache(),
    teardown: () => engines.release(),
    memory: async () => ({
      engine_heap_bytes: (await loadEngine()).module.HEAPU8.length,
      rss_bytes: process.memoryUsage.rss(),
      peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
    }),
  };
}

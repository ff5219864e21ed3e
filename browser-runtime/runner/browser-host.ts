/**
 * @module The runner's host in a browser's Web Worker: the wasm engine fetched once (its bytes
 * also give the runtime version, and each engine worker of the pool instantiates them), WebGPU
 * adapter facts when the browser has WebGPU, the platform image decoder, an IndexedDB blob cache,
 * and a pool of engine workers as nested dedicated Web Workers (pool/engine-pool.ts).
 *
 * On a cross-origin isolated page the runner's own engine (mapping, global positioning, merging:
 * long calls that ran on one core while the pool's workers idled) is the threaded module, whose
 * parallel loops take the cores the pool leaves free; elsewhere the plain one, as before.
 */
import { type Engine, loadEngine } from "../../engine-wasm/ts/engine";
import type { RunnerAbilities } from "../../protocol";
import { decodeImageInBrowser, encodeImageInBrowser } from "../decode/browser";
import { decodeVideoInBrowser, hasWebCodecs } from "../decode/video-browser";
import { type Projector, selectProjector } from "../gpu/projection-gpu";
import { acquireGpu, type GpuContext } from "../gpu/device";
import { selectSiftStages, type SiftStages } from "../gpu/select";
import { loadShaderSources } from "../gpu/shader-sources";
import { runtimeVersionsOf } from "../runtime-versions";
import { IdbBlobCache } from "./blob-cache";
import { type WorkerHandle, createEnginePool } from "./pool/engine-pool";
import type { RunnerHost } from "./runner";

const WASM_URL = new URL("../../engine-wasm/build/wasm/edgesfm-engine.wasm", import.meta.url);

/** A minimal module using a SIMD instruction: validates only where wasm SIMD is supported. */
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

/**
 * A worker nested in the runner's worker (ended with it): an engine worker or the keep-alive. Each is
 * started by a literal `new Worker(new URL(...))`, the form Vite recognises to bundle its module.
 */
function handleOf(worker: Worker): WorkerHandle {
  return {
    endpoint: worker,
    terminate: () => worker.terminate(),
    onExit: (listener) => worker.addEventListener("error", (e) => listener(new Error(e.message || "uncaught error"))),
  };
}

async function webgpuAbilities(gpu: GpuContext | { error: string }): Promise<RunnerAbilities["webgpu"]> {
  if ("error" in gpu) return null;
  const info = gpu.adapter.info;
  return {
    adapter: {
      vendor: info?.vendor ?? "",
      architecture: info?.architecture ?? "",
      device: info?.device ?? "",
      description: gpu.description,
      is_fallback_adapter: gpu.isFallbackAdapter,
    },
    features: [...gpu.adapter.features].slice(0, 128),
    limits: { ...gpu.limits },
  };
}

/**
 * Whether the threaded engine loads here (then it is the worker's shared engine). Where the page
 * is isolated but it does not load (no wasm threads, a worker that fails), the plain one serves.
 */
async function threadedEngineLoads(): Promise<boolean> {
  if (typeof SharedArrayBuffer === "undefined" || globalThis.crossOriginIsolated !== true) return false;
  try {
    await loadEngine({ threads: true });
    return true;
  } catch (e) {
    console.warn(`[runner] the threaded engine did not load, computing on the plain one: ${e instanceof Error ? e.message : String(e)}`);
    return false;
  }
}

/** `threads: false` keeps the plain engine on an isolated page too (the runner page's `?threads=0`). */
export async function browserRunnerHost(name: string, onTeardown: () => void, o: { threads?: boolean } = {}): Promise<RunnerHost> {
  const res = await fetch(WASM_URL);
  if (!res.ok) throw new Error(`engine wasm: HTTP ${res.status}`);
  const wasm = new Uint8Array(await res.arrayBuffer());
  const [shaders, gpu, threads] = await Promise.all([loadShaderSources(), acquireGpu(), o.threads !== false && threadedEngineLoads()]);
  const nav = navigator as Navigator & { deviceMemory?: number };
  let sift: Promise<SiftStages> | undefined;
  let projector: Promise<Projector> | undefined;
  const abilities: RunnerAbilities = {
    webgpu: await webgpuAbilities(gpu),
    wasm: {
      simd: WebAssembly.validate(SIMD_PROBE),
      threads,
    },
    memory_bytes: nav.deviceMemory ? Math.round(nav.deviceMemory * 1024 ** 3) : null,
    hardware_concurrency: nav.hardwareConcurrency ?? null,
  };
  // The threaded engine computes on the cores whose pool workers are idle, so a map call beside
  // another lease's extraction does not oversubscribe the device.
  const engine = (): Promise<Engine> =>
    threads ? loadEngine({ threads: true }).then((e) => e.shareCores(() => engines.size - engines.busy)) : loadEngine({ wasmBinary: wasm });
  const engines = createEnginePool({
    abilities,
    engine,
    spawn: () => handleOf(new Worker(new URL("./pool/browser-worker.ts", import.meta.url), { type: "module", name: "edgesfm-engine" })),
    wasm,
  });
  const host: RunnerHost = {
    name,
    abilities,
    runtimeVersions: await runtimeVersionsOf(wasm, shaders),
    engine,
    engines,
    keepAlive: () =>
      handleOf(new Worker(new URL("./keep-alive/browser-worker.ts", import.meta.url), { type: "module", name: "edgesfm-keep-alive" })),
    // Measured once, on first use: WGSL on a real GPU, WASM where the adapter is software.
    sift: () => (sift ??= engine().then((e) => selectSiftStages(e, "error" in gpu ? undefined : gpu, shaders, undefined, engines))),
    decode: (bytes, options) => decodeImageInBrowser(bytes, options),
    encode: (image, format, quality) => encodeImageInBrowser(image, format, quality),
    ...(hasWebCodecs() ? { videoFrames: decodeVideoInBrowser } : {}),
    projector: () => (projector ??= engine().then((e) => selectProjector(e, "error" in gpu ? undefined : gpu, shaders))),
    cache: new IdbBlobCache(),
    teardown() {
      engines.release();
      if (!("error" in gpu)) gpu.destroy();
      onTeardown();
    },
  };
  return host;
}

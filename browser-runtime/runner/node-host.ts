/**
 * @module The runner's host in Node (tests, `npm run runner -- --node`): the engine from the
 * local wasm build, libvips decoding (sharp), an in-memory blob cache.
 */
import { readFile } from "node:fs/promises";
import { availableParallelism, totalmem } from "node:os";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { decodeImage } from "../decode/node";
import { selectSiftStages, type SiftStages } from "../gpu/select";
import { loadShaderSources } from "../gpu/shader-sources";
import { runtimeVersionsOf } from "../runtime-versions";
import { MemoryBlobCache } from "./blob-cache";
import type { RunnerHost } from "./runner";

const WASM_FILE = new URL("../../engine-wasm/build/wasm/edgesfm-engine.wasm", import.meta.url);

/** The runtime versions of this checkout's engine build and shaders. */
export async function localRuntimeVersions(): Promise<Record<string, string>> {
  return runtimeVersionsOf(new Uint8Array(await readFile(WASM_FILE)), await loadShaderSources());
}

/**
 * Node runners compute on the CPU (wasm): Node has no GPU here, and Dawn on a software adapter
 * loses to wasm by far (gpu/select.ts measures that in its tests).
 */
export async function nodeRunnerHost(name = "node-runner"): Promise<RunnerHost> {
  let sift: Promise<SiftStages> | undefined;
  return {
    name,
    abilities: {
      webgpu: null,
      wasm: { simd: true, threads: false },
      memory_bytes: totalmem(),
      hardware_concurrency: availableParallelism(),
    },
    runtimeVersions: await localRuntimeVersions(),
    engine: () => loadEngine(),
    sift: () => (sift ??= loadEngine().then((engine) => selectSiftStages(engine, undefined))),
    decode: (bytes, options) => decodeImage(bytes, { respectExifOrientation: options.respectExifOrientation }),
    cache: new MemoryBlobCache(),
  };
}

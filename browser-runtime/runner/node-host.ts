/**
 * @module The runner's host in Node (tests, `npm run runner -- --node`): the engine from the
 * local wasm build, libvips decoding (sharp), an in-memory blob cache.
 */
import { readFile } from "node:fs/promises";
import { availableParallelism, totalmem } from "node:os";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { decodeImage } from "../decode/node";
import { loadShaderSources } from "../gpu/shader-sources";
import { runtimeVersionsOf } from "../runtime-versions";
import { MemoryBlobCache } from "./blob-cache";
import type { RunnerHost } from "./runner";

const WASM_FILE = new URL("../../engine-wasm/build/wasm/edgesfm-engine.wasm", import.meta.url);

/** The runtime versions of this checkout's engine build and shaders. */
export async function localRuntimeVersions(): Promise<Record<string, string>> {
  return runtimeVersionsOf(new Uint8Array(await readFile(WASM_FILE)), await loadShaderSources());
}

export async function nodeRunnerHost(name = "node-runner"): Promise<RunnerHost> {
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
    decode: (bytes, options) => decodeImage(bytes, { respectExifOrientation: options.respectExifOrientation }),
    cache: new MemoryBlobCache(),
  };
}

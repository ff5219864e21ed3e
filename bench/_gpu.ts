/**
 * @module The WGSL path for the feature and matching benchmarks: one shared WebGPU device and
 * compiled kernels, and timed runs that mirror the WASM calls. bench/features.ts and
 * bench/matching.ts call these next to their WASM and COLMAP columns; bench/gpu.ts uses them
 * on its own.
 */

import type { SiftFeatures, SiftOptions, MatchOptions } from "../engine-wasm/ts/feature";
import { acquireGpu } from "../browser-runtime/gpu/device";
import { MatcherGpu, matchDescriptorsGpu } from "../browser-runtime/gpu/match-gpu";
import { loadShaderSources } from "../browser-runtime/gpu/shader-sources";
import { SiftGpu, extractSiftGpu } from "../browser-runtime/gpu/sift-gpu";

export interface GpuBench {
  adapter: string;
  isFallbackAdapter: boolean;
  extract(gray: Uint8Array | Float32Array, width: number, height: number, options?: Partial<SiftOptions>): Promise<SiftFeatures>;
  match(a: Uint8Array, b: Uint8Array, options?: Partial<MatchOptions>): Promise<Uint32Array>;
  close(): void;
}

/** The WGSL path on this machine's WebGPU adapter (software here), or undefined with a reason printed. */
export async function openGpuBench(): Promise<GpuBench | undefined> {
  const gpu = await acquireGpu();
  if ("error" in gpu) {
    console.warn(`WGSL column skipped: ${gpu.error}`);
    return undefined;
  }
  const sources = await loadShaderSources();
  const sift = new SiftGpu(gpu.device, sources, !gpu.isFallbackAdapter);
  await sift.prepare();
  const matcher = MatcherGpu.forContext(gpu, sources);
  return {
    adapter: gpu.description,
    isFallbackAdapter: gpu.isFallbackAdapter,
    extract: (gray, width, height, options) => extractSiftGpu(sift, gray, width, height, options),
    match: (a, b, options) => matchDescriptorsGpu(matcher, a, b, options),
    close: () => gpu.destroy(),
  };
}

/** Wall time of `run` in seconds, and its result. */
export async function timed<T>(run: () => Promise<T> | T): Promise<{ seconds: number; result: T }> {
  const start = performance.now();
  const result = await run();
  return { seconds: (performance.now() - start) / 1000, result };
}

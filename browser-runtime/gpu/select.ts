/**
 * @module Picks the SIFT and matching implementation for this device by measuring both once on
 * a small calibration workload (issue 4: "a runner measures both on its device and uses the
 * faster"). WGSL wins on real GPUs; on software adapters (SwiftShader, lavapipe) the WASM path
 * does, see ../shared/notes/toolchain.md. The WASM path runs on the runner's engine pool, `size`
 * images or pairs at once against the GPU's one, so it is compared by throughput: the GPU wins
 * when it is faster than one engine by more than the pool's size.
 */

import type { Engine } from "../../engine-wasm/ts/engine";
import { extractSift, matchDescriptors, type MatchOptions, type SiftFeatures, type SiftOptions } from "../../engine-wasm/ts/feature";
import type { EnginePool } from "../runner/pool/engine-pool";
import type { GpuContext } from "./device";
import { MatcherGpu, matchDescriptorsGpu } from "./match-gpu";
import type { ShaderSources } from "./shader-sources";
import { SiftGpu, extractSiftGpu } from "./sift-gpu";
import { syntheticImage } from "./synthetic-image";

export type SiftPath = "wasm" | "webgpu";

/** The stage functions a runner calls, bound to the chosen implementations. */
export interface SiftStages {
  features: SiftPath;
  matching: SiftPath;
  /** Calibration timings in milliseconds (after one warm-up run of each). */
  timings: { wasmExtract: number; gpuExtract?: number; wasmMatch: number; gpuMatch?: number };
  adapter?: string;
  extract(gray: Float32Array | Uint8Array, width: number, height: number, options?: Partial<SiftOptions>): Promise<SiftFeatures>;
  match(descA: Uint8Array, descB: Uint8Array, options?: Partial<MatchOptions>): Promise<Uint32Array>;
  /** The WASM path's functions, whatever was chosen (a task's `use_gpu: false`). */
  cpu: Pick<SiftStages, "extract" | "match">;
  /** The WGSL path's functions when this runner has an adapter (a task routed to `webgpu`, spec 4.16). */
  gpu?: Pick<SiftStages, "extract" | "match">;
}

/** The stages of a task whose spec pins a provider (4.16; the service leases a `webgpu` task only to runners with an adapter). */
export function siftFor(stages: SiftStages, provider: string | undefined): SiftStages {
  if (provider === undefined) return stages;
  if (provider === "wasm") return stagesFor(stages, false);
  if (provider === "webgpu" && stages.gpu) return { ...stages, ...stages.gpu, features: "webgpu", matching: "webgpu" };
  throw new Error(`this runner cannot run provider '${provider}'`);
}

/**
 * The stages a task runs on: with `use_gpu: false` (2.12 FeaturesSpec, MatcherSpec) the WASM path,
 * whatever the calibration chose; otherwise the faster.
 */
export function stagesFor(stages: SiftStages, useGpu: boolean): SiftStages {
  return useGpu ? stages : { ...stages, features: "wasm", matching: "wasm", extract: stages.cpu.extract, match: stages.cpu.match };
}

/** The calibration workload: a synthetic image and two descriptor sets. */
export interface Calibration {
  width: number;
  height: number;
  descriptors: number;
}

/** Default: a 256x192 image (about a thousand features at octave -1) and 512 x 512 descriptors. */
export const DEFAULT_CALIBRATION: Calibration = { width: 256, height: 192, descriptors: 512 };

/** Deterministic descriptors with SIFT's scale (unit vectors times 512, clamped to bytes). */
function calibrationDescriptors(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(128 * n);
  let state = seed;
  for (let i = 0; i < out.length; i++) {
    state = (state * 1664525 + 1013904223) >>> 0;
    out[i] = (state >>> 24) % 90; // mean about 45: |v| about 512 over 128 dims
  }
  return out;
}

/**
 * Time of one run after a warm-up (wasm tier-up, allocations). When the warm-up alone already
 * exceeds `giveUpAfter` ms the candidate has lost: its warm-up time is returned without a rerun,
 * which keeps calibration short on software adapters.
 */
async function timeIt(run: () => Promise<unknown> | unknown, giveUpAfter = Infinity): Promise<number> {
  let start = performance.now();
  await run();
  const warmUp = performance.now() - start;
  if (warmUp > giveUpAfter) return warmUp;
  start = performance.now();
  await run();
  return performance.now() - start;
}

/**
 * Measures both paths once on `engine` and the GPU and returns the faster of each (WASM when no GPU
 * is given); the WASM path computes on `pool` when given, else on `engine`.
 */
export async function selectSiftStages(
  engine: Engine,
  gpu: GpuContext | undefined,
  sources?: ShaderSources,
  calibration = DEFAULT_CALIBRATION,
  pool?: Pick<EnginePool, "size" | "extract" | "match">,
): Promise<SiftStages> {
  const { width, height } = calibration;
  const image = syntheticImage(width, height);
  const descA = calibrationDescriptors(calibration.descriptors, 1);
  const descB = calibrationDescriptors(calibration.descriptors, 2);
  const wasmExtract = await timeIt(() => extractSift(engine, image, width, height));
  const wasmMatch = await timeIt(() => matchDescriptors(engine, descA, descB));
  const cpuStages = pool ?? {
    size: 1,
    extract: async (gray: Float32Array | Uint8Array, w: number, h: number, options?: Partial<SiftOptions>) =>
      extractSift(engine, gray, w, h, options),
    match: async (a: Uint8Array, b: Uint8Array, options?: Partial<MatchOptions>) => matchDescriptors(engine, a, b, options),
  };
  if (!gpu || !sources) {
    return {
      features: "wasm",
      matching: "wasm",
      timings: { wasmExtract, wasmMatch },
      extract: cpuStages.extract,
      match: cpuStages.match,
      cpu: cpuStages,
    };
  }
  const sift = new SiftGpu(gpu.device, sources, !gpu.isFallbackAdapter);
  await sift.prepare(); // shader compilation is a one-off cost, not part of the comparison
  const matcher = MatcherGpu.forContext(gpu, sources);
  // A warm-up several times slower than the CPU's steady state cannot win.
  const gpuExtract = await timeIt(() => extractSiftGpu(sift, image, width, height), (4 * wasmExtract) / cpuStages.size);
  const gpuMatch = await timeIt(() => matchDescriptorsGpu(matcher, descA, descB), (4 * wasmMatch) / cpuStages.size);
  const features: SiftPath = gpuExtract < wasmExtract / cpuStages.size ? "webgpu" : "wasm";
  const matching: SiftPath = gpuMatch < wasmMatch / cpuStages.size ? "webgpu" : "wasm";
  const gpuStages: Pick<SiftStages, "extract" | "match"> = {
    // Images too large for this device's buffer limits go to the CPU path.
    extract: (gray, w, h, options) =>
      sift.fits(w, h, options) ? extractSiftGpu(sift, gray, w, h, options) : cpuStages.extract(gray, w, h, options),
    match: (a, b, options) => matchDescriptorsGpu(matcher, a, b, options),
  };
  return {
    features,
    matching,
    adapter: gpu.description,
    timings: { wasmExtract, gpuExtract, wasmMatch, gpuMatch },
    // Images too large for this device's buffer limits go to the CPU path.
    extract: features === "webgpu" ? gpuStages.extract : cpuStages.extract,
    match: matching === "webgpu" ? gpuStages.match : cpuStages.match,
    cpu: cpuStages,
    gpu: gpuStages,
  };
}

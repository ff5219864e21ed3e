/**
 * @module Entry point of the headless-Chromium test page: runs the same WGSL kernels through the
 * browser's own WebGPU (`navigator.gpu`) and hands the results back to the Node test.
 */

import { acquireGpu } from "./device";
import { MatcherGpu, matchDescriptorsGpu } from "./match-gpu";
import { loadShaderSources } from "./shader-sources";
import { SiftGpu, extractSiftGpu } from "./sift-gpu";
import { syntheticImage } from "./synthetic-image";

export interface BrowserRunResult {
  adapter: string;
  isFallbackAdapter: boolean;
  keypoints: number[];
  descriptors: number[];
  matches: number[];
}

async function runInBrowser(
  width: number,
  height: number,
  descA: number[],
  descB: number[],
): Promise<BrowserRunResult | { error: string }> {
  const gpu = await acquireGpu();
  if ("error" in gpu) return gpu;
  try {
    const sources = await loadShaderSources();
    const sift = new SiftGpu(gpu.device, sources, !gpu.isFallbackAdapter);
    const features = await extractSiftGpu(sift, syntheticImage(width, height), width, height);
    const matches = await matchDescriptorsGpu(MatcherGpu.forContext(gpu, sources), Uint8Array.from(descA), Uint8Array.from(descB));
    return {
      adapter: gpu.description,
      isFallbackAdapter: gpu.isFallbackAdapter,
      keypoints: Array.from(features.keypoints),
      descriptors: Array.from(features.descriptors),
      matches: Array.from(matches),
    };
  } finally {
    gpu.destroy();
  }
}

(globalThis as { runSiftGpu?: typeof runInBrowser }).runSiftGpu = runInBrowser;

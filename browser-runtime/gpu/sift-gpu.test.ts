// The WGSL SIFT twin against the WASM path (engine-wasm/src/feature/SIFT.md): same keypoints
// within sub-pixel tolerance, descriptors within quantisation, same matches. Runs on Dawn in
// Node with a software Vulkan driver (SwiftShader), so images are kept small.
import { beforeAll, describe, expect, it } from "vitest";
import { loadEngine, type Engine } from "../../engine-wasm/ts/engine";
import { extractSift, matchDescriptors, type SiftFeatures } from "../../engine-wasm/ts/feature";
import { compareSift, matchAgreement } from "./agreement";
import { MatcherGpu, matchDescriptorsGpu } from "./match-gpu";
import { loadShaderSources } from "./shader-sources";
import { SiftGpu, extractSiftGpu, gaussianTaps } from "./sift-gpu";
import { loadGrayPhoto, syntheticImage, type GrayPhoto } from "./test-images";
import { testGpu } from "./test-support";

const gpu = await testGpu();
const noGpu = "error" in gpu;

describe.skipIf(noGpu)("WGSL SIFT agrees with the WASM SIFT", () => {
  let engine: Engine;
  let sift: SiftGpu;
  let matcher: MatcherGpu;
  const photos: GrayPhoto[] = [];
  const cpu: SiftFeatures[] = [];
  const gpuOut: SiftFeatures[] = [];
  // Real photos downscaled by the SIFT budget itself (both paths resize with the same tent filter).
  const photoOptions = { maxImageSize: 320 };

  beforeAll(async () => {
    if ("error" in gpu) return;
    engine = await loadEngine();
    const sources = await loadShaderSources();
    sift = new SiftGpu(gpu.device, sources, !gpu.isFallbackAdapter);
    matcher = new MatcherGpu(gpu.device, sources);
    for (const file of ["02928139_3448003521.jpg", "10265353_3838484249.jpg"]) photos.push(await loadGrayPhoto("sacre-coeur", file));
  });

  it("finds the same keypoints and descriptors on a synthetic image", async () => {
    const [w, h] = [192, 144];
    const image = syntheticImage(w, h);
    const a = extractSift(engine, image, w, h);
    const b = await extractSiftGpu(sift, image, w, h);
    const agreement = compareSift(a, b);
    console.log("synthetic", agreement);
    expect(a.keypoints.length).toBeGreaterThan(4 * 40);
    expect(agreement.matchedA).toBeGreaterThanOrEqual(0.99);
    expect(agreement.matchedB).toBeGreaterThanOrEqual(0.99);
    expect(agreement.maxPositionError).toBeLessThan(0.01);
    expect(agreement.maxDescriptorByteDiff).toBeLessThanOrEqual(3);
  });

  it("finds the same keypoints and descriptors on downscaled real photos (8-bit input)", async () => {
    for (const photo of photos) {
      const a = extractSift(engine, photo.gray, photo.width, photo.height, photoOptions);
      const b = await extractSiftGpu(sift, photo.gray, photo.width, photo.height, photoOptions);
      cpu.push(a);
      gpuOut.push(b);
      const agreement = compareSift(a, b);
      console.log(photo.name, agreement);
      expect(a.keypoints.length).toBeGreaterThan(4 * 200);
      expect(agreement.matchedA).toBeGreaterThanOrEqual(0.98);
      expect(agreement.matchedB).toBeGreaterThanOrEqual(0.98);
      expect(agreement.meanDescriptorL1).toBeLessThan(2);
    }
  });

  it("is deterministic: the same bytes twice, in VLFeat's scan order", async () => {
    const [w, h] = [96, 80];
    const image = syntheticImage(w, h);
    const first = await extractSiftGpu(sift, image, w, h);
    const second = await extractSiftGpu(sift, image, w, h);
    expect(second.keypoints).toEqual(first.keypoints);
    expect(second.descriptors).toEqual(first.descriptors);
  });

  it("matches real descriptors exactly like the WASM matcher (ratio, distance, cross-check)", async () => {
    const [a, b] = cpu as [SiftFeatures, SiftFeatures];
    for (const options of [{}, { crossCheck: false }, { maxRatio: 0.9, maxDistance: 0.9 }]) {
      const expected = matchDescriptors(engine, a.descriptors, b.descriptors, options);
      const actual = await matchDescriptorsGpu(matcher, a.descriptors, b.descriptors, options);
      console.log("matches", options, expected.length / 2, actual.length / 2);
      expect(matchAgreement(expected, actual)).toBe(1);
      expect(actual).toEqual(expected);
    }
    // The GPU features match across the pair about as well as the CPU's.
    const cpuMatches = matchDescriptors(engine, a.descriptors, b.descriptors).length / 2;
    const gpuMatches = (await matchDescriptorsGpu(matcher, gpuOut[0]!.descriptors, gpuOut[1]!.descriptors)).length / 2;
    expect(Math.abs(gpuMatches - cpuMatches)).toBeLessThanOrEqual(Math.max(3, 0.05 * cpuMatches));
  });

  it("handles empty and tiny descriptor sets", async () => {
    const one = new Uint8Array(128).fill(7);
    expect(await matchDescriptorsGpu(matcher, new Uint8Array(0), one)).toEqual(new Uint32Array(0));
    expect(await matchDescriptorsGpu(matcher, one, new Uint8Array(0))).toEqual(new Uint32Array(0));
    expect(await matchDescriptorsGpu(matcher, one, one, { crossCheck: false })).toEqual(matchDescriptors(engine, one, one, { crossCheck: false }));
  });
});

describe("SIFT Gaussian taps", () => {
  it("follow VLFeat: radius ceil(4 sigma), normalised in float32", () => {
    const taps = gaussianTaps(1.249);
    expect(taps.length).toBe(2 * 5 + 1);
    expect(taps.reduce((s, v) => s + v, 0)).toBeCloseTo(1, 6);
    expect(taps[5]).toBeGreaterThan(taps[4]!);
  });
});

describe.skipIf(noGpu)("WGSL SIFT options", () => {
  it("agrees with the WASM path for upright L2 features with up to 4 orientations and a small budget", async () => {
    if ("error" in gpu) return;
    const engine = await loadEngine();
    const sift = new SiftGpu(gpu.device, await loadShaderSources(), !gpu.isFallbackAdapter);
    const [w, h] = [128, 96];
    const image = syntheticImage(w, h);
    for (const options of [{ upright: true, normalization: "l2" as const }, { maxNumOrientations: 4 }, { maxNumFeatures: 20 }, { firstOctave: 0, numOctaves: 2 }]) {
      const a = extractSift(engine, image, w, h, options);
      const b = await extractSiftGpu(sift, image, w, h, options);
      const agreement = compareSift(a, b);
      expect(agreement.countB, JSON.stringify(options)).toBe(agreement.countA);
      expect(agreement.matchedA, JSON.stringify(options)).toBe(1);
      expect(agreement.maxDescriptorByteDiff).toBeLessThanOrEqual(2);
    }
    await expect(extractSiftGpu(sift, image, w, h, { maxNumOrientations: 0 })).rejects.toThrow(RangeError);
  });
});

describe.skipIf(noGpu)("WGSL SIFT buffer limits", () => {
  it("knows which image sizes fit the device, counting the maxImageSize budget", async () => {
    if ("error" in gpu) return;
    const sift = new SiftGpu(gpu.device, await loadShaderSources());
    const limit = Math.min(gpu.device.limits.maxStorageBufferBindingSize, gpu.device.limits.maxBufferSize);
    expect(sift.fits(640, 480)).toBe(true);
    // 24 bytes per first-octave pixel (2x upsampled): a side of sqrt(limit / 96) just fits.
    const side = Math.floor(Math.sqrt(limit / 96));
    expect(sift.fits(side + 64, side + 64, { maxImageSize: 100_000 })).toBe(false);
    expect(sift.fits(side + 64, side + 64, { maxImageSize: 640 })).toBe(true);
  });
});

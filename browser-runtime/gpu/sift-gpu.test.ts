// The WGSL SIFT twin against the WASM path (engine-wasm/src/feature/SIFT.md): same keypoints
// within sub-pixel tolerance, descriptors within quantisation, same matches. Runs on Dawn in
// Node with a software Vulkan driver (SwiftShader), so images are kept small.
import { beforeAll, describe, expect, it } from "vitest";
import { loadEngine, type Engine } from "../../engine-wasm/ts/engine";
import { extractSift, matchDescriptors, type SiftFeatures } from "../../engine-wasm/ts/feature";
import { compareSift, matchAgreement } from "../../protocol/agreement";
import { MatcherGpu, matchDescriptorsGpu } from "./match-gpu";
import { loadShaderSources } from "./shader-sources";
import { SiftGpu, extractSiftGpu, gaussianTaps } from "./sift-gpu";
import { syntheticImage } from "./synthetic-image";
import { loadGrayPhoto, type GrayPhoto } from "./test-images";
import { testGpu } from "./test-support";

const gpu = await testGpu();
const noGpu = "error" in gpu;

describe.skipIf(noGpu)("WGSL SIFT agrees with the WASM SIFT", () => {
  let engine: Engine;
  let sift: SiftGpu;
  let matcher: MatcherGpu;
  const photos: GrayPhoto[] = [];
  const cpu: SiftFeatures[] = [];
  // Real photos downscaled by the SIFT budget itself (both paths resize with the same tent filter).
  const photoOptions = { maxImageSize: 320 };

  beforeAll(async () => {
    if ("error" in gpu) return;
    engine = await loadEngine();
    const sources = await loadShaderSources();
    sift = new SiftGpu(gpu.device, sources, !gpu.isFallbackAdapter);
    matcher = MatcherGpu.forContext(gpu, sources);
    // An overlapping pair: 271 mutual matches at this size.
    for (const file of ["10265353_3838484249.jpg", "60584745_2207571072.jpg"]) {
      const photo = await loadGrayPhoto("sacre-coeur", file);
      photos.push(photo);
      cpu.push(extractSift(engine, photo.gray, photo.width, photo.height, photoOptions));
    }
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

  it("finds the same keypoints and descriptors on a downscaled real photo (8-bit input)", async () => {
    const photo = photos[0]!;
    const b = await extractSiftGpu(sift, photo.gray, photo.width, photo.height, photoOptions);
    const agreement = compareSift(cpu[0]!, b);
    console.log(photo.name, agreement);
    expect(agreement.countA).toBeGreaterThan(200);
    expect(agreement.matchedA).toBeGreaterThanOrEqual(0.98);
    expect(agreement.matchedB).toBeGreaterThanOrEqual(0.98);
    expect(agreement.meanDescriptorL1).toBeLessThan(2);
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
    const expected = matchDescriptors(engine, a.descriptors, b.descriptors);
    const actual = await matchDescriptorsGpu(matcher, a.descriptors, b.descriptors);
    console.log("matches", a.descriptors.length / 128, "x", b.descriptors.length / 128, "->", expected.length / 2, actual.length / 2);
    expect(actual).toEqual(expected);
    // The other rules on the first 400 descriptors of each (SwiftShader is slow).
    const [sa, sb] = [a.descriptors.subarray(0, 128 * 400), b.descriptors.subarray(0, 128 * 400)];
    for (const options of [{ crossCheck: false }, { maxRatio: 0.95, maxDistance: 1.2 }]) {
      const want = matchDescriptors(engine, sa, sb, options);
      expect(want.length).toBeGreaterThan(0);
      expect(matchAgreement(want, await matchDescriptorsGpu(matcher, sa, sb, options))).toBe(1);
    }
    // WGSL's dot4U8Packed, where the implementation has it, computes the same integers.
    if (!("error" in gpu) && gpu.wgslLanguageFeatures.has("packed_4x8_integer_dot_product")) {
      const packed = new MatcherGpu(gpu.device, await loadShaderSources(), true);
      expect(await matchDescriptorsGpu(packed, sa, sb, { maxRatio: 0.95, maxDistance: 1.2 })).toEqual(
        matchDescriptors(engine, sa, sb, { maxRatio: 0.95, maxDistance: 1.2 }),
      );
    }
  });

  it("handles empty and tiny descriptor sets", async () => {
    const one = new Uint8Array(128).fill(7);
    expect(await matchDescriptorsGpu(matcher, new Uint8Array(0), one)).toEqual(new Uint32Array(0));
    expect(await matchDescriptorsGpu(matcher, one, new Uint8Array(0))).toEqual(new Uint32Array(0));
    expect(await matchDescriptorsGpu(matcher, one, one, { crossCheck: false })).toEqual(
      matchDescriptors(engine, one, one, { crossCheck: false }),
    );
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
  it("agrees with the WASM path for upright L2 features, 4 orientations, a small budget, other octave ranges", async () => {
    if ("error" in gpu) return;
    const engine = await loadEngine();
    const sift = new SiftGpu(gpu.device, await loadShaderSources(), !gpu.isFallbackAdapter);
    const [w, h] = [112, 84];
    const image = syntheticImage(w, h);
    for (const options of [
      { upright: true, normalization: "l2" as const },
      { maxNumOrientations: 4 },
      { maxNumFeatures: 20 },
      { firstOctave: 0, numOctaves: 2 },
      { firstOctave: 1, numOctaves: 2 },
      { numOctaves: 9 },
    ]) {
      const a = extractSift(engine, image, w, h, options);
      const b = await extractSiftGpu(sift, image, w, h, options);
      const agreement = compareSift(a, b);
      expect(agreement.countB, JSON.stringify(options)).toBe(agreement.countA);
      expect(agreement.matchedA, JSON.stringify(options)).toBe(1);
      expect(agreement.maxDescriptorByteDiff).toBeLessThanOrEqual(2);
    }
    await expect(extractSiftGpu(sift, image, w, h, { maxNumOrientations: 0 })).rejects.toThrow(RangeError);
    // Nothing to find: a flat image, and one too small for any octave.
    for (const [data, iw, ih] of [
      [new Float32Array(48 * 32).fill(0.5), 48, 32],
      [new Float32Array(4), 2, 2],
    ] as const) {
      const none = await extractSiftGpu(sift, data, iw, ih);
      expect(none.keypoints.length).toBe(0);
      expect(extractSift(engine, data, iw, ih).keypoints.length).toBe(0);
    }
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
    // Sort keys hold 14-bit rows and columns of the first octave.
    expect(sift.fits(9000, 10, { maxImageSize: 100_000 })).toBe(false);
  });
});

// Degenerate inputs (issue 22): NaN coordinates, a zero focal length, indices past their
// arrays, one image, collinear points. Each binding either refuses the input with an EngineError
// naming the rule it breaks, or (collinear points, one image) answers what COLMAP would (a
// planar pair without pose, no model); either way the same engine instance then computes a valid input
// correctly. Built with WebAssembly exceptions (bindings/guard.h), so nothing aborts the module.
import { beforeAll, describe, expect, it } from "vitest";
import { bundleAdjust } from "./ba";
import { EngineError, type Engine, loadEngine } from "./engine";
import { extractSift, matchDescriptors } from "./feature";
import { IncrementalMapping } from "./mapping";
import { renderCubemapFace } from "./projection";
import { syntheticBundleAdjustment, syntheticMappingInput, syntheticTwoViewPair } from "./testing/synthetic-scenes";
import { randomBlobs, renderTexture } from "./testing/synthetic-texture";
import { verifyTwoView } from "./two-view";

/** The call fails with an EngineError whose message matches `pattern`, and the engine stays usable. */
function refused(engine: Engine, call: () => unknown, pattern: RegExp): void {
  let error: unknown;
  try {
    call();
  } catch (e) {
    error = e;
  }
  expect(error, "the call should have failed").toBeInstanceOf(EngineError);
  expect((error as EngineError).message).toMatch(pattern);
  expect((error as EngineError).trapped).toBe(false);
  expect(engine.usable).toBe(true);
}

describe("degenerate inputs fail clearly and leave the engine working", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
  });

  it("two-view: NaN keypoints, a zero focal length and a match past the keypoints are refused; collinear points give no pose", () => {
    const pair = syntheticTwoViewPair(120);
    const calibrated = { ...pair, camera1: pair.camera, camera2: pair.camera };
    const nan = [...pair.keypoints1];
    nan[7] = Number.NaN;
    refused(engine, () => verifyTwoView(engine, { ...calibrated, keypoints1: nan }), /image 1's keypoints: value 7 is nan/i);
    const zeroFocal = { ...pair.camera, params: [0, 400, 300] };
    refused(
      engine,
      () => verifyTwoView(engine, { ...calibrated, camera2: zeroFocal }),
      /camera 2: focal length 0\S* of SIMPLE_PINHOLE must be positive/,
    );
    refused(
      engine,
      () => verifyTwoView(engine, { ...calibrated, matches: [...pair.matches, [0, 120]] }),
      /matches: pair 120 \(0, 120\) is outside 120 x 120/,
    );
    // Every point on one image line: a homography explains them and no relative pose can be had.
    const line = Array.from({ length: 120 }, (_, i) => [10 + 5 * i, 300]).flat();
    const collinear = verifyTwoView(engine, {
      ...calibrated,
      keypoints1: line,
      keypoints2: line.map((v, i) => (i % 2 ? v : v * 1.01 + 3)),
    });
    expect(collinear.type).toBe("planar_or_panoramic");
    expect(collinear.cam2_from_cam1).toBeNull();
    expect(verifyTwoView(engine, calibrated).type).toBe("calibrated");
  });

  it("mapping: a zero focal length and NaN keypoints are refused; one image or collinear points map no model", () => {
    const input = syntheticMappingInput();
    const options = { seed: 3, init_min_tri_angle: 8, min_model_size: 3 };
    refused(
      engine,
      () => new IncrementalMapping(engine, { ...input, cameras: [{ ...input.cameras[0]!, params: [0, 400, 300, 0] }] }, options),
      /camera 0: focal length 0\S* of SIMPLE_RADIAL must be positive/,
    );
    const images = input.images.map((im, i) =>
      i === 2 ? { ...im, keypoints: im.keypoints.map((v, k) => (k === 3 ? Number.NaN : v)) } : im,
    );
    refused(engine, () => new IncrementalMapping(engine, { ...input, images }, options), /image 2's keypoints: value 3 is nan/i);
    const one = new IncrementalMapping(engine, { ...input, images: input.images.slice(0, 1), pairs: [] }, options);
    expect(one.run()).toEqual([]);
    one.free();
    const flat = input.images.map((im) => ({ ...im, keypoints: im.keypoints.map((v, k) => (k % 2 ? 300 : v)) }));
    const collinear = new IncrementalMapping(engine, { ...input, images: flat }, options);
    expect(collinear.run()).toEqual([]);
    collinear.free();
    const mapping = new IncrementalMapping(engine, input, options);
    expect(mapping.run()[0]!.images).toHaveLength(6);
    mapping.free();
  });

  it("bundle adjustment: NaN points and a zero focal length are refused", () => {
    const { start } = syntheticBundleAdjustment(0.3);
    const points = Float64Array.from(start.points);
    points[4] = Number.NaN;
    refused(engine, () => bundleAdjust(engine, { ...start, points }, { fix_gauge: true }), /points: value 4 is nan/i);
    refused(
      engine,
      () => bundleAdjust(engine, { ...start, cameras: [{ ...start.cameras[0]!, params: [0, 320, 240, 0] }] }, { fix_gauge: true }),
      /focal length 0\S* of SIMPLE_RADIAL must be positive/,
    );
    expect(bundleAdjust(engine, start, { fix_gauge: true }).converged).toBe(true);
  });

  it("SIFT: NaN intensities are refused; matching: non-finite thresholds are refused", () => {
    const [w, h] = [160, 120];
    const image = renderTexture(randomBlobs(w, h, 5), w, h);
    const nan = Float32Array.from(image);
    nan[100] = Number.NaN;
    refused(engine, () => extractSift(engine, nan, w, h), /intensities: value 100 is nan/i);
    const features = extractSift(engine, image, w, h);
    expect(features.descriptors.length).toBeGreaterThan(0);
    refused(engine, () => matchDescriptors(engine, features.descriptors, features.descriptors, { maxRatio: Number.NaN }), /must be finite/);
    expect(matchDescriptors(engine, features.descriptors, features.descriptors).length).toBeGreaterThan(0);
  });

  it("projection: a cubemap face outside 0..5 is refused", () => {
    const pano = { width: 64, height: 32, data: new Uint32Array(64 * 32).fill(0xff336699) };
    refused(engine, () => renderCubemapFace(engine, pano, "sideways" as never, 16, "nearest"), /cubemap face -1 is not 0..5/);
    expect(renderCubemapFace(engine, pano, "front", 16, "nearest").data[0]).toBe(0xff336699);
  });
});

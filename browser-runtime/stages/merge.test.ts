import { describe, expect, it } from "vitest";
import type { Sim3 } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { splitScene } from "../../test/support/synthetic-model";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { type MergeInput, correspondences, estimateTargetFromSource, joinSubModels, mergeModels, refineMerged } from "./merge";
import { applySim3, centreOf, invertSim3, transformPose } from "./sim3";

const S: Sim3 = {
  rotation: { w: Math.cos(0.6), x: Math.sin(0.6) * 0.48, y: Math.sin(0.6) * 0.6, z: Math.sin(0.6) * 0.64 },
  translation: [40, -7.5, 3],
  scale: 0.3,
};
const IDENTITY: Sim3 = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0], scale: 1 };
const moveBy = (s: Sim3) => ({
  pose: (p: Parameters<typeof transformPose>[0]) => transformPose(p, s),
  point: (x: [number, number, number]) => applySim3(s, x),
});

/** Two overlapping halves of one scene: the target (images 0-3) in the scene's frame, the source (2-5) in the frame S^-1 of it. */
function halves() {
  const whole = splitScene(6, 60);
  const shaOf = new Map(Array.from({ length: 6 }, (_, i) => [`img${i}.jpg`, `sha${i}`]));
  const input = (h: ReturnType<typeof whole.half>): MergeInput => ({
    model: { cameras: h.cameras, images: h.images, points: decodePoints(h.points) },
    shaOf,
  });
  return {
    whole,
    target: input(whole.half([0, 1, 2, 3], 10, moveBy(IDENTITY))),
    source: input(whole.half([2, 3, 4, 5], 5000, moveBy(invertSim3(S)))),
  };
}

describe("merging models (4.9)", () => {
  it("finds the shared images (same bytes) and the points both triangulated from one keypoint of them", () => {
    const { target, source } = halves();
    const c = correspondences(target, source);
    expect(c.images.map(([t, s]) => [t.name, s.name])).toEqual([
      ["img2.jpg", "img2.jpg"],
      ["img3.jpg", "img3.jpg"],
    ]);
    expect(c.points.size).toBe(60);
    expect(c.points.get(5000)).toBe(10);
  });

  it("estimates target_from_source from shared centres and points, and the merge equals the whole model", () => {
    const { whole, target, source } = halves();
    const fit = estimateTargetFromSource(target, source);
    expect(fit).toMatchObject({ shared_images: 2, shared_points: 60 });
    expect(fit.inliers.every(Boolean)).toBe(true);
    expect(fit.sim3.scale).toBeCloseTo(S.scale, 6);
    const merged = mergeModels(target, [{ input: source, sim3: fit.sim3 }]);
    expect(merged).toMatchObject({ added_images: 2, fused_points: 60 });
    expect(merged.images.images.map((im) => im.name)).toEqual(["img0.jpg", "img1.jpg", "img2.jpg", "img3.jpg", "img4.jpg", "img5.jpg"]);
    expect(merged.images.images.map((im) => im.image_id)).toEqual([1, 2, 3, 4, 5, 6]);
    // Every camera where the whole model has it (float32 points in the source limit the estimate).
    merged.images.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-5);
    });
    // One point per scene point, at its place, seen by all six images.
    expect([...merged.points.ids].map(Number)).toEqual(Array.from({ length: 60 }, (_, k) => 10 + k));
    whole.xyz.flat().forEach((v, i) => expect(Math.abs(merged.points.xyz[i]! - v)).toBeLessThan(1e-5));
    expect([...merged.points.trackLength]).toEqual(new Array(60).fill(6));
    expect(merged.images.images[5]!.points2D.every((kp, k) => kp.point3d_id === 10 + k)).toBe(true);
    expect(merged.mean_reproj_err).toBeLessThan(1e-3);
  });

  it("with a given aligner: an identity leaves the source where it is; the right Sim3 gives the whole model", () => {
    const { whole, target, source } = halves();
    const right = mergeModels(target, [{ input: source, sim3: S }]);
    right.images.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-5);
    });
    const unmoved = mergeModels(target, [{ input: source, sim3: IDENTITY }]);
    const img5 = unmoved.images.images.find((im) => im.name === "img5.jpg")!;
    expect(img5.cam_from_world).toEqual(source.model.images.images.find((im) => im.name === "img5.jpg")!.cam_from_world);
    expect(unmoved.images.images.slice(0, 4).map((im) => im.cam_from_world)).toEqual(
      target.model.images.images.map((im) => im.cam_from_world),
    );
    // Fused across two frames: the reprojection error shows it.
    expect(unmoved.mean_reproj_err).toBeGreaterThan(1);
  });

  it("a source sharing no image cannot be aligned", () => {
    const { target, source } = halves();
    const stranger: MergeInput = { ...source, shaOf: new Map() };
    expect(() => estimateTargetFromSource(target, stranger)).toThrow(/shares no image/);
    // Merged with an aligner, it is added whole: no point fused.
    expect(mergeModels(target, [{ input: stranger, sim3: S }])).toMatchObject({ added_images: 4, fused_points: 0 });
  });
});

describe("bundle adjustment of the merged model", () => {
  it("a slightly wrong aligner leaves fused tracks inconsistent; the adjustment brings them back to the whole model", async () => {
    const { whole, target, source } = halves();
    // 1% off in scale and a little translation: fused points land between two places.
    const off: Sim3 = { ...S, scale: S.scale * 1.01, translation: [S.translation[0] + 0.02, S.translation[1], S.translation[2]] };
    const joined = mergeModels(target, [{ input: source, sim3: off }]);
    expect(joined.mean_reproj_err).toBeGreaterThan(1);
    const refined = refineMerged(await loadEngine(), joined);
    expect(refined.mean_reproj_err).toBeLessThan(0.01);
    expect(refined.ba.final_cost).toBeLessThan(refined.ba.initial_cost);
    // The gauge is the first image's pose and the second's distance: the whole model's, so every camera comes back.
    refined.images.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-3);
    });
  });
});

describe("joining the models of one mapping run (issue 23)", () => {
  it("joins the models that share at least three aligned photos, in the first one's frame; others stay apart", async () => {
    const whole = splitScene(9, 60);
    const model = (h: ReturnType<typeof whole.half>) => ({ cameras: h.cameras, images: h.images, points: decodePoints(h.points) });
    const first = model(whole.half([0, 1, 2, 3, 4], 10, moveBy(IDENTITY)));
    const second = model(whole.half([2, 3, 4, 5, 6], 5000, moveBy(invertSim3(S))));
    // Two shared photos: too few to vouch for a Sim3 of their own.
    const third = model(whole.half([7, 8], 9000, moveBy(S)));
    const twoShared = model(whole.half([5, 6], 7000, moveBy(S)));
    const result = joinSubModels(await loadEngine(), [first, second, third]);
    expect(result?.joined).toEqual([0, 1]);
    const merged = result!.merged;
    expect(merged.images.images.map((im) => im.name)).toEqual([
      "img0.jpg",
      "img1.jpg",
      "img2.jpg",
      "img3.jpg",
      "img4.jpg",
      "img5.jpg",
      "img6.jpg",
    ]);
    // The second model's own ids 4 and 5 are taken by the first's images: new ones; no id twice.
    expect(new Set(merged.images.images.map((im) => im.image_id)).size).toBe(7);
    merged.images.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-3);
    });
    expect(merged.mean_reproj_err).toBeLessThan(0.01);
    expect(joinSubModels(await loadEngine(), [second, twoShared])).toBeNull();
    expect(joinSubModels(await loadEngine(), [first])).toBeNull();
  });
});

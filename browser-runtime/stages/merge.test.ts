import { describe, expect, it } from "vitest";
import type { Sim3 } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { DescriptorKind } from "../../protocol/wire/features";
import { splitScene } from "../../test/support/synthetic-model";
import { loadEngine } from "../../engine-wasm/ts/engine";
import {
  type MergeInput,
  correspondences,
  estimateTargetFromSource,
  hasBogusParams,
  joinModelGroups,
  joinSubModels,
  mergeModels,
  refineMerged,
} from "./merge";
import { partitionViewGraph } from "./partition";
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

/**
 * Two overlapping halves of one scene: the target (images 0-3) in the scene's frame, the source (2-5) in the frame S^-1 of it.
 * Their cameras are SIMPLE_PINHOLE (the scene's PINHOLE with fx = fy): the cameras all turn about one axis, so a free fy
 * would trade against the scene's extent along that axis when the adjustment refines focal lengths.
 */
function halves() {
  const whole = splitScene(6, 60);
  const shaOf = new Map(Array.from({ length: 6 }, (_, i) => [`img${i}.jpg`, `sha${i}`]));
  const input = (h: ReturnType<typeof whole.half>): MergeInput => ({
    model: {
      cameras: {
        cameras: h.cameras.cameras.map((c) => ({ ...c, model: "SIMPLE_PINHOLE", params: [c.params[0]!, c.params[2]!, c.params[3]!] })),
      },
      images: h.images,
      points: decodePoints(h.points),
    },
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

  it("joins the models' point descriptors: a fused point's is their mean weighted by track length; none unless every model has them", () => {
    const { target, source } = halves();
    const described = (m: MergeInput, value: number, trackLength: number): MergeInput => {
      const ids = [...m.model.points.ids].map(Number);
      return {
        ...m,
        model: { ...m.model, points: { ...m.model.points, trackLength: new Uint16Array(ids.length).fill(trackLength) } },
        descriptors: {
          ids,
          descriptorDim: 128,
          descriptorKind: DescriptorKind.siftL1Root,
          descriptors: new Uint8Array(128 * ids.length).fill(value),
          numImages: m.model.images.images.length,
          numImagesSkipped: 0,
        },
      };
    };
    // Every point is fused (each model sees all 60): (10 * 1 + 40 * 3) / 4.
    const merged = mergeModels(described(target, 10, 1), [{ input: described(source, 40, 3), sim3: S }]);
    expect(merged.descriptors).toMatchObject({
      ids: Array.from({ length: 60 }, (_, k) => 10 + k),
      descriptorDim: 128,
      descriptorKind: DescriptorKind.siftL1Root,
      numImages: 8,
    });
    expect(merged.descriptors!.descriptors.every((v) => v === 33)).toBe(true);
    // A source point with no counterpart keeps its own descriptor under its new id.
    const lone = described(source, 40, 3);
    lone.model.images.images[0]!.points2D[0]!.point3d_id = null;
    lone.model.images.images[1]!.points2D[0]!.point3d_id = null;
    const partly = mergeModels(described(target, 10, 1), [{ input: lone, sim3: S }]);
    const last = partly.descriptors!.ids.length - 1;
    expect(partly.descriptors!.ids[last]).toBe(70);
    expect(partly.descriptors!.descriptors.subarray(128 * last).every((v) => v === 40)).toBe(true);
    expect(mergeModels(described(target, 10, 1), [{ input: source, sim3: S }]).descriptors).toBeNull();
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
  it("refines each camera's focal length: a source whose own photos gave it a focal 3% long comes back to the whole model", async () => {
    const { whole, target, source } = halves();
    const long = source.model.cameras.cameras.map((c) => ({ ...c, params: [515, c.params[1]!, c.params[2]!] }));
    const joined = mergeModels(target, [{ input: { ...source, model: { ...source.model, cameras: { cameras: long } } }, sim3: S }]);
    // The added images (4, 5) keep the source's camera, under a new id.
    expect(joined.cameras.cameras.map((c) => [c.camera_id, c.params[0]])).toEqual([
      [1, 500],
      [2, 515],
    ]);
    const refined = refineMerged(await loadEngine(), joined);
    expect(refined.ba.held_cameras).toEqual([]);
    for (const c of refined.cameras.cameras) expect(Math.abs(c.params[0]! - 500)).toBeLessThan(0.01);
    expect(refined.mean_reproj_err).toBeLessThan(0.01);
    refined.images.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-3);
    });
  });

  it("with keepIds (one dataset) a source's camera of an id the target has is that camera: one camera, refined from both", async () => {
    const { whole, target, source } = halves();
    const long = source.model.cameras.cameras.map((c) => ({ ...c, params: [515, c.params[1]!, c.params[2]!] }));
    const joined = mergeModels(target, [{ input: { ...source, model: { ...source.model, cameras: { cameras: long } } }, sim3: S }], true);
    expect(joined.cameras.cameras.map((c) => [c.camera_id, c.params[0]])).toEqual([[1, 500]]);
    expect(new Set(joined.images.images.map((im) => im.camera_id))).toEqual(new Set([1]));
    const refined = refineMerged(await loadEngine(), joined);
    expect(Math.abs(refined.cameras.cameras[0]!.params[0]! - 500)).toBeLessThan(0.01);
    refined.images.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-3);
    });
  });

  it("holds a camera the adjustment leaves out of COLMAP's bounds at its merged values, and adjusts again", async () => {
    const { target, source } = halves();
    // A principal point off the image (the adjustment does not move it): bogus whatever the focal becomes.
    const off = source.model.cameras.cameras.map((c) => ({ ...c, params: [500, -40, 240] }));
    const joined = mergeModels(target, [{ input: { ...source, model: { ...source.model, cameras: { cameras: off } } }, sim3: S }]);
    const refined = refineMerged(await loadEngine(), joined);
    expect(refined.ba.held_cameras).toEqual([2]);
    expect(refined.cameras.cameras[1]!.params).toEqual([500, -40, 240]);
  });
});

describe("COLMAP's bounds on a camera's intrinsics (Camera::HasBogusParams: focal 0.1-10 times the larger side, principal point in the image, |extra| <= 1)", () => {
  const camera = (params: number[]) => ({
    camera_id: 1,
    model: "SIMPLE_RADIAL",
    width: 640,
    height: 480,
    params,
    has_prior_focal_length: false,
  });
  it.each([
    [[500, 320, 240, 0.1], false],
    [[63, 320, 240, 0], true],
    [[6500, 320, 240, 0], true],
    [[500, 641, 240, 0], true],
    [[500, 320, -1, 0], true],
    [[500, 320, 240, -1.2], true],
    [[Number.NaN, 320, 240, 0], true],
  ])("%j: %s", (params, bogus) => expect(hasBogusParams(camera(params))).toBe(bogus));
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

describe("joining the models of places that do not connect", () => {
  it("gives one joined model per place, the largest place's first, not one joined model and the rest in pieces", async () => {
    const model = (h: ReturnType<ReturnType<typeof splitScene>["half"]>, prefix: string) => ({
      cameras: h.cameras,
      images: { images: h.images.images.map((im) => ({ ...im, name: `${prefix}${im.name}` })) },
      points: decodePoints(h.points),
    });
    const [a, b] = [splitScene(9, 60), splitScene(7, 60)];
    // Largest first: a place of 9 photos in two overlapping models, one of 7 in two, each model in a frame of its own.
    const models = [
      model(a.half([0, 1, 2, 3, 4, 5], 10, moveBy(IDENTITY)), "a"),
      model(b.half([0, 1, 2, 3, 4], 2000, moveBy(S)), "b"),
      model(a.half([3, 4, 5, 6, 7, 8], 4000, moveBy(invertSim3(S))), "a"),
      model(b.half([2, 3, 4, 5, 6], 6000, moveBy(IDENTITY)), "b"),
    ];
    const groups = joinModelGroups(await loadEngine(), models);
    expect(groups.map((g) => g.members)).toEqual([
      [0, 2],
      [1, 3],
    ]);
    expect(groups.map((g) => g.model.images.images.map((im) => im.name[0]))).toEqual([Array(9).fill("a"), Array(7).fill("b")]);
    for (const g of groups) expect(g.model.mean_reproj_err).toBeLessThan(0.01);
    // A model joining nothing stays as it was.
    expect(joinModelGroups(await loadEngine(), [models[0]!, models[1]!]).map((g) => [g.members, g.model])).toEqual([
      [[0], models[0]],
      [[1], models[1]],
    ]);
  });
});

describe("joining the clusters of a hierarchical mapping (2.12 hierarchical)", () => {
  it("a view graph cut into overlapping clusters, each mapped in a frame of its own, is joined back into the whole model", async () => {
    const whole = splitScene(14, 60);
    // Photos of a walk: each matches the three after it, fewer inliers the farther apart.
    const edges = Array.from({ length: 14 }, (_, i) =>
      [1, 2, 3].filter((d) => i + d < 14).map((d) => ({ image1: i, image2: i + d, weight: Math.round(600 / d) })),
    ).flat();
    const clusters = partitionViewGraph(edges, { maxSize: 5, overlap: 3 });
    expect(clusters.length).toBeGreaterThanOrEqual(3);
    const frames = [IDENTITY, invertSim3(S), S, { ...S, scale: 2.5, translation: [-3, 1, 9] as [number, number, number] }];
    const models = clusters.map((c, k) => {
      const h = whole.half(c.images, 1000 * (k + 1), moveBy(frames[k % frames.length]!));
      // Image ids are the dataset's, as the cluster shards write them.
      return {
        cameras: h.cameras,
        images: { images: h.images.images.map((im, j) => ({ ...im, image_id: c.images[j]! + 1 })) },
        points: decodePoints(h.points),
      };
    });
    const result = joinSubModels(await loadEngine(), models);
    expect(result?.joined.sort()).toEqual(clusters.map((_, k) => k));
    const merged = result!.merged;
    expect(merged.images.images).toHaveLength(14);
    expect(new Set(merged.images.images.map((im) => im.image_id)).size).toBe(14);
    // Every cluster estimated the dataset's one camera (id 1): the joined model has it once.
    expect(merged.cameras.cameras.map((c) => c.camera_id)).toEqual([1]);
    // In the first cluster's frame, which is the scene's: every camera where the whole model has it.
    for (const im of merged.images.images) {
      const i = Number(im.name.slice(3, -4));
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-3);
    }
    expect(merged.mean_reproj_err).toBeLessThan(0.01);
  });
});

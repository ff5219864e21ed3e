import { describe, expect, it } from "vitest";
import { type Quat, type Vec3, projectionCenter, rotate, rotationAngleDeg } from "../../engine-wasm/ts/accuracy";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { matchDescriptors } from "../../engine-wasm/ts/feature";
import type { ImagesFile } from "../../protocol";
import { DescriptorKind, type LocalFeatures } from "../../protocol/wire/features";
import { initialCamera } from "./cameras";
import { indexFromDescriptors, localize, pointDescriptorsOf, pointIndex } from "./localize";
import { decodePointDescriptors, encodePointDescriptors } from "../../protocol/wire/point-descriptors";

/**
 * A synthetic model with known descriptors: 300 points, each with its own random SIFT-like
 * descriptor; two mapped images observe them (their keypoints' descriptors the point's plus
 * noise, so the mean is the point's); a query camera at a known pose sees them with noisy
 * descriptors, plus 200 distractor keypoints.
 */
function model(seed = 9) {
  let s = seed;
  const random = () => (s = (s * 16807) % 2147483647) / 2147483647;
  // Sparse, as SIFT's are: a quarter of the bins set, so random descriptors are far apart.
  const descriptor = () => Uint8Array.from({ length: 128 }, () => (random() < 0.25 ? 40 + Math.floor(random() * 120) : 0));
  const noisy = (d: Uint8Array) => Uint8Array.from(d, (v) => Math.max(0, Math.min(255, v + Math.round((random() - 0.5) * 8))));
  const n = 300;
  const xyz = new Float32Array(3 * n);
  for (let i = 0; i < n; i++) xyz.set([random() * 6 - 3, random() * 4 - 2, 8 + random() * 4], 3 * i);
  const ids = BigUint64Array.from({ length: n }, (_, i) => BigInt(100 + 2 * i));
  const pointDescriptors = Array.from({ length: n }, descriptor);
  const mapped = ["a.jpg", "b.jpg"].map((name) => {
    // Every image observes every point (positions do not matter to the index), and one keypoint in no track.
    const descriptors = new Uint8Array(128 * (n + 1));
    pointDescriptors.forEach((d, i) => descriptors.set(noisy(d), 128 * i));
    descriptors.set(descriptor(), 128 * n);
    const features: LocalFeatures = {
      imageWidth: 1000,
      imageHeight: 750,
      descriptorDim: 128,
      descriptorKind: DescriptorKind.siftL1Root,
      keypoints: new Float32Array(4 * (n + 1)),
      descriptors,
    };
    const points2D = [
      ...Array.from({ length: n }, (_, i) => ({ xy: [0, 0] as [number, number], point3d_id: Number(ids[i]) })),
      { xy: [0, 0] as [number, number], point3d_id: null },
    ];
    return { name, features, points2D };
  });
  const images: ImagesFile = {
    images: mapped.map((m, k) => ({
      image_id: k + 1,
      name: m.name,
      camera_id: 1,
      cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [k, 0, 0] },
      points2D: m.points2D,
    })),
  };
  // The query: f = 800 (what EXIF 35 mm = 28 gives for 1000 px), rotated about y and moved.
  const q: Quat = [Math.cos(0.1), 0, Math.sin(0.1), 0];
  const t: Vec3 = [0.3, 0.1, -0.5];
  const kp: number[] = [];
  const desc: number[] = [];
  for (let i = 0; i < n; i++) {
    const c = rotate(q, [xyz[3 * i]!, xyz[3 * i + 1]!, xyz[3 * i + 2]!]);
    const [x, y, z] = [c[0] + t[0], c[1] + t[1], c[2] + t[2]];
    const [u, v] = [(800 * x) / z + 500, (800 * y) / z + 375];
    if (u < 0 || v < 0 || u >= 1000 || v >= 750) continue;
    kp.push(u + (random() - 0.5), v + (random() - 0.5), 2, 0);
    desc.push(...noisy(pointDescriptors[i]!));
  }
  for (let d = 0; d < 200; d++) {
    kp.push(random() * 1000, random() * 750, 2, 0);
    desc.push(...descriptor());
  }
  return {
    images,
    points: { xyz, ids },
    features: new Map(mapped.map((m) => [m.name, m.features])),
    query: { keypoints: Float32Array.from(kp), descriptors: Uint8Array.from(desc) },
    q,
    t,
  };
}

const quat = (r: { w: number; x: number; y: number; z: number }): Quat => [r.w, r.x, r.y, r.z];

describe("localize stage", () => {
  it("describes each observed point by the mean of its keypoints' descriptors; images whose keypoints differ are skipped", async () => {
    const m = model();
    const index = await pointIndex(m.images, m.points, async (name) => m.features.get(name) ?? null);
    expect(index.ids).toHaveLength(300);
    expect(index.numImages).toBe(2);
    const first = m.features.get("a.jpg")!.descriptors.subarray(0, 128);
    const second = m.features.get("b.jpg")!.descriptors.subarray(0, 128);
    expect(Array.from(index.descriptors.subarray(0, 128))).toEqual(Array.from(first, (v, j) => Math.round((v + second[j]!) / 2)));
    expect(Array.from(index.xyz.subarray(0, 3))).toEqual(Array.from(m.points.xyz.subarray(0, 3)));
    const short = { ...m.features.get("b.jpg")!, keypoints: new Float32Array(8) };
    const partial = await pointIndex(m.images, m.points, async (name) => (name === "b.jpg" ? short : (m.features.get(name) ?? null)));
    expect(partial.skippedImages).toEqual(["b.jpg"]);
    expect(partial.numImages).toBe(1);
  });

  it("keeps the index as the snapshot's x-point_descriptors.bin: read back with points.bin, it is the same index", async () => {
    const m = model();
    const index = await pointIndex(m.images, m.points, async (name) => (name === "b.jpg" ? null : (m.features.get(name) ?? null)));
    const sealed = decodePointDescriptors(encodePointDescriptors(pointDescriptorsOf(index)));
    const back = indexFromDescriptors(sealed, m.points);
    expect(back).toEqual({ ...index, skippedImages: [] });
    expect(back.numSkippedImages).toBe(1);
    const missing = { ...sealed, ids: sealed.ids.map((id) => id + 100_000) };
    expect(() => indexFromDescriptors(missing, m.points)).toThrow(/points.bin lacks/);
  });

  it("localizes a query of a known pose: with an EXIF focal length, and scanning for it without one", async () => {
    const engine = await loadEngine();
    const m = model();
    const index = await pointIndex(m.images, m.points, async (name) => m.features.get(name) ?? null);
    for (const focal35 of [28, null]) {
      const camera = initialCamera("SIMPLE_RADIAL", 1000, 750, focal35);
      const result = await localize(engine, {
        query: m.query,
        camera,
        index,
        match: async (a, b, o) => matchDescriptors(engine, a, b, o),
        queryPath: "blobs/q",
        sparseDir: "/v1/reconstructions/r/snapshots/1",
      });
      expect(result.success, String(result.diagnostics.reason)).toBe(true);
      expect(rotationAngleDeg(quat(result.cam_from_world.rotation), m.q)).toBeLessThan(0.2);
      const c = projectionCenter({ qvec: quat(result.cam_from_world.rotation), tvec: result.cam_from_world.translation });
      const truth = projectionCenter({ qvec: m.q, tvec: m.t });
      expect(Math.hypot(c[0] - truth[0], c[1] - truth[1], c[2] - truth[2])).toBeLessThan(0.05);
      expect(result.num_inliers).toBeGreaterThan(200);
      expect(result.inlier_matches).toHaveLength(result.num_inliers);
      // Each inlier names a query keypoint and the point3d_id it sees (query keypoint k observes point 100 + 2 k here).
      for (const [, id] of result.inlier_matches.slice(0, 20)) expect(id).toBeGreaterThanOrEqual(100);
      expect(result.diagnostics).toMatchObject({
        query_path: "blobs/q",
        sparse_dir: "/v1/reconstructions/r/snapshots/1",
        num_points3D: 300,
        num_keypoints: m.query.keypoints.length / 4,
      });
      expect(Math.abs((result.diagnostics.camera as { params: number[] }).params[0]! / 800 - 1)).toBeLessThan(0.02);
    }
  });

  it("fails with the reason when the query matches nothing", async () => {
    const engine = await loadEngine();
    const m = model();
    const index = await pointIndex(m.images, m.points, async (name) => m.features.get(name) ?? null);
    const other = model(77);
    const result = await localize(engine, {
      query: other.query,
      camera: initialCamera("SIMPLE_RADIAL", 1000, 750, 28),
      index,
      match: async (a, b, o) => matchDescriptors(engine, a, b, o),
      queryPath: "blobs/q",
      sparseDir: "s",
    });
    expect(result).toMatchObject({
      success: false,
      num_inliers: 0,
      inlier_matches: [],
      cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] },
    });
    expect(result.diagnostics.reason).toMatch(/descriptor matches|no pose/);
    const empty = await localize(engine, {
      query: { keypoints: new Float32Array(0), descriptors: new Uint8Array(0) },
      camera: initialCamera("SIMPLE_RADIAL", 1000, 750, 28),
      index,
      match: async () => new Uint32Array(0),
      queryPath: "q",
      sparseDir: "s",
    });
    expect(empty.diagnostics.reason).toMatch(/no SIFT keypoint/);
  });
});

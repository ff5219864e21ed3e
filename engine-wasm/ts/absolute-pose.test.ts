import { describe, expect, it } from "vitest";
import { estimateAbsolutePose } from "./absolute-pose";
import { type Quat, type Vec3, projectionCenter, rotate, rotationAngleDeg } from "./accuracy";
import { EngineError, loadEngine } from "./engine";

/**
 * A camera (SIMPLE_RADIAL, f = 900, k = -0.03, 1000 x 750) at a known pose looking at 200
 * points spread 4-9 units ahead, keypoints with Gaussian-ish noise of `noise` px; `outliers`
 * correspondences get a random 3D point instead.
 */
function scene(count: number, noise: number, outliers: number, seed = 5) {
  let s = seed;
  const random = () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const q: Quat = [Math.cos(0.2), Math.sin(0.2) * 0.6, Math.sin(0.2) * 0.8, 0];
  const t: Vec3 = [0.4, -0.3, 1.2];
  const [width, height, f, k] = [1000, 750, 900, -0.03];
  const points2D: number[] = [];
  const points3D: number[] = [];
  while (points2D.length / 2 < count) {
    const inCam: Vec3 = [random() * 3, random() * 2, 6.5 + 2.5 * random()];
    // world = R^T (cam - t)
    const world = rotate([q[0], -q[1], -q[2], -q[3]], [inCam[0] - t[0], inCam[1] - t[1], inCam[2] - t[2]]);
    const [u, v] = [inCam[0] / inCam[2], inCam[1] / inCam[2]];
    const r = 1 + k * (u * u + v * v);
    const [x, y] = [f * u * r + width / 2 + noise * (random() + random()), f * v * r + height / 2 + noise * (random() + random())];
    if (x < 0 || y < 0 || x >= width || y >= height) continue;
    points2D.push(x, y);
    points3D.push(...world);
  }
  for (let i = 0; i < outliers; i++) {
    const j = Math.floor(((random() + 1) / 2) * count);
    points3D.splice(3 * j, 3, random() * 5, random() * 5, 5 + random() * 5);
  }
  return { points2D, points3D, q, t, width, height, f, k };
}

const centreError = (
  a: { q: Quat; t: Vec3 },
  pose: { rotation: { w: number; x: number; y: number; z: number }; translation: number[] },
) => {
  const ours = projectionCenter({
    qvec: [pose.rotation.w, pose.rotation.x, pose.rotation.y, pose.rotation.z],
    tvec: pose.translation as Vec3,
  });
  const truth = projectionCenter({ qvec: a.q, tvec: a.t });
  return Math.hypot(ours[0] - truth[0], ours[1] - truth[1], ours[2] - truth[2]);
};
const quat = (r: { w: number; x: number; y: number; z: number }): Quat => [r.w, r.x, r.y, r.z];

describe("estimateAbsolutePose binding", () => {
  it("recovers a known pose with a known camera despite 30% outliers", async () => {
    const engine = await loadEngine();
    const sc = scene(200, 0.5, 60);
    const result = estimateAbsolutePose(engine, {
      points2D: sc.points2D,
      points3D: sc.points3D,
      camera: {
        model: "SIMPLE_RADIAL",
        width: sc.width,
        height: sc.height,
        params: [sc.f, sc.width / 2, sc.height / 2, sc.k],
        hasPriorFocalLength: true,
      },
      options: { refineFocalLength: false, refineExtraParams: false },
    });
    expect(result.success).toBe(true);
    expect(result.num_inliers).toBeGreaterThanOrEqual(135);
    expect(result.num_inliers).toBeLessThanOrEqual(150);
    expect(rotationAngleDeg(quat(result.cam_from_world.rotation), sc.q)).toBeLessThan(0.05);
    expect(centreError(sc, result.cam_from_world)).toBeLessThan(0.01);
    expect(result.mean_reproj_error).toBeLessThan(1.5);
    expect(result.params).toEqual([sc.f, sc.width / 2, sc.height / 2, sc.k]);
  });

  it("finds the focal length of a camera without a prior (COLMAP's 1.2 max(w, h) guess) and refines it", async () => {
    const engine = await loadEngine();
    const sc = scene(200, 0.5, 40);
    const guess = 1.2 * Math.max(sc.width, sc.height);
    const result = estimateAbsolutePose(engine, {
      points2D: sc.points2D,
      points3D: sc.points3D,
      camera: {
        model: "SIMPLE_RADIAL",
        width: sc.width,
        height: sc.height,
        params: [guess, sc.width / 2, sc.height / 2, 0],
        hasPriorFocalLength: false,
      },
    });
    expect(result.success).toBe(true);
    expect(Math.abs(result.params[0]! / sc.f - 1)).toBeLessThan(0.01);
    expect(Math.abs(result.params[3]! - sc.k)).toBeLessThan(0.01);
    expect(rotationAngleDeg(quat(result.cam_from_world.rotation), sc.q)).toBeLessThan(0.1);
    expect(centreError(sc, result.cam_from_world)).toBeLessThan(0.02);
    // The inlier mask marks the correspondences the pose reprojects.
    expect(result.inlier_mask.reduce((a, b) => a + b, 0)).toBe(result.num_inliers);
  });

  it("answers no pose for too few correspondences or only outliers, and refuses non-finite input", async () => {
    const engine = await loadEngine();
    const camera = { model: "SIMPLE_PINHOLE" as const, width: 1000, height: 750, params: [900, 500, 375], hasPriorFocalLength: true };
    const few = scene(8, 0, 0);
    expect(estimateAbsolutePose(engine, { points2D: few.points2D, points3D: few.points3D, camera }).success).toBe(false);
    const noise = scene(100, 0, 0);
    let s = 11;
    const shuffled = noise.points3D.map(() => ((s = (s * 16807) % 2147483647) / 2147483647) * 10);
    const none = estimateAbsolutePose(engine, { points2D: noise.points2D, points3D: shuffled, camera });
    expect(none.success).toBe(false);
    const bad = scene(50, 0, 0);
    bad.points3D[7] = NaN;
    expect(() => estimateAbsolutePose(engine, { points2D: bad.points2D, points3D: bad.points3D, camera })).toThrow(EngineError);
    // The instance keeps working.
    expect(estimateAbsolutePose(engine, { points2D: noise.points2D, points3D: noise.points3D, camera }).success).toBe(true);
  });
});

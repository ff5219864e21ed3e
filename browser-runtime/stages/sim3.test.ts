import { describe, expect, it } from "vitest";
import type { Sim3 } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { enc, scene } from "../../test/support/synthetic-model";
import { type Vec3, rotate } from "../../engine-wasm/ts/accuracy";
import { ecefOf, enuOf } from "./enu";
import {
  type AlignmentPair,
  AlignmentError,
  applySim3,
  centreOf,
  composeSim3,
  estimateAlignment,
  invertSim3,
  transformFile,
  transformPose,
} from "./sim3";

const dec = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b));

/** A unit quaternion of `angle` radians about `axis`. */
function axisAngle(axis: Vec3, angle: number): Sim3["rotation"] {
  const n = Math.hypot(...axis);
  const s = Math.sin(angle / 2) / n;
  return { w: Math.cos(angle / 2), x: axis[0] * s, y: axis[1] * s, z: axis[2] * s };
}

const S: Sim3 = { rotation: axisAngle([0.3, -1, 0.5], 0.9), translation: [12.5, -4, 100], scale: 3.7 };

/** Every projection of a point into a camera, as pixel-free normalised coordinates. */
function normalisedProjection(pose: { rotation: Sim3["rotation"]; translation: Vec3 }, x: Vec3): [number, number] {
  const r = rotate([pose.rotation.w, pose.rotation.x, pose.rotation.y, pose.rotation.z], x);
  const c = [r[0] + pose.translation[0], r[1] + pose.translation[1], r[2] + pose.translation[2]];
  return [c[0]! / c[2]!, c[1]! / c[2]!];
}

describe("a Sim3 applied to a model (2.13: new_from_old x = s R x + t)", () => {
  it("moves each camera centre to s R c + t and keeps every projection", () => {
    const model = scene(20, 3);
    for (const im of model.images.images) {
      const moved = transformPose(im.cam_from_world, S);
      const c = applySim3(S, centreOf(im.cam_from_world));
      const got = centreOf(moved);
      for (let k = 0; k < 3; k++) expect(got[k]).toBeCloseTo(c[k]!, 9);
      for (let i = 0; i < 20; i++) {
        const x: Vec3 = [model.xyz[3 * i]!, model.xyz[3 * i + 1]!, model.xyz[3 * i + 2]!];
        const before = normalisedProjection(im.cam_from_world, x);
        const after = normalisedProjection(moved, applySim3(S, x));
        expect(after[0]).toBeCloseTo(before[0], 10);
        expect(after[1]).toBeCloseTo(before[1], 10);
      }
    }
  });

  it("then its inverse gives the images back to 1e-9 and the points to float precision", () => {
    const model = scene(50, 5);
    const images = enc(model.images);
    const there = transformFile("images.json", images, S)!;
    const back = dec(transformFile("images.json", there, invertSim3(S))!);
    model.images.images.forEach((im, i) => {
      const b = back.images[i];
      expect(b.points2D).toEqual(im.points2D);
      // q and -q are one rotation: compare up to sign.
      const q = im.cam_from_world.rotation;
      const sign = Math.sign(
        b.cam_from_world.rotation.w * q.w +
          b.cam_from_world.rotation.x * q.x +
          b.cam_from_world.rotation.y * q.y +
          b.cam_from_world.rotation.z * q.z,
      );
      for (const k of ["w", "x", "y", "z"] as const) expect(Math.abs(sign * b.cam_from_world.rotation[k] - q[k])).toBeLessThan(1e-9);
      for (let k = 0; k < 3; k++) expect(Math.abs(b.cam_from_world.translation[k] - im.cam_from_world.translation[k]!)).toBeLessThan(1e-9);
    });
    const moved = decodePoints(transformFile("points.bin", model.points, S)!);
    const returned = decodePoints(transformFile("points.bin", transformFile("points.bin", model.points, S)!, invertSim3(S))!);
    expect(returned.ids).toEqual(model.ids);
    for (let i = 0; i < model.xyz.length; i++) {
      // One float32 rounding in each direction, magnified by the scale's round trip.
      expect(Math.abs(returned.xyz[i]! - model.xyz[i]!)).toBeLessThan(1e-6 * (1 + Math.abs(model.xyz[i]!)) * S.scale);
    }
    // The header's bbox is the moved points' own.
    for (let k = 0; k < 3; k++) {
      let lo = Infinity;
      for (let i = k; i < moved.xyz.length; i += 3) lo = Math.min(lo, moved.xyz[i]!);
      expect(moved.bboxMin[k]).toBe(lo);
    }
    expect(transformFile("cameras.json", enc(model.cameras), S)).toBeNull();
  });

  it("moves rigs, frames and pose graphs: sensor_from_rig and edges keep their rotation and scale their translation", () => {
    const pose = { rotation: axisAngle([0, 1, 0], 0.2), translation: [0.1, 0.2, 0.3] as Vec3 };
    const rigs = dec(transformFile("rigs.json", enc({ rigs: [{ rig_id: 1, ref_sensor_id: 1, sensor_from_rig: { "2": pose } }] }), S)!);
    expect(rigs.rigs[0].sensor_from_rig["2"].rotation).toEqual(pose.rotation);
    expect(rigs.rigs[0].sensor_from_rig["2"].translation[2]).toBeCloseTo(0.3 * S.scale, 12);
    const frames = dec(
      transformFile("frames.json", enc({ frames: [{ frame_id: 1, rig_id: 1, rig_from_world: pose, data_ids: { "1": 1 } }] }), S)!,
    );
    expect(frames.frames[0].rig_from_world).toEqual(transformPose(pose, S));
    const graph = {
      pose_graph: {
        nodes: [{ image_id: 1, name: "a", camera_id: 1, cam_from_world: pose }],
        edges: [{ image_id1: 1, image_id2: 2, cam2_from_cam1: pose, weight: 2 }],
      },
    };
    const g = dec(transformFile("pose_graph.json", enc(graph), S)!).pose_graph;
    expect(g.nodes[0].cam_from_world).toEqual(transformPose(pose, S));
    expect(g.edges[0].cam2_from_cam1.translation[0]).toBeCloseTo(0.1 * S.scale, 12);
    expect(g.edges[0].weight).toBe(2);
  });

  it("composes and inverts: S^-1 S is the identity", () => {
    const id = composeSim3(invertSim3(S), S);
    expect(id.scale).toBeCloseTo(1, 14);
    expect(Math.abs(id.rotation.w)).toBeCloseTo(1, 14);
    for (const t of id.translation) expect(Math.abs(t)).toBeLessThan(1e-12);
    const x: Vec3 = [1, 2, 3];
    const twice = composeSim3(S, S);
    const expected = applySim3(S, applySim3(S, x));
    applySim3(twice, x).forEach((v, k) => expect(v).toBeCloseTo(expected[k]!, 9));
  });
});

describe("estimating the Sim3 from camera centres (Umeyama in RANSAC)", () => {
  /** Centres on a rough grid with some height, and their references under S with noise and outliers. */
  function pairs(n: number, noise: number, outliers: number[], seed = 7): AlignmentPair[] {
    let s = seed;
    const rand = () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
    return Array.from({ length: n }, (_, i) => {
      const centre: Vec3 = [(i % 5) * 2 + rand(), Math.floor(i / 5) * 2 + rand(), rand()];
      const r = applySim3(S, centre);
      const reference: Vec3 = outliers.includes(i)
        ? [r[0] + 80, r[1] - 60, r[2] + 50]
        : [r[0] + noise * rand(), r[1] + noise * rand(), r[2] + noise * rand()];
      return { name: `img${i}`, centre, reference };
    });
  }

  it("recovers a known Sim3 exactly from exact references", () => {
    const fit = estimateAlignment(pairs(12, 0, []), 0.01);
    expect(fit.inliers.every(Boolean)).toBe(true);
    expect(fit.sim3.scale).toBeCloseTo(S.scale, 9);
    for (const k of ["w", "x", "y", "z"] as const)
      expect(fit.sim3.rotation[k] * Math.sign(fit.sim3.rotation.w)).toBeCloseTo(S.rotation[k], 9);
    fit.sim3.translation.forEach((t, k) => expect(t).toBeCloseTo(S.translation[k]!, 7));
    expect(Math.max(...fit.residuals)).toBeLessThan(1e-8);
  });

  it("rejects outliers and reports them with their residuals", () => {
    const fit = estimateAlignment(pairs(20, 0.5, [3, 11, 17]), 3);
    expect(fit.inliers.map((b, i) => (b ? -1 : i)).filter((i) => i >= 0)).toEqual([3, 11, 17]);
    expect(fit.sim3.scale).toBeCloseTo(S.scale, 1);
    for (const i of [3, 11, 17]) expect(fit.residuals[i]).toBeGreaterThan(50);
    expect(Math.max(...fit.residuals.filter((_, i) => fit.inliers[i]))).toBeLessThan(3);
  });

  it("refuses fewer than 3 references and centres on a line", () => {
    expect(() => estimateAlignment(pairs(2, 0, []), 1)).toThrow(AlignmentError);
    const line = Array.from({ length: 6 }, (_, i) => ({ name: `l${i}`, centre: [i, 0, 0] as Vec3, reference: applySim3(S, [i, 0, 0]) }));
    expect(() => estimateAlignment(line, 0.1)).toThrow(/on a line/);
  });

  it("with both orientations of each camera (pose priors) centres on a line are enough", () => {
    const q = axisAngle([1, 2, 3], 0.4);
    const moved = transformPose({ rotation: q, translation: [0, 0, 0] }, S).rotation;
    const line = Array.from({ length: 6 }, (_, i) => ({
      name: `l${i}`,
      centre: [i, 0, 0] as Vec3,
      reference: applySim3(S, [i, 0, 0]),
      orientations: [
        [q.w, q.x, q.y, q.z],
        [moved.w, moved.x, moved.y, moved.z],
      ] as AlignmentPair["orientations"],
    }));
    const fit = estimateAlignment(line, 0.1);
    expect(fit.sim3.scale).toBeCloseTo(S.scale, 6);
    for (const k of ["w", "x", "y", "z"] as const)
      expect(fit.sim3.rotation[k] * Math.sign(fit.sim3.rotation.w)).toBeCloseTo(S.rotation[k], 6);
  });
});

describe("GPS in a local East-North-Up frame", () => {
  it("the origin is 0; a point north, east and above is on each axis at its distance", () => {
    const o = { latitude: 55.7, longitude: 13.19, altitude: 40 };
    expect(enuOf(o, o).map((v) => Math.abs(v))).toEqual([0, 0, 0]);
    // One arc-second of latitude is about 30.9 m at 55.7 N (WGS84 meridian radius of curvature).
    const north = enuOf({ ...o, latitude: o.latitude + 1 / 3600 }, o);
    expect(north[1]).toBeCloseTo(30.93, 1);
    expect(Math.abs(north[0])).toBeLessThan(1e-6);
    const east = enuOf({ ...o, longitude: o.longitude + 1 / 3600 }, o);
    expect(east[0]).toBeCloseTo(30.92 * Math.cos((55.7 * Math.PI) / 180), 0);
    expect(enuOf({ ...o, altitude: 50 }, o)[2]).toBeCloseTo(10, 6); // ECEF differences of 6e6 m numbers: micrometres
    // Distances agree with ECEF distances.
    const p = { latitude: 55.71, longitude: 13.2, altitude: 70 };
    const [a, b] = [ecefOf(p), ecefOf(o)];
    expect(Math.hypot(...enuOf(p, o))).toBeCloseTo(Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]), 6);
  });
});

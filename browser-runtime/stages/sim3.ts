/**
 * @module Similarity transforms (spec 2.13 Sim3: `new_from_old * x = scale * R x + t`) applied to
 * a snapshot model and estimated from camera centres (4.13 georegister, 4.9 merge).
 *
 * A pose `cam_from_world` (R_c, t_c) becomes (R_c R^T, s t_c - R_c R^T t): the same camera, its
 * centre moved to s R c + t; a rig's `sensor_from_rig` keeps its rotation and scales its
 * translation; points move as x' = s R x + t (in float64, stored as float32). Intrinsics,
 * observations and ids do not change. The estimate is Umeyama's least squares (Horn's quaternion
 * form, engine-wasm/ts/accuracy.ts) inside RANSAC over three-centre samples, refitted on the inliers.
 */
import { FramesFile, ImagesFile, PoseGraphFile, RigsFile, type Rigid3, type Sim3, symmetricEigenvalues } from "../../protocol";
import { decodePoints, encodePoints } from "../../protocol/wire/points";
import { type Quat, type Similarity, type Vec3, estimateSimilarityRobust, quatConj, quatMul, rotate } from "../../engine-wasm/ts/accuracy";

const quatOf = (r: Rigid3["rotation"]): Quat => [r.w, r.x, r.y, r.z];
const rotationOf = (q: Quat): Rigid3["rotation"] => ({ w: q[0], x: q[1], y: q[2], z: q[3] });
const unit = (q: Quat): Quat => {
  const n = Math.hypot(...q);
  return [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
};

/** The Sim3 with its rotation normalised (requests may carry a quaternion within 1e-3 of unit). */
export function normalizedSim3(s: Sim3): Sim3 {
  return { rotation: rotationOf(unit(quatOf(s.rotation))), translation: [...s.translation], scale: s.scale };
}

export function sim3OfSimilarity(s: Similarity): Sim3 {
  return { rotation: rotationOf(unit(s.rotation)), translation: [...s.translation], scale: s.scale };
}

/** `old_from_new`: x = (R^T (x' - t)) / s. */
export function invertSim3(s: Sim3): Sim3 {
  const q = quatConj(unit(quatOf(s.rotation)));
  const r = rotate(q, s.translation);
  return { rotation: rotationOf(q), translation: [-r[0] / s.scale, -r[1] / s.scale, -r[2] / s.scale], scale: 1 / s.scale };
}

/** `a * b` (b first). */
export function composeSim3(a: Sim3, b: Sim3): Sim3 {
  const qa = unit(quatOf(a.rotation));
  const rt = rotate(qa, b.translation);
  return {
    rotation: rotationOf(unit(quatMul(qa, unit(quatOf(b.rotation))))),
    translation: [a.scale * rt[0] + a.translation[0], a.scale * rt[1] + a.translation[1], a.scale * rt[2] + a.translation[2]],
    scale: a.scale * b.scale,
  };
}

export function applySim3(s: Sim3, x: Vec3): Vec3 {
  const r = rotate(quatOf(s.rotation), x);
  return [s.scale * r[0] + s.translation[0], s.scale * r[1] + s.translation[1], s.scale * r[2] + s.translation[2]];
}

/** A `*_from_world` pose of the old frame as the same pose of the new one. */
export function transformPose(pose: Rigid3, s: Sim3): Rigid3 {
  const q = quatMul(quatOf(pose.rotation), quatConj(quatOf(s.rotation)));
  const rt = rotate(q, s.translation);
  const t = pose.translation;
  return { rotation: rotationOf(q), translation: [s.scale * t[0] - rt[0], s.scale * t[1] - rt[1], s.scale * t[2] - rt[2]] };
}

/** A pose between two moving frames (sensor_from_rig, cam2_from_cam1): its translation is in world units. */
const scaledRelative = (pose: Rigid3, scale: number): Rigid3 => ({
  rotation: { ...pose.rotation },
  translation: [scale * pose.translation[0], scale * pose.translation[1], scale * pose.translation[2]],
});

/** points.bin / points_preview.bin bytes with every point moved (the header's bbox recomputed). */
export function transformPoints(bytes: Uint8Array, s: Sim3): Uint8Array {
  const cloud = decodePoints(bytes);
  const xyz = new Float32Array(cloud.xyz.length);
  for (let i = 0; i < xyz.length; i += 3) xyz.set(applySim3(s, [cloud.xyz[i]!, cloud.xyz[i + 1]!, cloud.xyz[i + 2]!]), i);
  return encodePoints({ xyz, rgb: cloud.rgb, trackLength: cloud.trackLength, ids: cloud.ids });
}

/** The files of a snapshot model that a Sim3 changes. */
export const MOVING_FILES = ["images.json", "rigs.json", "frames.json", "pose_graph.json", "points.bin", "points_preview.bin"] as const;

/**
 * One snapshot file moved by `s`: the new content of a file in MOVING_FILES (parsed against its
 * 2.14 schema), or null for one a Sim3 leaves as it is (cameras.json, summary.json).
 */
export function transformFile(name: string, content: Uint8Array, s: Sim3): Uint8Array | null {
  const parse = () => JSON.parse(new TextDecoder().decode(content)) as unknown;
  const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  switch (name) {
    case "images.json": {
      const f = ImagesFile.parse(parse());
      return enc({ images: f.images.map((im) => ({ ...im, cam_from_world: transformPose(im.cam_from_world, s) })) });
    }
    case "rigs.json": {
      const f = RigsFile.parse(parse());
      const rigs = f.rigs.map((r) => ({
        ...r,
        sensor_from_rig: Object.fromEntries(Object.entries(r.sensor_from_rig).map(([k, p]) => [k, scaledRelative(p, s.scale)])),
      }));
      return enc({ rigs });
    }
    case "frames.json": {
      const f = FramesFile.parse(parse());
      return enc({ frames: f.frames.map((fr) => ({ ...fr, rig_from_world: transformPose(fr.rig_from_world, s) })) });
    }
    case "pose_graph.json": {
      const g = PoseGraphFile.parse(parse()).pose_graph;
      return enc({
        pose_graph: {
          nodes: g.nodes.map((n) => ({ ...n, cam_from_world: transformPose(n.cam_from_world, s) })),
          edges: g.edges.map((e) => ({ ...e, cam2_from_cam1: scaledRelative(e.cam2_from_cam1, s.scale) })),
        },
      });
    }
    case "points.bin":
    case "points_preview.bin":
      return transformPoints(content, s);
    default:
      return null;
  }
}

/** Camera centre of a `cam_from_world` pose: -R^T t. */
export function centreOf(pose: Rigid3): Vec3 {
  const c = rotate(quatConj(quatOf(pose.rotation)), pose.translation);
  return [-c[0], -c[1], -c[2]];
}

export class AlignmentError extends Error {
  override name = "AlignmentError";
}

/** One camera to align: its centre in the model, where it should be, and optionally both orientations (cam_from_world rotations). */
export interface AlignmentPair {
  name: string;
  centre: Vec3;
  reference: Vec3;
  orientations?: [Quat, Quat];
}

export interface Alignment {
  /** reference_from_model. */
  sim3: Sim3;
  inliers: boolean[];
  /** Distance of each aligned centre to its reference. */
  residuals: number[];
}

/**
 * reference_from_model from paired camera centres: RANSAC over three-centre samples with inlier
 * threshold `maxError` (reference units), refitted on the inliers (with both orientations of each
 * pair when every pair has them: they fix the rotation about a line of centres). Throws an
 * AlignmentError with fewer than 3 pairs or inliers, or when the inliers' reference positions lie
 * on a line (without orientations the rotation about it is undetermined).
 */
export function estimateAlignment(pairs: AlignmentPair[], maxError: number): Alignment {
  if (pairs.length < 3) throw new AlignmentError(`${pairs.length} registered image(s) have a reference position: at least 3 are needed`);
  const oriented = pairs.every((p) => p.orientations);
  const { similarity, inliers } = estimateSimilarityRobust(
    pairs.map((p) => p.centre),
    pairs.map((p) => p.reference),
    maxError,
    1000,
    oriented ? pairs.map((p) => p.orientations!) : [],
  );
  const count = inliers.filter(Boolean).length;
  if (count < 3)
    throw new AlignmentError(`no Sim3 puts 3 camera centres within ${maxError} of their references (best: ${count} of ${pairs.length})`);
  if (!oriented) {
    const kept = pairs.filter((_, i) => inliers[i]).map((p) => p.reference);
    const spread = principalSpread(kept);
    if (spread[1] < 1e-2 * spread[0]) {
      throw new AlignmentError(
        `the ${count} inlier reference positions lie on a line (spread across it ${spread[1].toPrecision(2)}, along it ${spread[0].toPrecision(2)}): the rotation about it is undetermined`,
      );
    }
  }
  const sim3 = sim3OfSimilarity(similarity);
  const residuals = pairs.map((p) => {
    const a = applySim3(sim3, p.centre);
    return Math.hypot(a[0] - p.reference[0], a[1] - p.reference[1], a[2] - p.reference[2]);
  });
  return { sim3, inliers, residuals };
}

/** Standard deviations of points along their principal axes, largest first. */
function principalSpread(points: Vec3[]): [number, number, number] {
  const n = points.length;
  const m = [0, 1, 2].map((k) => points.reduce((acc, p) => acc + p[k]!, 0) / n);
  const cov = new Array<number>(9).fill(0);
  for (const p of points)
    for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) cov[3 * r + c]! += ((p[r]! - m[r]!) * (p[c]! - m[c]!)) / n;
  const ev = symmetricEigenvalues(cov, 3)
    .map((v) => Math.sqrt(Math.max(0, v)))
    .sort((a, b) => b - a);
  return [ev[0]!, ev[1]!, ev[2]!];
}

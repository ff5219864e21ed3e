/**
 * @module The pose math every export shares: COLMAP's `cam_from_world` (Hamilton quaternion,
 * scalar first, as the snapshot's Rigid3 carries it) turned into rotation matrices, camera centres
 * and camera-to-world matrices. Quaternion algebra itself lives in engine-wasm/ts/accuracy.ts and
 * is reused, not duplicated.
 */
import type { Rigid3 } from "../../../protocol/schemas/snapshot";
import { projectionCenter, quatConj, quatMul, rotate, type Quat, type Vec3 } from "../../../engine-wasm/ts/accuracy";

export { projectionCenter, quatConj, quatMul, rotate, type Quat, type Vec3 };

/** Row-major 3x3. */
export type Matrix3 = [Vec3, Vec3, Vec3];
/** Row-major 4x4 (rows of 4). */
export type Matrix4 = [number[], number[], number[], number[]];

export function quatOf(pose: Rigid3): Quat {
  const { w, x, y, z } = pose.rotation;
  return [w, x, y, z];
}

/** Rotation matrix of a unit Hamilton quaternion, as COLMAP's QuaternionToRotationMatrix. */
export function quatToMatrix(q: Quat): Matrix3 {
  const n = Math.hypot(q[0], q[1], q[2], q[3]);
  const [w, x, y, z] = [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
  return [
    [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
  ];
}

/** Point in camera coordinates (x right, y down, z forward: COLMAP/OpenCV) of a world point. */
export function worldToCamera(pose: Rigid3, world: Vec3): Vec3 {
  const r = rotate(quatOf(pose), world);
  const t = pose.translation;
  return [r[0] + t[0], r[1] + t[1], r[2] + t[2]];
}

/** Camera centre in world coordinates: -R^T t. */
export function cameraCenter(pose: Rigid3): Vec3 {
  return projectionCenter({ qvec: quatOf(pose), tvec: pose.translation });
}

/** world_from_cam as a 4x4 (columns = camera axes in world coordinates, OpenCV camera axes). */
export function camToWorldMatrix(pose: Rigid3): Matrix4 {
  const r = quatToMatrix(quatOf(pose));
  const c = cameraCenter(pose);
  // R^T: row i of the result holds column i of R.
  return [
    [r[0][0], r[1][0], r[2][0], c[0]],
    [r[0][1], r[1][1], r[2][1], c[1]],
    [r[0][2], r[1][2], r[2][2], c[2]],
    [0, 0, 0, 1],
  ];
}

/**
 * The camera centre with COLMAP 3.8's own arithmetic (src/base/pose.cc ProjectionCenterFromPose:
 * the normalised conjugate quaternion times -t, through Eigen's q * v = v + w uv + vec x uv,
 * uv = 2 vec x v; Eigen's SSE2 4-vector norm sums (q0^2 + q2^2) + (q1^2 + q3^2)), so text
 * writers that print centres (NVM) reproduce COLMAP's last digits.
 */
export function colmapProjectionCenter(pose: Rigid3): Vec3 {
  const { w, x, y, z } = pose.rotation;
  const norm = Math.sqrt(w * w + y * y + (x * x + z * z));
  const q: Quat = norm === 0 ? [1, 0, 0, 0] : [w / norm, x / norm, y / norm, z / norm];
  const qw = q[0];
  const qv: Vec3 = [-q[1], -q[2], -q[3]];
  const v: Vec3 = [-pose.translation[0], -pose.translation[1], -pose.translation[2]];
  const c = cross(qv, v);
  const uv: Vec3 = [c[0] + c[0], c[1] + c[1], c[2] + c[2]];
  const c2 = cross(qv, uv);
  return [v[0] + qw * uv[0] + c2[0], v[1] + qw * uv[1] + c2[1], v[2] + qw * uv[2] + c2[2]];
}

export function multiply4(a: Matrix4, b: Matrix4): Matrix4 {
  const out: Matrix4 = [[], [], [], []];
  for (let i = 0; i < 4; i++)
    for (let j = 0; j < 4; j++) out[i]![j] = a[i]![0]! * b[0]![j]! + a[i]![1]! * b[1]![j]! + a[i]![2]! * b[2]![j]! + a[i]![3]! * b[3]![j]!;
  return out;
}

export function identity4(): Matrix4 {
  return [
    [1, 0, 0, 0],
    [0, 1, 0, 0],
    [0, 0, 1, 0],
    [0, 0, 0, 1],
  ];
}

/** Applies a 4x4 (or its top 3x4) to a point. */
export function transformPoint(m: readonly (readonly number[])[], p: Vec3): Vec3 {
  const row = (i: number) => m[i]![0]! * p[0] + m[i]![1]! * p[1] + m[i]![2]! * p[2] + m[i]![3]!;
  return [row(0), row(1), row(2)];
}

/** Inverse of a rigid 4x4 [R t; 0 1] (R orthonormal): [R^T -R^T t; 0 1]. */
export function invertRigid4(m: readonly (readonly number[])[]): Matrix4 {
  const r = (i: number, j: number) => m[i]![j]!;
  const t: Vec3 = [r(0, 3), r(1, 3), r(2, 3)];
  const out: Matrix4 = [[], [], [], [0, 0, 0, 1]];
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 3; j++) out[i]![j] = r(j, i);
    out[i]![3] = -(r(0, i) * t[0] + r(1, i) * t[1] + r(2, i) * t[2]);
  }
  return out;
}

export function cross(a: Vec3, b: Vec3): Vec3 {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}
export function dot(a: Vec3, b: Vec3): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
export function normalize(a: Vec3): Vec3 {
  const n = Math.hypot(a[0], a[1], a[2]);
  return [a[0] / n, a[1] / n, a[2] / n];
}

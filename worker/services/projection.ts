/**
 * @module World points to pixels through a snapshot's cameras (cameras.json, 2.14), for the
 * reprojection errors of the observations sidecar (4.9). Pure: also tested in Node against the
 * shared COLMAP reference models.
 */
import type { CamerasFile, Rigid3 } from "../../protocol";
import { CAMERA_MODELS } from "../../protocol";

type Camera = CamerasFile["cameras"][number];
type Vec3 = [number, number, number];

/** Hamilton quaternion (w, x, y, z) rotation of v. */
function rotate(q: Rigid3["rotation"], v: Vec3): Vec3 {
  const n = Math.hypot(q.w, q.x, q.y, q.z) || 1;
  const [w, x, y, z] = [q.w / n, q.x / n, q.y / n, q.z / n];
  // v + 2w (u x v) + 2 u x (u x v), with u = (x, y, z).
  const c1: Vec3 = [y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0]];
  const c2: Vec3 = [y * c1[2] - z * c1[1], z * c1[0] - x * c1[2], x * c1[1] - y * c1[0]];
  return [v[0] + 2 * (w * c1[0] + c2[0]), v[1] + 2 * (w * c1[1] + c2[1]), v[2] + 2 * (w * c1[2] + c2[2])];
}

/**
 * World point to pixel through the camera (COLMAP's models, protocol/camera-models.ts), for the
 * pinhole-family models; null for a point behind the camera or a model not projected here.
 */
export function project(camera: Camera, camFromWorld: Rigid3, world: Vec3): [number, number] | null {
  const r = rotate(camFromWorld.rotation, world);
  const p: Vec3 = [r[0] + camFromWorld.translation[0], r[1] + camFromWorld.translation[1], r[2] + camFromWorld.translation[2]];
  const layout = CAMERA_MODELS.find((m) => m.name === camera.model);
  if (!(p[2] > 0) || !layout || camera.params.length !== layout.params.length) return null;
  const [u, v] = [p[0] / p[2], p[1] / p[2]];
  const k = camera.params;
  const r2 = u * u + v * v;
  const radial = (k1: number, k2 = 0) => [u * (1 + k1 * r2 + k2 * r2 * r2), v * (1 + k1 * r2 + k2 * r2 * r2)] as const;
  const pixel = (fx: number, fy: number, cx: number, cy: number, du: number, dv: number): [number, number] => [fx * du + cx, fy * dv + cy];
  switch (camera.model) {
    case "SIMPLE_PINHOLE":
      return pixel(k[0]!, k[0]!, k[1]!, k[2]!, u, v);
    case "PINHOLE":
      return pixel(k[0]!, k[1]!, k[2]!, k[3]!, u, v);
    case "SIMPLE_RADIAL":
      return pixel(k[0]!, k[0]!, k[1]!, k[2]!, ...radial(k[3]!));
    case "RADIAL":
      return pixel(k[0]!, k[0]!, k[1]!, k[2]!, ...radial(k[3]!, k[4]!));
    case "OPENCV": {
      const [k1, k2, p1, p2] = [k[4]!, k[5]!, k[6]!, k[7]!];
      const [du, dv] = radial(k1, k2);
      return pixel(k[0]!, k[1]!, k[2]!, k[3]!, du + 2 * p1 * u * v + p2 * (r2 + 2 * u * u), dv + p1 * (r2 + 2 * v * v) + 2 * p2 * u * v);
    }
    default:
      return null;
  }
}

/**
 * @module Camera geometry of snapshot files (spec 2.13, 2.14): `cam_from_world` is a Hamilton
 * quaternion (scalar first) and a translation, so the camera centre in the world is
 * C = -R^T t and the world-from-camera rotation is R^T. Cameras look along +z with +x right and
 * +y down (COLMAP's convention), which the frustum corners follow.
 */
import { Quaternion, Vector3 } from "three";
import { CAMERA_MODELS } from "../../../protocol/camera-models";
import type { Rigid3 } from "../../../protocol/schemas/snapshot";

export interface WorldPose {
  center: Vector3;
  /** world_from_cam rotation. */
  rotation: Quaternion;
}

export function worldPose(camFromWorld: Rigid3): WorldPose {
  const { w, x, y, z } = camFromWorld.rotation;
  const rotation = new Quaternion(x, y, z, w).normalize().invert();
  const center = new Vector3(...camFromWorld.translation).applyQuaternion(rotation).negate();
  return { center, rotation };
}

export interface Intrinsics {
  width: number;
  height: number;
  fx: number;
  fy: number;
  cx: number;
  cy: number;
}

/** Focal lengths and principal point from a camera's params, by its model's layout. */
export function intrinsics(camera: { model: string; width: number; height: number; params: number[] }): Intrinsics {
  const info = CAMERA_MODELS.find((m) => m.name === camera.model);
  const p = camera.params;
  const f = info?.focal_length_idxs ?? [];
  const c = info?.principal_point_idxs ?? [];
  // Unknown or param-less models (SPHERICAL): a 90-degree pinhole stands in for drawing.
  const fx = f.length > 0 ? (p[f[0]!] ?? camera.width / 2) : camera.width / 2;
  const fy = f.length > 1 ? (p[f[1]!] ?? fx) : fx;
  return {
    width: camera.width,
    height: camera.height,
    fx,
    fy,
    cx: c.length === 2 ? (p[c[0]!] ?? camera.width / 2) : camera.width / 2,
    cy: c.length === 2 ? (p[c[1]!] ?? camera.height / 2) : camera.height / 2,
  };
}

/** The four image corners at `depth` along the viewing ray, in world coordinates. */
export function frustumCorners(pose: WorldPose, k: Intrinsics, depth: number): Vector3[] {
  return [
    [0, 0],
    [k.width, 0],
    [k.width, k.height],
    [0, k.height],
  ].map(([u, v]) =>
    new Vector3(((u! - k.cx) / k.fx) * depth, ((v! - k.cy) / k.fy) * depth, depth).applyQuaternion(pose.rotation).add(pose.center),
  );
}

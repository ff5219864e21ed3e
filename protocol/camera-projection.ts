/**
 * @module World and camera points to pixels through COLMAP's camera models (COLMAP 3.8
 * src/base/camera_models.h: `WorldToImage` = normalise by depth, add `Distortion`, then focal and
 * principal point), and the mean reprojection error of a model's observations as COLMAP defines
 * it. One implementation for every reader of a model: the COLMAP exports' ERROR column, the
 * merge stage, the Worker's check of a sealed map result and the observations sidecar (4.9).
 * Pixel coordinates follow COLMAP: the top-left pixel's centre is (0.5, 0.5).
 */
import { CAMERA_MODELS } from "./camera-models";
import type { CamerasFile, ImagesFile, Rigid3 } from "./schemas/snapshot";

type Vec3 = readonly [number, number, number];

export interface CameraIntrinsics {
  model: string;
  params: readonly number[];
}

/** COLMAP's models that a COLMAP model file can hold (SPHERICAL is the spec's own, id 100). */
export function colmapModelId(model: string): number | undefined {
  const info = CAMERA_MODELS.find((m) => m.name === model);
  return info && info.model_id < 100 ? info.model_id : undefined;
}

/** Fisheye models distort the angle theta = atan(r), as OpenCV's fisheye model. */
function fisheyeDistortion(u: number, v: number, ks: readonly number[]): [number, number] {
  const r = Math.hypot(u, v);
  if (r <= Number.EPSILON) return [0, 0];
  const theta = Math.atan(r);
  const t2 = theta * theta;
  let poly = 1;
  let power = t2;
  for (const k of ks) {
    poly += k * power;
    power *= t2;
  }
  const thetad = theta * poly;
  return [(u * thetad) / r - u, (v * thetad) / r - v];
}

/** (du, dv) that COLMAP adds to normalised coordinates (u, v) for the model's extra params. */
export function distortion(model: string, extra: readonly number[], u: number, v: number): [number, number] {
  const u2 = u * u;
  const v2 = v * v;
  const uv = u * v;
  const r2 = u2 + v2;
  switch (model) {
    case "SIMPLE_PINHOLE":
    case "PINHOLE":
      return [0, 0];
    case "SIMPLE_RADIAL": {
      const radial = extra[0]! * r2;
      return [u * radial, v * radial];
    }
    case "RADIAL": {
      const radial = extra[0]! * r2 + extra[1]! * r2 * r2;
      return [u * radial, v * radial];
    }
    case "OPENCV": {
      const [k1, k2, p1, p2] = extra as [number, number, number, number];
      const radial = k1 * r2 + k2 * r2 * r2;
      return [u * radial + 2 * p1 * uv + p2 * (r2 + 2 * u2), v * radial + 2 * p2 * uv + p1 * (r2 + 2 * v2)];
    }
    case "FULL_OPENCV": {
      const [k1, k2, p1, p2, k3, k4, k5, k6] = extra as number[] as [number, number, number, number, number, number, number, number];
      const r4 = r2 * r2;
      const r6 = r4 * r2;
      const radial = (1 + k1 * r2 + k2 * r4 + k3 * r6) / (1 + k4 * r2 + k5 * r4 + k6 * r6);
      return [u * radial + 2 * p1 * uv + p2 * (r2 + 2 * u2) - u, v * radial + 2 * p2 * uv + p1 * (r2 + 2 * v2) - v];
    }
    case "OPENCV_FISHEYE":
    case "SIMPLE_RADIAL_FISHEYE":
    case "RADIAL_FISHEYE":
      return fisheyeDistortion(u, v, extra);
    default:
      throw new Error(`no projection for camera model ${model}`);
  }
}

/** Focal lengths, principal point and extra params of a COLMAP model's parameter vector. */
export function splitParams(camera: CameraIntrinsics): { fx: number; fy: number; cx: number; cy: number; extra: number[] } {
  const info = CAMERA_MODELS.find((m) => m.name === camera.model);
  if (!info || info.params.length !== camera.params.length) {
    throw new Error(`camera model ${camera.model} with ${camera.params.length} params is not a COLMAP model`);
  }
  const p = camera.params;
  const f = info.focal_length_idxs.map((i) => p[i]!);
  return {
    fx: f[0]!,
    fy: f[1] ?? f[0]!,
    cx: p[info.principal_point_idxs[0]!]!,
    cy: p[info.principal_point_idxs[1]!]!,
    extra: info.extra_params_idxs.map((i) => p[i]!),
  };
}

/** Pixel of a point in camera coordinates, or null behind the camera (COLMAP then has no error). */
export function projectToImage(camera: CameraIntrinsics, pointInCamera: Vec3): [number, number] | null {
  if (pointInCamera[2] <= Number.EPSILON) return null;
  const { fx, fy, cx, cy, extra } = splitParams(camera);
  const u = pointInCamera[0] / pointInCamera[2];
  const v = pointInCamera[1] / pointInCamera[2];
  const [du, dv] = distortion(camera.model, extra, u, v);
  return [fx * (u + du) + cx, fy * (v + dv) + cy];
}

/** Hamilton quaternion (w, x, y, z) rotation of v (normalised first, as COLMAP does). */
function rotate(q: Rigid3["rotation"], v: Vec3): [number, number, number] {
  const n = Math.hypot(q.w, q.x, q.y, q.z) || 1;
  const [w, x, y, z] = [q.w / n, q.x / n, q.y / n, q.z / n];
  // v + 2w (u x v) + 2 u x (u x v), with u = (x, y, z).
  const c1: Vec3 = [y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0]];
  const c2: Vec3 = [y * c1[2] - z * c1[1], z * c1[0] - x * c1[2], x * c1[1] - y * c1[0]];
  return [v[0] + 2 * (w * c1[0] + c2[0]), v[1] + 2 * (w * c1[1] + c2[1]), v[2] + 2 * (w * c1[2] + c2[2])];
}

/** Whether COLMAP's projection covers the camera (its model known, its params complete; not SPHERICAL). */
function projectable(camera: CameraIntrinsics): boolean {
  const info = CAMERA_MODELS.find((m) => m.name === camera.model);
  return !!info && info.model_id < 100 && info.params.length === camera.params.length;
}

/** Pixel of a world point through the image's pose and camera; null behind the camera or for a model not projected. */
export function projectWorld(camera: CameraIntrinsics, camFromWorld: Rigid3, world: Vec3): [number, number] | null {
  if (!projectable(camera)) return null;
  const r = rotate(camFromWorld.rotation, world);
  const t = camFromWorld.translation;
  return projectToImage(camera, [r[0] + t[0], r[1] + t[1], r[2] + t[2]]);
}

/**
 * The mean reprojection error of a model's observations (COLMAP's mean_reproj_err: every
 * observation of a point through its image's pose and camera, averaged over observations);
 * null when no observation could be projected.
 */
export function meanReprojectionError(
  model: { cameras: CamerasFile; images: ImagesFile },
  pointXyz: (point3dId: number) => Vec3 | undefined,
): number | null {
  const cameras = new Map(model.cameras.cameras.map((c) => [c.camera_id, c]));
  let sum = 0;
  let n = 0;
  for (const image of model.images.images) {
    const camera = cameras.get(image.camera_id);
    if (!camera || !image.cam_from_world) continue;
    for (const p of image.points2D) {
      const xyz = p.point3d_id === null ? undefined : pointXyz(p.point3d_id);
      const px = xyz && projectWorld(camera, image.cam_from_world, xyz);
      if (!px) continue;
      sum += Math.hypot(px[0] - p.xy[0], px[1] - p.xy[1]);
      n++;
    }
  }
  return n > 0 ? sum / n : null;
}

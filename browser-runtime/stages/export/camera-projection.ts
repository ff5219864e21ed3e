/**
 * @module Image-from-camera projection through COLMAP's camera models (COLMAP 3.8
 * src/base/camera_models.h: `WorldToImage` = normalise by depth, add `Distortion`, then focal and
 * principal point). Used to compute each 3D point's reprojection error for the COLMAP exports'
 * ERROR column, exactly as COLMAP defines it (mean pixel distance over the track).
 * Pixel coordinates follow COLMAP: the top-left pixel's centre is (0.5, 0.5).
 */
import { CAMERA_MODELS } from "../../../protocol/camera-models";
import type { Vec3 } from "./geometry";

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

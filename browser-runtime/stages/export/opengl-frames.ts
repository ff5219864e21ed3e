/**
 * @module What nerfstudio's and instant-ngp's transforms.json share: intrinsics keyed as both read
 * them (fl_x, fl_y, cx, cy, w, h, k1..k4, p1, p2) and camera-to-world matrices in the OpenGL /
 * NeRF camera convention (x right, y up, z backward: COLMAP's camera y and z axes negated).
 */
import { camToWorldMatrix, type Matrix4 } from "./geometry";
import { splitParams } from "../../../protocol/camera-projection";
import type { SnapshotCamera, SnapshotImage } from "./export-model";

/** world_from_cam with OpenGL camera axes: columns 1 and 2 of COLMAP's camera-to-world negated. */
export function openGlCamToWorld(image: SnapshotImage): Matrix4 {
  const m = camToWorldMatrix(image.cam_from_world);
  for (let i = 0; i < 3; i++) {
    m[i]![1] = -m[i]![1]!;
    m[i]![2] = -m[i]![2]!;
  }
  return m;
}

export interface OpenCvIntrinsics {
  fl_x: number;
  fl_y: number;
  cx: number;
  cy: number;
  w: number;
  h: number;
  k1: number;
  k2: number;
  k3: number;
  k4: number;
  p1: number;
  p2: number;
  /** Fisheye models: k1..k4 distort the angle (OpenCV fisheye); else k1, k2, p1, p2 are OpenCV's. */
  fisheye: boolean;
}

/**
 * A COLMAP camera as OpenCV / OpenCV-fisheye intrinsics, the mapping of nerfstudio's
 * process_data/colmap_utils.py parse_colmap_camera_params and instant-ngp's scripts/colmap2nerf.py
 * (both refuse FULL_OPENCV, FOV and THIN_PRISM_FISHEYE; so do we: undefined).
 */
export function openCvIntrinsics(camera: SnapshotCamera): OpenCvIntrinsics | undefined {
  if (camera.model === "FULL_OPENCV" || camera.model === "SPHERICAL") return undefined;
  const { fx, fy, cx, cy, extra } = splitParams(camera);
  const base = { fl_x: fx, fl_y: fy, cx, cy, w: camera.width, h: camera.height, k1: 0, k2: 0, k3: 0, k4: 0, p1: 0, p2: 0, fisheye: false };
  switch (camera.model) {
    case "SIMPLE_PINHOLE":
    case "PINHOLE":
      return base;
    case "SIMPLE_RADIAL":
      return { ...base, k1: extra[0]! };
    case "RADIAL":
      return { ...base, k1: extra[0]!, k2: extra[1]! };
    case "OPENCV":
      return { ...base, k1: extra[0]!, k2: extra[1]!, p1: extra[2]!, p2: extra[3]! };
    case "OPENCV_FISHEYE":
      return { ...base, k1: extra[0]!, k2: extra[1]!, k3: extra[2]!, k4: extra[3]!, fisheye: true };
    case "SIMPLE_RADIAL_FISHEYE":
      return { ...base, k1: extra[0]!, fisheye: true };
    case "RADIAL_FISHEYE":
      return { ...base, k1: extra[0]!, k2: extra[1]!, fisheye: true };
    default:
      return undefined;
  }
}

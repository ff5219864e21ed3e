/**
 * @module `export.nerfstudio`: transforms.json as nerfstudio's `ns-process-data` writes it from a
 * COLMAP model (nerfstudio/process_data/colmap_utils.py, colmap_to_json and
 * parse_colmap_camera_params), read by its `nerfstudio-data` dataparser:
 *
 * - intrinsics fl_x, fl_y, cx, cy, w, h, camera_model ("OPENCV": k1, k2, p1, p2;
 *   "OPENCV_FISHEYE": k1..k4), at the top level for a single camera, else on every frame;
 * - frames: file_path "images/<name>", transform_matrix = camera-to-world with OpenGL camera axes,
 *   colmap_im_id;
 * - world axes reoriented as colmap_to_json does by default (rows [0, 2, 1], then the new z
 *   negated) and recorded as `applied_transform` (3x4), so the dataparser can map back;
 * - ply_file_path "sparse_pc.ply": the sparse points in that same world (nerfstudio writes ASCII,
 *   we write binary little-endian; both are standard PLY).
 */
import { multiply4, transformPoint, type Matrix4 } from "./geometry";
import { ExportError, type ExportModel, type SnapshotCamera } from "./export-model";
import { openCvIntrinsics, openGlCamToWorld } from "./opengl-frames";
import { modelPly } from "./ply";

/** colmap_to_json's world reorientation: x' = x, y' = z, z' = -y. */
export const NERFSTUDIO_APPLIED_TRANSFORM: Matrix4 = [
  [1, 0, 0, 0],
  [0, 0, 1, 0],
  [0, -1, 0, 0],
  [0, 0, 0, 1],
];

function cameraFields(camera: SnapshotCamera): Record<string, number | string> {
  const k = openCvIntrinsics(camera);
  if (!k)
    throw new ExportError("unsupported_camera_model", `nerfstudio has no camera model for ${camera.model} (camera ${camera.camera_id})`);
  const common = { w: k.w, h: k.h, fl_x: k.fl_x, fl_y: k.fl_y, cx: k.cx, cy: k.cy };
  return k.fisheye
    ? { ...common, k1: k.k1, k2: k.k2, k3: k.k3, k4: k.k4, camera_model: "OPENCV_FISHEYE" }
    : { ...common, k1: k.k1, k2: k.k2, p1: k.p1, p2: k.p2, camera_model: "OPENCV" };
}

export function nerfstudioTransforms(model: ExportModel): Record<string, unknown> {
  const single = model.cameras.length === 1;
  const out: Record<string, unknown> = single ? cameraFields(model.cameras[0]!) : {};
  for (const c of model.cameras) cameraFields(c); // refuse unsupported models even when unused at top level
  out.frames = model.images.map((image) => ({
    file_path: `images/${image.name}`,
    transform_matrix: multiply4(NERFSTUDIO_APPLIED_TRANSFORM, openGlCamToWorld(image)),
    colmap_im_id: image.image_id,
    ...(single ? {} : cameraFields(model.cameraById.get(image.camera_id)!)),
  }));
  out.applied_transform = NERFSTUDIO_APPLIED_TRANSFORM.slice(0, 3);
  out.ply_file_path = "sparse_pc.ply";
  return out;
}

export function exportNerfstudio(model: ExportModel): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  files.set("transforms.json", new TextEncoder().encode(JSON.stringify(nerfstudioTransforms(model), null, 4)));
  files.set(
    "sparse_pc.ply",
    modelPly(model, (p) => transformPoint(NERFSTUDIO_APPLIED_TRANSFORM, p)),
  );
  return files;
}

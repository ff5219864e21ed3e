/**
 * @module `export.colmap_text` (and its alias `export.txt`): cameras.txt, images.txt and
 * points3D.txt byte-for-byte as COLMAP 3.8 writes them (src/base/reconstruction.cc,
 * WriteCamerasText / WriteImagesText / WritePoints3DText; format documented in doc/format.rst):
 * the same comment headers, `precision(17)` numbers, no trailing spaces, POINT3D_ID -1 for a
 * keypoint in no track, quaternion QW QX QY QZ and translation of cam_from_world.
 * Ids are written in ascending order (COLMAP's own order is its hash maps').
 */
import { formatG } from "./number-format";
import { requireColmapCameras, type ExportModel } from "./export-model";

const encoder = new TextEncoder();

export function colmapCamerasText(model: ExportModel): string {
  const lines = [
    "# Camera list with one line of data per camera:",
    "#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]",
    `# Number of cameras: ${model.cameras.length}`,
  ];
  for (const c of model.cameras) lines.push([c.camera_id, c.model, c.width, c.height, ...c.params.map((p) => formatG(p))].join(" "));
  return lines.join("\n") + "\n";
}

export function colmapImagesText(model: ExportModel): string {
  const lines = [
    "# Image list with two lines of data per image:",
    "#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME",
    "#   POINTS2D[] as (X, Y, POINT3D_ID)",
    `# Number of images: ${model.images.length}, mean observations per image: ${formatG(model.meanObservationsPerImage)}`,
  ];
  for (const image of model.images) {
    const { w, x, y, z } = image.cam_from_world.rotation;
    const t = image.cam_from_world.translation;
    lines.push([image.image_id, ...[w, x, y, z, ...t].map((v) => formatG(v)), image.camera_id, image.name].join(" "));
    const fields: string[] = [];
    for (const p of image.points2D) fields.push(formatG(p.xy[0]), formatG(p.xy[1]), p.point3d_id === null ? "-1" : String(p.point3d_id));
    lines.push(fields.join(" "));
  }
  return lines.join("\n") + "\n";
}

export function colmapPoints3DText(model: ExportModel): string {
  const lines = [
    "# 3D point list with one line of data per point:",
    "#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)",
    `# Number of points: ${model.points.length}, mean track length: ${formatG(model.meanTrackLength)}`,
  ];
  for (const p of model.points) {
    const fields = [String(p.id), ...p.xyz.map((v) => formatG(v)), ...p.rgb.map(String), formatG(p.error)];
    for (const el of p.track) fields.push(String(el.imageId), String(el.point2DIdx));
    lines.push(fields.join(" "));
  }
  return lines.join("\n") + "\n";
}

/** The three files of a COLMAP text model, relative to `prefix` (e.g. "" or "sparse/0/"). */
export function exportColmapText(model: ExportModel, prefix = ""): Map<string, Uint8Array> {
  requireColmapCameras(model, "COLMAP text model");
  return new Map([
    [`${prefix}cameras.txt`, encoder.encode(colmapCamerasText(model))],
    [`${prefix}images.txt`, encoder.encode(colmapImagesText(model))],
    [`${prefix}points3D.txt`, encoder.encode(colmapPoints3DText(model))],
  ]);
}

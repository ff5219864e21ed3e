/**
 * @module `export.nvm`: VisualSfM's NVM_V3, byte-for-byte as COLMAP 3.8 writes it
 * (src/base/reconstruction.cc ExportNVM, `colmap model_converter --output_type NVM`):
 *
 *   NVM_V3 ␠\n ␠\n <num cameras>␠␠\n
 *   per registered image: name, mean focal length, qw qx qy qz (cam_from_world), camera centre
 *   x y z, radial distortion, 0   (17 significant digits)
 *   \n <num points>\n
 *   per point: x y z r g b <num measurements> then per measurement: image index, keypoint index,
 *   x y (6 significant digits, the stream's default precision)
 *
 * COLMAP's conventions, kept on purpose so its reader and ours agree: the distortion is -k of a
 * SIMPLE_RADIAL camera (VisualSfM's k distorts the other way) and 0 for pinhole cameras; other
 * models are refused, as COLMAP refuses them; measurement x y are COLMAP's raw keypoint
 * coordinates (not relative to the principal point as VisualSfM's own files are); a point keeps
 * one measurement per image (VisualSfM's limit).
 */
import { colmapProjectionCenter } from "./geometry";
import { formatG } from "./number-format";
import { requireColmapCameras, type ExportModel } from "./export-model";

export const NVM_CAMERA_MODELS = ["SIMPLE_PINHOLE", "PINHOLE", "SIMPLE_RADIAL"] as const;

export function nvmText(model: ExportModel): string {
  requireColmapCameras(model, "NVM_V3", NVM_CAMERA_MODELS);
  const out: string[] = ["NVM_V3 ", " ", `${model.images.length}  `];
  const indexOfImage = new Map<number, number>();
  model.images.forEach((image, index) => {
    indexOfImage.set(image.image_id, index);
    const camera = model.cameraById.get(image.camera_id)!;
    const focals = camera.model === "PINHOLE" ? [camera.params[0]!, camera.params[1]!] : [camera.params[0]!];
    const meanFocal = focals.reduce((a, b) => a + b, 0) / focals.length;
    const k = camera.model === "SIMPLE_RADIAL" ? -camera.params[3]! : 0;
    const { w, x, y, z } = image.cam_from_world.rotation;
    const c = colmapProjectionCenter(image.cam_from_world);
    out.push([image.name, ...[meanFocal, w, x, y, z, ...c, k].map((v) => formatG(v)), "0"].join(" "));
  });
  out.push("", String(model.points.length));
  for (const p of model.points) {
    const seen = new Set<number>();
    const measurements: string[] = [];
    for (const el of p.track) {
      if (seen.has(el.imageId)) continue;
      seen.add(el.imageId);
      const [x, y] = model.imageById.get(el.imageId)!.points2D[el.point2DIdx]!.xy;
      measurements.push(String(indexOfImage.get(el.imageId)), String(el.point2DIdx), formatG(x, 6), formatG(y, 6));
    }
    // COLMAP prints the count, a space, then the measurements: a point with none keeps the space.
    const head = [...p.xyz.map((v) => formatG(v)), ...p.rgb.map(String), String(seen.size)].join(" ");
    out.push(`${head} ${measurements.join(" ")}`);
  }
  return out.join("\n") + "\n";
}

export function exportNvm(model: ExportModel): Map<string, Uint8Array> {
  return new Map([["model.nvm", new TextEncoder().encode(nvmText(model))]]);
}

/**
 * @module Photos in an export (nerfstudio, instant-ngp, 3DGS and kapture read them beside the
 * poses): where each format expects them, and how they reach the result: copied from bytes the
 * caller has, or listed for the caller to reference (the export task lists the dataset's own
 * blobs, so no bytes are copied). An export holds every registered image or none; then a warning
 * says where the trainer expects them.
 */
import type { ExportFormat } from "../../../protocol/exports";
import { ExportError, type ExportModel } from "./export-model";

/** Image name (as in images.json) -> the photo's bytes. */
export type ImageBytes = ReadonlyMap<string, Uint8Array>;

/** Where each photo-carrying format expects the photos. */
export const PHOTO_DIRECTORY: Partial<Record<ExportFormat, string>> = {
  nerfstudio: "images",
  instant_ngp: "images",
  gaussian_splatting: "images",
  kapture: "sensors/records_data",
};

/** A photo the caller places at `path` itself (the photo of image `image_name`). */
export interface PhotoPlacement {
  path: string;
  image_name: string;
}

/**
 * Puts the photos of a `format` export in place: copies `photos` bytes into `files`, or answers
 * the placements when they are `"referenced"`. None when the format carries no photos, when no
 * photos are asked for, or when they would take `files` past `maxFiles` (then with a warning).
 */
export function placePhotos(
  format: ExportFormat,
  model: ExportModel,
  files: Map<string, Uint8Array>,
  photos: ImageBytes | "referenced" | undefined,
  maxFiles: number,
  warnings: string[],
): PhotoPlacement[] {
  const directory = PHOTO_DIRECTORY[format];
  if (!directory) return [];
  const placed = model.images.map((image) => ({ path: `${directory}/${image.name}`, image_name: image.name }));
  const where = `place them under ${directory}/ with their image names`;
  if (photos === undefined) {
    warnings.push(`photos not included: ${where}`);
    return [];
  }
  if (files.size + placed.length > maxFiles) {
    warnings.push(
      `photos not included: ${placed.length} photos would take the export past the ${maxFiles} files an artifact lists; ${where}`,
    );
    return [];
  }
  if (photos === "referenced") return placed;
  for (const p of placed) {
    const bytes = photos.get(p.image_name);
    if (!bytes) throw new ExportError("missing_image", `no bytes given for image ${p.image_name}`);
    files.set(p.path, bytes);
  }
  return [];
}

/**
 * @module Photos copied into an export (nerfstudio, instant-ngp, 3DGS, kapture all read them
 * beside the poses). The caller passes the bytes it has; an export either holds every registered
 * image or none (then a warning says where the trainer expects them).
 */
import { ExportError, type ExportModel } from "./export-model";

/** Image name (as in images.json) -> the photo's bytes. */
export type ImageBytes = ReadonlyMap<string, Uint8Array>;

export function addImageFiles(files: Map<string, Uint8Array>, model: ExportModel, directory: string, imageBytes: ImageBytes | undefined, warnings: string[]): void {
  if (!imageBytes) {
    warnings.push(`photos not included: place them under ${directory}/ with their image names`);
    return;
  }
  for (const image of model.images) {
    const bytes = imageBytes.get(image.name);
    if (!bytes) throw new ExportError("missing_image", `no bytes given for image ${image.image_id} (${image.name})`);
    files.set(`${directory}/${image.name}`, bytes);
  }
}

/**
 * @module Single EXIF tags read from an image's head bytes, with no storage around them: the
 * orientation (thumbnails) and the 35 mm-equivalent focal length (read once at finalize, the
 * runner's prior; the mapping benchmark reads the shared photos with the same function).
 */
import exifr from "exifr";

/** The EXIF orientation (1-8) of an image; 1, upright, when it has none or it cannot be read. */
export async function readOrientation(bytes: Uint8Array): Promise<number> {
  try {
    const o = await exifr.orientation(bytes);
    return typeof o === "number" && o >= 1 && o <= 8 ? o : 1;
  } catch {
    return 1;
  }
}

/**
 * The EXIF FocalLengthIn35mmFormat of an image (from its head), when it has a positive one: the
 * runner's prior focal length (COLMAP's ImageReader rule). Null without EXIF, for a 0 ("unknown")
 * or when the head cannot be read.
 */
export async function readFocalLength35mm(head: Uint8Array): Promise<number | null> {
  try {
    const f = ((await exifr.parse(head, { pick: ["FocalLengthIn35mmFormat"] })) as { FocalLengthIn35mmFormat?: unknown } | undefined)?.FocalLengthIn35mmFormat;
    return typeof f === "number" && Number.isFinite(f) && f > 0 ? f : null;
  } catch {
    return null;
  }
}

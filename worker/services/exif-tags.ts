/**
 * @module Single EXIF tags read from an image's head bytes, with no storage around them: the
 * orientation (thumbnails), the 35 mm-equivalent focal length (read once at finalize, the
 * runner's prior; the mapping benchmark reads the shared photos with the same function) and the
 * GPS position (read once at finalize: image metadata the mapper and georegistration use).
 */
import exifr from "exifr";
import type { GpsCoord } from "../../protocol/schemas/geo";

/** The EXIF orientation (1-8) of an image; 1, upright, when it has none or it cannot be read. */
export async function readOrientation(bytes: Uint8Array): Promise<number> {
  try {
    const o = await exifr.orientation(bytes);
    return typeof o === "number" && o >= 1 && o <= 8 ? o : 1;
  } catch {
    return 1;
  }
}

/** Shapes (larger over smaller side) this close are one: resizing rounds each side to a whole pixel. */
const SAME_SHAPE_TOLERANCE = 0.01;

/**
 * The EXIF FocalLengthIn35mmFormat of an image (from its head) whose stored pixels are `width` x
 * `height`, when it has a positive one: the runner's prior focal length (COLMAP's ImageReader
 * rule). Null without EXIF, for a 0 ("unknown") or when the head cannot be read. Null too when
 * the EXIF pixel dimensions (PixelXDimension x PixelYDimension) are of another shape than the
 * stored pixels, either way round: the photo was cropped after it was taken and kept its
 * original's EXIF, whose focal length, read at the cropped size, is short by the crop (a photo
 * cropped to half its width would start at half its focal length, held by a prior). It then
 * starts as a photo without EXIF does. A resized photo keeps its shape, and its focal length as
 * a fraction of its larger side, so it keeps the prior; COLMAP keeps it in both cases.
 */
export async function readFocalLength35mm(head: Uint8Array, width: number, height: number): Promise<number | null> {
  try {
    const tags = (await exifr.parse(head, { pick: ["FocalLengthIn35mmFormat", "ExifImageWidth", "ExifImageHeight"] })) as
      { FocalLengthIn35mmFormat?: unknown; ExifImageWidth?: unknown; ExifImageHeight?: unknown } | undefined;
    const f = tags?.FocalLengthIn35mmFormat;
    if (!(typeof f === "number" && Number.isFinite(f) && f > 0)) return null;
    const [w, h] = [tags?.ExifImageWidth, tags?.ExifImageHeight];
    if (typeof w === "number" && typeof h === "number" && w > 0 && h > 0) {
      const shape = (a: number, b: number) => Math.max(a, b) / Math.min(a, b);
      if (Math.abs(shape(w, h) / shape(width, height) - 1) > SAME_SHAPE_TOLERANCE) return null;
    }
    return f;
  } catch {
    return null;
  }
}

/** The EXIF GPS block of an image head as a GpsCoord (hemisphere and altitude references applied); null without a position. */
export async function readGps(head: Uint8Array): Promise<GpsCoord | null> {
  try {
    const t = ((await exifr.parse(head, { tiff: false, exif: false, gps: true, translateValues: false, reviveValues: true })) ??
      {}) as Record<string, unknown>;
    const num = (k: string) => (typeof t[k] === "number" && Number.isFinite(t[k]) ? (t[k] as number) : null);
    const latitude = num("latitude");
    const longitude = num("longitude");
    if (latitude === null || longitude === null || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return null;
    const altitude = num("GPSAltitude");
    // GPSAltitudeRef 1: below sea level.
    const below = t.GPSAltitudeRef === 1 || (t.GPSAltitudeRef instanceof Uint8Array && t.GPSAltitudeRef[0] === 1);
    const accuracy = num("GPSHPositioningError");
    return {
      latitude,
      longitude,
      altitude: altitude === null ? null : below ? -altitude : altitude,
      horizontal_accuracy_m: accuracy !== null && accuracy > 0 ? accuracy : null,
    };
  } catch {
    return null;
  }
}

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

/**
 * The EXIF FocalLengthIn35mmFormat of an image (from its head), when it has a positive one: the
 * runner's prior focal length (COLMAP's ImageReader rule). Null without EXIF, for a 0 ("unknown")
 * or when the head cannot be read.
 */
export async function readFocalLength35mm(head: Uint8Array): Promise<number | null> {
  try {
    const f = ((await exifr.parse(head, { pick: ["FocalLengthIn35mmFormat"] })) as { FocalLengthIn35mmFormat?: unknown } | undefined)
      ?.FocalLengthIn35mmFormat;
    return typeof f === "number" && Number.isFinite(f) && f > 0 ? f : null;
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

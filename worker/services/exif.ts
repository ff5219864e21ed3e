/** @module EXIF of a stored image (spec 4.5 `/exif`), parsed with exifr from the file's head. */
import exifr from "exifr";
import type { ImageExif } from "../../protocol";
import { notFound } from "../errors";
import { readGps } from "./exif-tags";

/** EXIF lives in the first APP1 segment, at most 64 KiB, near the start of the file. */
const EXIF_HEAD_BYTES = 256 * 1024;

/** Dates become ISO strings and typed arrays plain lists, so every tag is JSON-safe. */
function jsonSafe(v: unknown): unknown {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (ArrayBuffer.isView(v)) return v.byteLength > 64 ? `<${v.byteLength} bytes>` : Array.from(v as Uint8Array);
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonSafe(x)]));
  return typeof v === "number" && !Number.isFinite(v) ? null : v;
}

export async function readExif(bucket: R2Bucket, key: string, imageId: string): Promise<ImageExif> {
  const obj = await bucket.get(key, { range: { offset: 0, length: EXIF_HEAD_BYTES } });
  if (!obj) throw notFound("image bytes");
  let tags: Record<string, unknown> = {};
  const head = new Uint8Array(await obj.arrayBuffer());
  try {
    tags = ((await exifr.parse(head, { tiff: true, exif: true, gps: true, translateValues: false, reviveValues: true })) ?? {}) as Record<
      string,
      unknown
    >;
  } catch {
    // Not an EXIF-bearing format, or a truncated header: report no tags.
  }
  const num = (k: string) => (typeof tags[k] === "number" ? (tags[k] as number) : null);
  const str = (k: string) => (typeof tags[k] === "string" ? (tags[k] as string).trim() || null : null);
  const date = tags.DateTimeOriginal instanceof Date ? (jsonSafe(tags.DateTimeOriginal) as string | null) : str("DateTimeOriginal");
  return {
    image_id: imageId,
    orientation: num("Orientation"),
    make: str("Make"),
    model: str("Model"),
    focal_length_mm: num("FocalLength"),
    focal_length_35mm: num("FocalLengthIn35mmFormat"),
    datetime_original: date,
    gps: await readGps(head),
    tags: jsonSafe(tags) as Record<string, unknown>,
  };
}

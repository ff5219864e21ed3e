/**
 * @module Thumbnails (spec 4.5 `/v1/images/{image_id}/thumbnail?size=N`): the stored image is
 * decoded (JPEG by MozJPEG, PNG by squoosh's png codec, both wasm), resized so that its longest
 * side is N (never enlarged), turned upright per its EXIF orientation, encoded as JPEG and cached
 * in R2 under the blob's key, by (sha, size): each thumbnail is computed once, and it is deleted
 * with the blob's bytes.
 */
import encodeJpeg, { init as initJpegEncoder } from "@jsquash/jpeg/encode";
import resize, { initResize } from "@jsquash/resize";
// wrangler and the vitest pool import `.wasm` files as compiled WebAssembly.Module objects (see decode.ts).
import JPEG_ENCODER from "@jsquash/jpeg/codec/enc/mozjpeg_enc.wasm";
// @ts-expect-error wasm-bindgen's .wasm.d.ts types the file as instance exports, not as the module wrangler imports
import RESIZER from "@jsquash/resize/lib/resize/pkg/squoosh_resize_bg.wasm";
import { DECODERS, MAX_DECODE_PIXELS, orient } from "./decode";
import { notFound, validation } from "../errors";
import { readOrientation } from "./exif-tags";

export const THUMBNAIL_SIZES = { min: 16, max: 1024, default: 256 } as const;
/** Bumped whenever the pixels produced change (codec, quality, filter): new keys and ETags. */
const THUMBNAIL_VERSION = 1;
const JPEG_QUALITY = 80;

export const thumbnailKey = (blobKey: string, size: number) => `${blobKey}/thumbnails/v${THUMBNAIL_VERSION}-${size}.jpg`;
export const thumbnailEtag = (sha: string, size: number) => `"${sha}-t${size}-v${THUMBNAIL_VERSION}"`;

export interface ThumbnailSource {
  blobKey: string;
  mediaType: string | null;
  width: number | null;
  height: number | null;
}

/** Rejects what cannot be thumbnailed, before any byte is read. */
export function checkThumbnailable(src: ThumbnailSource): void {
  if (!src.mediaType || !DECODERS[src.mediaType]) {
    throw validation(`thumbnails are made from JPEG and PNG images; this one is ${src.mediaType ?? "not a recognised image"}`, [
      { path: "media_type", message: "unsupported image format for thumbnails", code: "unsupported_media_type" },
    ]);
  }
  if ((src.width ?? 0) * (src.height ?? 0) > MAX_DECODE_PIXELS) {
    throw validation(`the image has more than ${MAX_DECODE_PIXELS} pixels, too many to decode here`, [
      { path: "width", message: "image too large for a thumbnail", code: "image_too_large" },
    ]);
  }
}

/** Makes sure the thumbnail exists in R2 (computing it on first request) and returns its byte length. */
export async function ensureThumbnail(bucket: R2Bucket, src: ThumbnailSource, size: number): Promise<number> {
  const key = thumbnailKey(src.blobKey, size);
  const cached = await bucket.head(key);
  if (cached) return cached.size;
  const original = await bucket.get(src.blobKey);
  if (!original) throw notFound("image bytes");
  const bytes = await original.arrayBuffer();
  const jpeg = await makeThumbnail(bytes, DECODERS[src.mediaType!]!, size);
  await bucket.put(key, jpeg, { httpMetadata: { contentType: "image/jpeg" } });
  return jpeg.byteLength;
}

async function makeThumbnail(bytes: ArrayBuffer, decode: (b: ArrayBuffer) => Promise<ImageData>, size: number): Promise<ArrayBuffer> {
  let image: ImageData;
  try {
    image = await decode(bytes);
  } catch {
    throw validation("the image bytes cannot be decoded", [
      { path: "content_sha", message: "corrupt or truncated image", code: "undecodable" },
    ]);
  }
  const orientation = await readOrientation(new Uint8Array(bytes));
  const scale = Math.min(1, size / Math.max(image.width, image.height));
  const width = Math.max(1, Math.round(image.width * scale));
  const height = Math.max(1, Math.round(image.height * scale));
  if (scale < 1) {
    await initResize(RESIZER);
    image = await resize(image, { width, height, method: "lanczos3", fitMethod: "stretch", premultiply: true, linearRGB: true });
  }
  await initJpegEncoder(JPEG_ENCODER);
  return encodeJpeg(orient(image, orientation), { quality: JPEG_QUALITY });
}

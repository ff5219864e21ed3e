/**
 * @module Thumbnails (spec 4.5 `/v1/images/{image_id}/thumbnail?size=N`): the stored image is
 * decoded (JPEG by MozJPEG, PNG by squoosh's png codec, both wasm), resized so that its longest
 * side is N (never enlarged), turned upright per its EXIF orientation, encoded as JPEG and cached
 * in R2 under the blob's key, by (sha, size): each thumbnail is computed once, and it is deleted
 * with the blob's bytes.
 */
import decodeJpeg, { init as initJpegDecoder } from "@jsquash/jpeg/decode";
import encodeJpeg, { init as initJpegEncoder } from "@jsquash/jpeg/encode";
import { decode as decodePng, init as initPngCodec } from "@jsquash/png/decode";
import resize, { initResize } from "@jsquash/resize";
// wrangler and the vitest pool import `.wasm` files as compiled WebAssembly.Module objects: workerd
// does not compile wasm from bytes at run time, so the codecs are handed their modules.
import JPEG_DECODER from "@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm";
import JPEG_ENCODER from "@jsquash/jpeg/codec/enc/mozjpeg_enc.wasm";
// @ts-expect-error wasm-bindgen's .wasm.d.ts types the file as instance exports, not as the module wrangler imports
import PNG_CODEC from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm";
// @ts-expect-error as above
import RESIZER from "@jsquash/resize/lib/resize/pkg/squoosh_resize_bg.wasm";
import { notFound, validation } from "../errors";
import { readOrientation } from "./exif-tags";

export const THUMBNAIL_SIZES = { min: 16, max: 1024, default: 256 } as const;
/** Bumped whenever the pixels produced change (codec, quality, filter): new keys and ETags. */
const THUMBNAIL_VERSION = 1;
const JPEG_QUALITY = 80;
/** Decoded RGBA must fit a Worker's 128 MiB with room for the resize: about 24 MP. */
const MAX_SOURCE_PIXELS = 24_000_000;

export const thumbnailKey = (blobKey: string, size: number) => `${blobKey}/thumbnails/v${THUMBNAIL_VERSION}-${size}.jpg`;
export const thumbnailEtag = (sha: string, size: number) => `"${sha}-t${size}-v${THUMBNAIL_VERSION}"`;

const DECODERS: Record<string, (bytes: ArrayBuffer) => Promise<ImageData>> = {
  "image/jpeg": async (bytes) => {
    await initJpegDecoder(JPEG_DECODER);
    return decodeJpeg(bytes);
  },
  "image/png": async (bytes) => {
    await initPngCodec(PNG_CODEC);
    return decodePng(bytes);
  },
};

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
  if ((src.width ?? 0) * (src.height ?? 0) > MAX_SOURCE_PIXELS) {
    throw validation(`the image has more than ${MAX_SOURCE_PIXELS} pixels, too many to decode here`, [
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
    throw validation("the image bytes cannot be decoded", [{ path: "content_sha", message: "corrupt or truncated image", code: "undecodable" }]);
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

/**
 * The pixels as they are meant to be seen, for EXIF orientations 1-8 (TIFF 6.0 tag 274): where
 * source pixel (x, y) of a W x H image lands. 5-8 swap width and height.
 */
const PLACEMENT: Record<number, (x: number, y: number, w: number, h: number) => [number, number]> = {
  2: (x, y, w) => [w - 1 - x, y],
  3: (x, y, w, h) => [w - 1 - x, h - 1 - y],
  4: (x, y, _w, h) => [x, h - 1 - y],
  5: (x, y) => [y, x],
  6: (x, y, _w, h) => [h - 1 - y, x],
  7: (x, y, w, h) => [h - 1 - y, w - 1 - x],
  8: (x, y, w) => [y, w - 1 - x],
};

export function orient(image: ImageData, orientation: number): ImageData {
  const place = PLACEMENT[orientation];
  if (!place) return image;
  const { width: w, height: h } = image;
  const swap = orientation >= 5;
  const outWidth = swap ? h : w;
  const src = new Uint32Array(image.data.buffer, image.data.byteOffset, w * h);
  const dst = new Uint32Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const [u, v] = place(x, y, w, h);
      dst[v * outWidth + u] = src[y * w + x]!;
    }
  }
  return new ImageData(new Uint8ClampedArray(dst.buffer), outWidth, swap ? w : h);
}

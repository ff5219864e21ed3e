/**
 * @module Decoding stored photos inside the Worker, for what the service computes from pixels
 * itself (thumbnails, 4.5; dHash similarity, 4.11): JPEG by MozJPEG and PNG by squoosh's png
 * codec, both wasm, and EXIF orientation applied on request.
 */
import decodeJpeg, { init as initJpegDecoder } from "@jsquash/jpeg/decode";
import { decode as decodePng, init as initPngCodec } from "@jsquash/png/decode";
// wrangler and the vitest pool import `.wasm` files as compiled WebAssembly.Module objects: workerd
// does not compile wasm from bytes at run time, so the codecs are handed their modules.
import JPEG_DECODER from "@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm";
// @ts-expect-error wasm-bindgen's .wasm.d.ts types the file as instance exports, not as the module wrangler imports
import PNG_CODEC from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm";

/** Decoded RGBA must fit a Worker's 128 MiB with room for what follows (a resize): about 24 MP. */
export const MAX_DECODE_PIXELS = 24_000_000;

export const DECODERS: Record<string, (bytes: ArrayBuffer) => Promise<ImageData>> = {
  "image/jpeg": async (bytes) => {
    await initJpegDecoder(JPEG_DECODER);
    return decodeJpeg(bytes);
  },
  "image/png": async (bytes) => {
    await initPngCodec(PNG_CODEC);
    return decodePng(bytes);
  },
};

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

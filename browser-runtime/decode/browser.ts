/**
 * @module Image decoding in browsers and Web Workers: the platform's own decoder
 * (createImageBitmap) drawn into an OffscreenCanvas, with no colour-space conversion and no
 * premultiplied alpha, so pixel values match a plain JPEG decode (../shared/notes/toolchain.md).
 */
import type { DecodedImage } from "../stages/extract";

export interface BrowserDecodeOptions {
  /** Apply the EXIF Orientation tag (the dataset's `respect_exif_orientation`). Default false, like COLMAP. */
  respectExifOrientation?: boolean;
}

/** Encodes 8-bit RGBA pixels as JPEG (at `quality`, 1-100) or PNG with the platform's encoder. */
export async function encodeImageInBrowser(image: DecodedImage, format: "jpeg" | "png", quality = 95): Promise<Uint8Array> {
  if (image.channels !== 4) throw new RangeError("encodeImageInBrowser: RGBA pixels");
  const canvas = new OffscreenCanvas(image.width, image.height);
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error("encode: no 2D context for OffscreenCanvas");
  ctx.putImageData(new ImageData(Uint8ClampedArray.from(image.data), image.width, image.height), 0, 0);
  const blob = await canvas.convertToBlob({ type: format === "png" ? "image/png" : "image/jpeg", quality: quality / 100 });
  return new Uint8Array(await blob.arrayBuffer());
}

export async function decodeImageInBrowser(bytes: Uint8Array | Blob, options: BrowserDecodeOptions = {}): Promise<DecodedImage> {
  const blob = bytes instanceof Blob ? bytes : new Blob([bytes as BlobPart]);
  const bitmap = await createImageBitmap(blob, {
    colorSpaceConversion: "none",
    premultiplyAlpha: "none",
    imageOrientation: options.respectExifOrientation ? "from-image" : "none",
  });
  try {
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    if (!ctx) throw new Error("decode: no 2D context for OffscreenCanvas");
    ctx.drawImage(bitmap, 0, 0);
    const { data, width, height } = ctx.getImageData(0, 0, bitmap.width, bitmap.height);
    return { data, width, height, channels: 4 };
  } finally {
    bitmap.close();
  }
}

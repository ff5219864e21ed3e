/**
 * @module Image decoding for Node (tests, benchmarks, a Node runner): libvips through
 * `sharp`, the fastest offline decoder here (see ../shared/notes/toolchain.md). Browsers
 * decode with createImageBitmap/ImageDecoder instead; both hand the stages the same
 * `DecodedImage`.
 */
import sharp from "sharp";
import type { DecodedImage } from "../stages/extract";

export interface DecodeOptions {
  /** Apply the EXIF Orientation tag (the dataset's `respect_exif_orientation`). Default false, like COLMAP. */
  respectExifOrientation?: boolean;
}

/** Encodes 8-bit interleaved pixels as JPEG (at `quality`) or PNG. */
export async function encodeImage(image: DecodedImage, format: "jpeg" | "png", quality = 95): Promise<Uint8Array> {
  const pipeline = sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } });
  const out = format === "png" ? await pipeline.png().toBuffer() : await pipeline.jpeg({ quality }).toBuffer();
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** Decodes JPEG/PNG/WebP/TIFF bytes (or a file path) to 8-bit interleaved pixels (1 to 4 channels). */
export async function decodeImage(input: string | Uint8Array, options: DecodeOptions = {}): Promise<DecodedImage> {
  let pipeline = sharp(input, { failOn: "none", limitInputPixels: false });
  // rotate() without an angle applies the EXIF orientation and drops the tag.
  if (options.respectExifOrientation) pipeline = pipeline.rotate();
  const { data, info } = await pipeline.raw({ depth: "uchar" }).toBuffer({ resolveWithObject: true });
  const channels = info.channels as 1 | 2 | 3 | 4;
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels,
  };
}

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

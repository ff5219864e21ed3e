/**
 * @module Grid thumbnails made in the browser: each photo decoded once at a small width
 * (createImageBitmap resizes while decoding, EXIF orientation applied) and kept as a small JPEG,
 * so a phone never holds hundreds of full-size decodes. Decoding is the readability check too: a
 * damaged or mislabelled file rejects. A few at a time, to bound memory.
 */
const THUMBNAIL_WIDTH = 240;
const PARALLEL_DECODES = 4;

let running = 0;
const waiting: (() => void)[] = [];

async function slot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= PARALLEL_DECODES) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** An object URL of the photo's thumbnail; rejects when the browser cannot decode the file. */
export function thumbnailUrl(file: Blob): Promise<string> {
  return slot(async () => {
    const bitmap = await createImageBitmap(file, { resizeWidth: THUMBNAIL_WIDTH, resizeQuality: "medium" });
    try {
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
      canvas.getContext("2d")!.drawImage(bitmap, 0, 0);
      return URL.createObjectURL(await canvas.convertToBlob({ type: "image/jpeg", quality: 0.8 }));
    } finally {
      bitmap.close();
    }
  });
}

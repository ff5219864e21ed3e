/** @module Synthetic equirectangular panoramas for the projection and spherical-pipeline suites. */
import sharp from "sharp";

export interface RawImage {
  rgba: Uint8Array;
  width: number;
  height: number;
}

/** A 512 x 256 panorama: colour by viewing direction (SPHERICAL geometry) plus stripes; `seed` varies it. */
export function stripedPanorama(seed: number): RawImage {
  const [width, height] = [512, 256];
  const rgba = new Uint8Array(4 * width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const lon = ((x + 0.5) / width - 0.5) * 2 * Math.PI;
      const lat = ((y + 0.5) / height - 0.5) * Math.PI;
      const stripes = Math.sin(7 * lon + seed) * Math.cos(5 * lat) > 0 ? 80 : 0;
      rgba.set([(1 + Math.cos(lat) * Math.sin(lon)) * 80 + stripes, (1 + Math.sin(lat)) * 110, (1 + Math.cos(lat) * Math.cos(lon)) * 60 + seed * 10, 255], 4 * (y * width + x));
    }
  }
  return { rgba, width, height };
}

export async function encodePng(image: RawImage): Promise<Uint8Array> {
  return new Uint8Array(await sharp(image.rgba, { raw: { width: image.width, height: image.height, channels: 4 } }).png().toBuffer());
}

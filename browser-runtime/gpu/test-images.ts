/**
 * @module Inputs for the SIFT agreement tests and benchmarks: a deterministic synthetic image
 * (Gaussian blobs of several sizes on a smooth texture: extrema at every octave) and the shared
 * photo sets decoded to 8-bit gray in Node.
 */

import { grayFromRgb } from "./preprocess";

/** Intensities in [0, 1], row-major. Pure arithmetic, so Node and browsers build the same bytes. */
export function syntheticImage(width: number, height: number): Float32Array {
  const data = new Float32Array(width * height);
  const blobs: [number, number, number, number][] = [];
  // A fixed pseudo-random layout (LCG) of bright and dark blobs, radii 2..14 px.
  let state = 12345;
  const next = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let i = 0; i < 40; i++) blobs.push([next() * width, next() * height, 2 + 12 * next() ** 2, next() < 0.5 ? 0.35 : -0.35]);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let v = 0.5 + 0.08 * Math.sin(x * 0.21) * Math.cos(y * 0.17);
      for (const [cx, cy, r, a] of blobs) v += a * Math.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r));
      data[y * width + x] = Math.min(1, Math.max(0, v));
    }
  }
  return data;
}

export interface GrayPhoto {
  name: string;
  width: number;
  height: number;
  gray: Uint8Array;
}

/** The shared photo sets (never copied into the repository). */
export const DATASETS_DIR = new URL("../../../shared/datasets/", import.meta.url);

/** Decodes a photo of a shared set to 8-bit gray (Node only, sharp), in its stored pixel frame. */
export async function loadGrayPhoto(set: string, file: string): Promise<GrayPhoto> {
  const { default: sharp } = await import("sharp");
  const { data, info } = await sharp(new URL(`${set}/images/${file}`, DATASETS_DIR).pathname)
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const gray = info.channels === 1 ? new Uint8Array(data) : grayFromRgb(data, info.channels === 4 ? 4 : 3);
  return { name: `${set}/${file}`, width: info.width, height: info.height, gray };
}

/** File names of a shared set, sorted. */
export async function photoNames(set: string): Promise<string[]> {
  const { readdir } = await import("node:fs/promises");
  return (await readdir(new URL(`${set}/images/`, DATASETS_DIR))).filter((f) => /\.(jpe?g|png)$/i.test(f)).sort();
}

/**
 * @module Real inputs for the SIFT agreement tests and benchmarks: the shared photo sets decoded
 * to 8-bit gray in Node (the extract stage's decoder and gray conversion).
 */

import { toGray8 } from "../stages/extract";

export interface GrayPhoto {
  name: string;
  width: number;
  height: number;
  gray: Uint8Array;
}

/** The shared photo sets (never copied into the repository). */
export const DATASETS_DIR = new URL("../../../shared/datasets/", import.meta.url);

/** Decodes a photo of a shared set to 8-bit gray with the extract stage's decoder and luma (Node only). */
export async function loadGrayPhoto(set: string, file: string): Promise<GrayPhoto> {
  const { decodeImage } = await import("../decode/node");
  const image = await decodeImage(new URL(`${set}/images/${file}`, DATASETS_DIR).pathname);
  return { name: `${set}/${file}`, width: image.width, height: image.height, gray: toGray8(image) };
}

/** File names of a shared set, sorted. */
export async function photoNames(set: string): Promise<string[]> {
  const { readdir } = await import("node:fs/promises");
  return (await readdir(new URL(`${set}/images/`, DATASETS_DIR))).filter((f) => /\.(jpe?g|png)$/i.test(f)).sort();
}

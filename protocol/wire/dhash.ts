/**
 * @module The dHash similarity index (spec 4.11 rule 1, 2.12 `retrieval_strategy: dhash`): the
 * 64-bit difference hash of an image, the Hamming distance between two, and the index file that
 * holds one per image. One definition for the service (which hashes on `:build` and lazily on a
 * query) and the runners (which hash in a pipeline's `vlad_index` task), so both give the same bits.
 *
 * The hash (Krawetz's dHash): the image's luma averaged over a 9 x 8 grid of equal cells (every
 * pixel counted in the cell holding its centre, so a resized copy averages the same regions), then
 * one bit per horizontally adjacent pair of cells, set when the left one is brighter; 8 rows of 8
 * bits, row-major, most significant bit first, written as 16 lower-case hex digits.
 */
import { z } from "zod";
import type { ArtifactDescriptor } from "../artifacts";
import { Sha256 } from "../schemas/common";

/** What the hash reads: 8-bit interleaved pixels, 1 (gray), 2 (gray, alpha), 3 (RGB) or 4 (RGBA) channels. */
export interface DhashPixels {
  data: Uint8Array | Uint8ClampedArray;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
}

export const DHASH_BITS = 64;
const COLS = 9;
const ROWS = 8;

/** An image's dHash: 16 lower-case hex digits. */
export const Dhash = z.string().regex(/^[0-9a-f]{16}$/, "must be 16 lower-case hex digits (64 bits)");

const luma = (d: DhashPixels["data"], i: number, channels: number) =>
  channels >= 3 ? 0.299 * d[i]! + 0.587 * d[i + 1]! + 0.114 * d[i + 2]! : d[i]!;

export function dhash(image: DhashPixels): string {
  const { data, width, height, channels } = image;
  if (!(width > 0 && height > 0) || data.length !== width * height * channels) {
    throw new RangeError(`dhash: ${data.length} bytes for ${width}x${height}x${channels}`);
  }
  const sum = new Float64Array(COLS * ROWS);
  const count = new Uint32Array(COLS * ROWS);
  const colOf = Uint8Array.from({ length: width }, (_, x) => Math.min(COLS - 1, Math.floor(((x + 0.5) * COLS) / width)));
  for (let y = 0; y < height; y++) {
    const row = Math.min(ROWS - 1, Math.floor(((y + 0.5) * ROWS) / height)) * COLS;
    let i = y * width * channels;
    for (let x = 0; x < width; x++, i += channels) {
      sum[row + colOf[x]!]! += luma(data, i, channels);
      count[row + colOf[x]!]! += 1;
    }
  }
  // A cell no pixel centre fell in (images narrower than 9 or lower than 8 pixels) takes the pixel under its centre.
  const mean = (r: number, c: number) => {
    const k = r * COLS + c;
    if (count[k]! > 0) return sum[k]! / count[k]!;
    const x = Math.min(width - 1, Math.floor(((c + 0.5) * width) / COLS));
    const y = Math.min(height - 1, Math.floor(((r + 0.5) * height) / ROWS));
    return luma(data, (y * width + x) * channels, channels);
  };
  let hex = "";
  for (let r = 0; r < ROWS; r++) {
    let byte = 0;
    for (let c = 0; c < COLS - 1; c++) byte = (byte << 1) | (mean(r, c) > mean(r, c + 1) ? 1 : 0);
    hex += byte.toString(16).padStart(2, "0");
  }
  return hex;
}

const popcount32 = (v: number) => {
  v -= (v >>> 1) & 0x55555555;
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
};

/** The Hamming distance of two dHashes, in [0, 64]. */
export function hamming(a: string, b: string): number {
  return (
    popcount32(parseInt(a.slice(0, 8), 16) ^ parseInt(b.slice(0, 8), 16)) + popcount32(parseInt(a.slice(8), 16) ^ parseInt(b.slice(8), 16))
  );
}

/** Format id of the index file (a backend-owned format of the core kind `features.global.v1`, 2.11 rule 2). */
export const DHASH_INDEX_FORMAT = "edgesfm.features.global.dhash.v1";
export const DHASH_INDEX_MEDIA_TYPE = "application/json";
/** The index file's path inside its artifact. */
export const DHASH_INDEX_PATH = "similarity/dhash.json";

/**
 * The index: every image of the dataset (in dataset order) by name, with its content and hash. No
 * image ids: an index is reused by any dataset with the same manifest (the same names and bytes).
 */
export const DhashIndex = z.object({
  format: z.literal(DHASH_INDEX_FORMAT),
  bits: z.literal(DHASH_BITS),
  images: z.array(z.object({ name: z.string(), content_sha: Sha256, dhash: Dhash })),
});
export type DhashIndex = z.infer<typeof DhashIndex>;

export const encodeDhashIndex = (images: DhashIndex["images"]): Uint8Array =>
  new TextEncoder().encode(JSON.stringify({ format: DHASH_INDEX_FORMAT, bits: DHASH_BITS, images } satisfies DhashIndex));

/** The index's artifact descriptor (2.11), whoever built it: a `features.global.v1` with its one file. */
export function dhashIndexArtifact(file: ArtifactDescriptor["files"][number], numImages: number, manifestHash: string): ArtifactDescriptor {
  return {
    kind: "features.global.v1",
    name: "dhash similarity index",
    uri: null,
    artifact_format: DHASH_INDEX_FORMAT,
    schema_version: 1,
    media_type: DHASH_INDEX_MEDIA_TYPE,
    summary: { strategy: "dhash", num_images: numImages, bits: DHASH_BITS },
    metadata: { manifest_hash: manifestHash },
    files: [file],
  };
}

export const decodeDhashIndex = (bytes: Uint8Array): DhashIndex => DhashIndex.parse(JSON.parse(new TextDecoder().decode(bytes)));

/**
 * The `k` images nearest to image `query` (an index into `hashes`), itself excluded: ascending by
 * Hamming distance, ties in index order.
 */
export function nearestByHamming(hashes: readonly string[], query: number, k: number): { index: number; distance: number }[] {
  const q = hashes[query]!;
  const all: { index: number; distance: number }[] = [];
  hashes.forEach((h, index) => {
    if (index !== query) all.push({ index, distance: hamming(q, h) });
  });
  all.sort((a, b) => a.distance - b.distance || a.index - b.index);
  return all.slice(0, k);
}

/**
 * @module The VLAD similarity index (spec 4.11 rule 2, 2.12 `retrieval_strategy: vlad`): one
 * L2-normalised 4096-dimensional vector per image, computed by a runner's `vlad` task from the
 * features the extract stage produced (browser-runtime/stages/vlad.ts), read by the Worker for
 * `GET .../similarity?strategy=vlad` and by the matcher for retrieval pairs. Distance is
 * max(0, 1 - cosine), in [0, 2].
 *
 * Binary layout, little-endian: magic `SFMVLAD` then 0x00 (8 bytes), version uint32 = 1, image
 * count N uint32, dimension D uint32, header length H uint32; H bytes of UTF-8 JSON
 * ({@link VladIndexHeader}: the codebook's id and every image of the dataset, in dataset order, by
 * name and content); zero padding to a multiple of 4; N x D float32 (row i is image i's vector).
 */
import { z } from "zod";
import type { ArtifactDescriptor } from "../artifacts";
import { Sha256 } from "../schemas/common";

/** 4.11 rule 2. */
export const VLAD_DIM = 4096;
/** Format id of the index file (a backend-owned format of the core kind `features.global.v1`, 2.11 rule 2). */
export const VLAD_INDEX_FORMAT = "edgesfm.features.global.vlad.v1";
export const VLAD_INDEX_MEDIA_TYPE = "application/octet-stream";
/** The index file's path inside its artifact. */
export const VLAD_INDEX_PATH = "similarity/vlad.bin";

const MAGIC = [0x53, 0x46, 0x4d, 0x56, 0x4c, 0x41, 0x44, 0x00]; // "SFMVLAD\0"
const FIXED_BYTES = 24;

export const VladIndexHeader = z.object({
  codebook: z.string().min(1),
  images: z.array(z.object({ name: z.string(), content_sha: Sha256 })),
});
export type VladIndexHeader = z.infer<typeof VladIndexHeader>;

export interface VladIndex extends VladIndexHeader {
  dim: number;
  /** N x dim, row-major. */
  vectors: Float32Array;
}

export function encodeVladIndex(index: VladIndex): Uint8Array {
  const n = index.images.length;
  if (index.vectors.length !== n * index.dim) throw new RangeError(`vlad index: ${index.vectors.length} values for ${n}x${index.dim}`);
  const header = new TextEncoder().encode(JSON.stringify({ codebook: index.codebook, images: index.images } satisfies VladIndexHeader));
  const at = Math.ceil((FIXED_BYTES + header.length) / 4) * 4;
  const bytes = new Uint8Array(at + 4 * index.vectors.length);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC);
  view.setUint32(8, 1, true);
  view.setUint32(12, n, true);
  view.setUint32(16, index.dim, true);
  view.setUint32(20, header.length, true);
  bytes.set(header, FIXED_BYTES);
  index.vectors.forEach((v, i) => view.setFloat32(at + 4 * i, v, true));
  return bytes;
}

export function decodeVladIndex(bytes: Uint8Array): VladIndex {
  const bad = (why: string) => new RangeError(`not a VLAD index: ${why}`);
  if (bytes.length < FIXED_BYTES || MAGIC.some((b, i) => bytes[i] !== b)) throw bad("bad magic");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(8, true) !== 1) throw bad(`version ${view.getUint32(8, true)}`);
  const n = view.getUint32(12, true);
  const dim = view.getUint32(16, true);
  const h = view.getUint32(20, true);
  const at = Math.ceil((FIXED_BYTES + h) / 4) * 4;
  if (bytes.length !== at + 4 * n * dim) throw bad(`${bytes.length} bytes for ${n} vectors of ${dim}`);
  const header = VladIndexHeader.parse(JSON.parse(new TextDecoder().decode(bytes.subarray(FIXED_BYTES, FIXED_BYTES + h))));
  if (header.images.length !== n) throw bad(`${header.images.length} images for ${n} vectors`);
  const vectors = new Float32Array(n * dim);
  for (let i = 0; i < vectors.length; i += 1) vectors[i] = view.getFloat32(at + 4 * i, true);
  return { ...header, dim, vectors };
}

/** The index's artifact descriptor (2.11): a `features.global.v1` with its one file. */
export function vladIndexArtifact(
  file: ArtifactDescriptor["files"][number],
  numImages: number,
  manifestHash: string,
  codebook: string,
): ArtifactDescriptor {
  return {
    kind: "features.global.v1",
    name: "vlad similarity index",
    uri: null,
    artifact_format: VLAD_INDEX_FORMAT,
    schema_version: 1,
    media_type: VLAD_INDEX_MEDIA_TYPE,
    summary: { strategy: "vlad", num_images: numImages, dim: VLAD_DIM, codebook },
    metadata: { manifest_hash: manifestHash },
    files: [file],
  };
}

/**
 * The `k` rows nearest to `query` (a vector of `dim` values), the rows in `exclude` left out:
 * ascending by distance max(0, 1 - cosine), ties in index order.
 */
export function nearestByCosine(
  vectors: Float32Array,
  dim: number,
  query: Float32Array,
  k: number,
  exclude: ReadonlySet<number> = new Set(),
): { index: number; distance: number }[] {
  const n = vectors.length / dim;
  const all: { index: number; distance: number }[] = [];
  for (let i = 0; i < n; i += 1) {
    if (exclude.has(i)) continue;
    let s = 0;
    for (let t = 0; t < dim; t += 1) s += vectors[i * dim + t]! * query[t]!;
    all.push({ index: i, distance: Math.max(0, 1 - s) });
  }
  all.sort((a, b) => a.distance - b.distance || a.index - b.index);
  return all.slice(0, k);
}

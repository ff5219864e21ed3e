/**
 * @module VLAD global descriptors (Jégou et al. 2010, with Arandjelović and Zisserman's
 * intra-normalisation, "All about VLAD", 2013) over an image's SIFT descriptors, for retrieval
 * pairs (2.12 `retrieval_strategy: vlad`) and similarity (4.11 rule 2: 4096 dimensions,
 * L2-normalised). Each descriptor is made RootSIFT (L1-normalised, square-rooted: Arandjelović
 * and Zisserman 2012) and assigned to its nearest word of a codebook trained by
 * scripts/train-vocab.ts on ../shared/datasets/vocab-training (never on an evaluation set); the
 * residuals to each word are summed, each word's sum L2-normalised, and the whole vector
 * L2-normalised. 32 words x 128 dimensions = 4096, the spec's size, with no projection.
 */
import { DescriptorKind, type LocalFeatures } from "../../protocol/wire/features";

/** A VLAD codebook as shipped in the repo (`vocab/*.json`): centroids as base64 little-endian float32, row-major. */
export interface CodebookFile {
  format: "edgesfm.vocab.vlad.v1";
  /** The codebook's identity: it enters the index, so vectors from two codebooks are never compared. */
  id: string;
  words: number;
  dim: number;
  descriptor: "rootsift";
  training: Record<string, unknown>;
  centroids: string;
}

export interface Codebook {
  id: string;
  words: number;
  dim: number;
  /** words x dim, row-major. */
  centroids: Float32Array;
}

export function decodeBase64Floats(base64: string): Float32Array {
  const bin = atob(base64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i += 1) bytes[i] = bin.charCodeAt(i);
  const view = new DataView(bytes.buffer);
  return Float32Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(4 * i, true));
}

export function encodeBase64Floats(values: Float32Array): string {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((v, i) => view.setFloat32(4 * i, v, true));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

export function codebookOf(file: CodebookFile): Codebook {
  if (file.format !== "edgesfm.vocab.vlad.v1" || file.descriptor !== "rootsift")
    throw new Error(`not a RootSIFT VLAD codebook: ${file.id}`);
  const centroids = decodeBase64Floats(file.centroids);
  if (centroids.length !== file.words * file.dim)
    throw new Error(`codebook ${file.id}: ${centroids.length} values for ${file.words}x${file.dim}`);
  return { id: file.id, words: file.words, dim: file.dim, centroids };
}

/**
 * RootSIFT descriptors as float32 (n x 128, each of unit L2 norm) from a features file's uint8
 * descriptors: L1-root descriptors (the extract stage's default, COLMAP's L1_ROOT) are RootSIFT
 * already and only rescaled; L2 ones are L1-normalised and square-rooted.
 */
export function rootSift(features: Pick<LocalFeatures, "descriptors" | "descriptorDim" | "descriptorKind">): Float32Array {
  const { descriptors, descriptorDim: d } = features;
  const n = d > 0 ? descriptors.length / d : 0;
  const out = new Float32Array(n * d);
  const root = features.descriptorKind !== DescriptorKind.siftL1Root;
  for (let i = 0; i < n; i += 1) {
    let l1 = 0;
    for (let j = 0; j < d; j += 1) l1 += descriptors[i * d + j]!;
    let l2 = 0;
    for (let j = 0; j < d; j += 1) {
      const v = descriptors[i * d + j]!;
      const x = root ? (l1 > 0 ? Math.sqrt(v / l1) : 0) : v;
      out[i * d + j] = x;
      l2 += x * x;
    }
    const s = l2 > 0 ? 1 / Math.sqrt(l2) : 0;
    for (let j = 0; j < d; j += 1) out[i * d + j]! *= s;
  }
  return out;
}

/** The index of the centroid nearest to row `i` of `x` (squared Euclidean distance; ties to the lower index). */
export function nearestWord(x: Float32Array, i: number, centroids: Float32Array, words: number, dim: number): number {
  let best = 0;
  let bestD = Infinity;
  for (let w = 0; w < words; w += 1) {
    let dist = 0;
    for (let j = 0; j < dim; j += 1) {
      const t = x[i * dim + j]! - centroids[w * dim + j]!;
      dist += t * t;
    }
    if (dist < bestD) {
      bestD = dist;
      best = w;
    }
  }
  return best;
}

/** In-place L2 normalisation of `v[from, to)`; a zero block stays zero. */
function normalise(v: Float32Array, from = 0, to = v.length): void {
  let s = 0;
  for (let i = from; i < to; i += 1) s += v[i]! * v[i]!;
  if (s === 0) return;
  const inv = 1 / Math.sqrt(s);
  for (let i = from; i < to; i += 1) v[i]! *= inv;
}

/** An image's VLAD vector (words x dim values, unit L2 norm; all zero for an image without descriptors). */
export function vlad(features: Pick<LocalFeatures, "descriptors" | "descriptorDim" | "descriptorKind">, codebook: Codebook): Float32Array {
  const { words, dim, centroids } = codebook;
  if (features.descriptorDim !== dim && features.descriptors.length > 0)
    throw new RangeError(`vlad: ${features.descriptorDim}-dimensional descriptors for a ${dim}-dimensional codebook`);
  const x = rootSift(features);
  const n = x.length / dim;
  const v = new Float32Array(words * dim);
  for (let i = 0; i < n; i += 1) {
    const w = nearestWord(x, i, centroids, words, dim);
    for (let j = 0; j < dim; j += 1) v[w * dim + j]! += x[i * dim + j]! - centroids[w * dim + j]!;
  }
  for (let w = 0; w < words; w += 1) normalise(v, w * dim, (w + 1) * dim);
  normalise(v);
  return v;
}

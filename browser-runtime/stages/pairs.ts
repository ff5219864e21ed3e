/**
 * @module Pair selection (spec 2.12 PairsSpec; capabilities `pairs.exhaustive`,
 * `pairs.sequential`, `pairs.retrieval`, `pairs.vocabtree`, `pairs.spatial`, `pairs.from_poses`). Images are
 * identified by name, in the dataset's order.
 */
import type { Vec3 } from "../../engine-wasm/ts/accuracy";
import { nearestByHamming } from "../../protocol/wire/dhash";
import { nearestByCosine } from "../../protocol/wire/vlad";
import { sequenceOrderIndices, sequentialPairIndices } from "../../protocol/wire/pairs";
import { type BagOfWords, nearestByWords } from "./vocab-tree";
import type { DatasetSnapshot } from "../../protocol";
import { type PriorPose, enuPositions, priorPoses } from "./positions";

export interface ImagePair {
  imageName1: string;
  imageName2: string;
}

/** Every unordered pair (i < j), in row-major order: n (n - 1) / 2 pairs. */
export function exhaustivePairs(names: readonly string[]): ImagePair[] {
  const pairs: ImagePair[] = [];
  for (let i = 0; i < names.length; i += 1) {
    for (let j = i + 1; j < names.length; j += 1) pairs.push({ imageName1: names[i]!, imageName2: names[j]! });
  }
  return pairs;
}

/** Each image with its next `overlap` images in sequence order (protocol/wire/pairs.ts sequentialPairIndices). */
export function sequentialPairs(names: readonly string[], overlap = 10): ImagePair[] {
  return sequentialPairIndices(names.length, overlap).map(([i, j]) => ({ imageName1: names[i]!, imageName2: names[j]! }));
}

/**
 * The images' names in sequence order, as sequential pairs read them: by their pose priors' `timestamp_ns` (4.12: timestamps
 * order a sequence) when every image has one, equal ones in the dataset's order; else the dataset's order (by name). A
 * capture's clock says its order where names may not (a camera's counter wrapping, frames of two devices).
 */
export function sequenceOrder(images: readonly Pick<DatasetSnapshot["images"][number], "name" | "pose_prior">[]): string[] {
  return sequenceOrderIndices(images.map((im) => im.pose_prior?.timestamp_ns)).map((i) => images[i]!.name);
}

/**
 * A similarity index as retrieval pairs read it, in image order: dHashes, unit VLAD vectors (`dim`
 * values per image), or bags of visual words of the vocabulary tree (`vocabtree`).
 */
export type RetrievalIndex = { hashes: readonly string[] } | { vectors: Float32Array; dim: number } | { bags: readonly BagOfWords[] };

/** Average query expansion (Chum et al. 2007): a VLAD query is averaged with its first this many neighbours, then asked again. */
export const QUERY_EXPANSION = 3;

/** The `k` images nearest to each image (itself excluded), best first. */
function neighbours(index: RetrievalIndex, n: number, k: number): number[][] {
  if ("hashes" in index) return Array.from({ length: n }, (_, i) => nearestByHamming(index.hashes, i, k).map((x) => x.index));
  if ("bags" in index) return nearestByWords(index.bags, k);
  const { vectors, dim } = index;
  return Array.from({ length: n }, (_, i) => {
    const self = new Set([i]);
    const query = vectors.slice(i * dim, (i + 1) * dim);
    for (const { index: j } of nearestByCosine(vectors, dim, query, QUERY_EXPANSION, self))
      for (let t = 0; t < dim; t += 1) query[t]! += vectors[j * dim + t]!;
    let norm = 0;
    for (let t = 0; t < dim; t += 1) norm += query[t]! * query[t]!;
    for (let t = 0; t < dim; t += 1) query[t]! /= Math.sqrt(norm) || 1;
    return nearestByCosine(vectors, dim, query, k, self).map((x) => x.index);
  });
}

/**
 * Whether the dataset's order is a sequence (video frames, a walk): consecutive images retrieve
 * each other far more often than chance. Image i + 1 is among i's `k` neighbours for at least
 * half of the images and for more than halfway from chance (k / (n - 1)) to always.
 */
export function looksOrdered(nearest: readonly number[][]): boolean {
  const n = nearest.length;
  if (n < 3) return false;
  const k = nearest[0]!.length;
  let hits = 0;
  for (let i = 0; i + 1 < n; i += 1) if (nearest[i]!.includes(i + 1)) hits += 1;
  return hits / (n - 1) >= Math.max(0.5, (1 + k / (n - 1)) / 2);
}

/**
 * Retrieval pairs (2.12 `retrieval` and `vocabtree`, `retrieval_k`): each image with its `k`
 * nearest images in the similarity index (dHash: Hamming distance, ties in dataset order; VLAD:
 * cosine, with average query expansion; vocabulary tree: tf-idf histogram intersection), and, when
 * the VLAD or vocabulary-tree neighbours show the dataset is ordered (`looksOrdered`),
 * with its next `overlap` images too, as the sequential strategy pairs them. Each unordered pair
 * once, as (i, j) with i < j, in row-major order. An image is paired with the k it retrieves and
 * with every image that retrieves it, so no image is left out.
 */
export function retrievalPairs(names: readonly string[], index: RetrievalIndex, k: number, overlap = 10): ImagePair[] {
  const count = "hashes" in index ? index.hashes.length : "bags" in index ? index.bags.length : index.vectors.length / index.dim;
  if (count !== names.length) throw new RangeError(`retrieval pairs: an index of ${count} images for ${names.length} images`);
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`retrieval pairs: retrieval_k must be a positive integer, got ${k}`);
  const partners = names.map(() => new Set<number>());
  const nearest = neighbours(index, names.length, k);
  nearest.forEach((js, i) => {
    for (const j of js) partners[Math.min(i, j)]!.add(Math.max(i, j));
  });
  if (!("hashes" in index) && looksOrdered(nearest)) {
    for (let i = 0; i < names.length; i += 1) for (let w = 1; w <= overlap && i + w < names.length; w += 1) partners[i]!.add(i + w);
  }
  return partners.flatMap((js, i) => [...js].sort((a, b) => a - b).map((j) => ({ imageName1: names[i]!, imageName2: names[j]! })));
}

/**
 * Spatial and from-poses pairs keep at most this many nearest partners per image (COLMAP's spatial
 * matcher `max_num_neighbors`), so a dense cluster does not turn into exhaustive matching.
 */
export const MAX_SPATIAL_NEIGHBORS = 50;
/** `overlap_distance_m` when the spec leaves it null: COLMAP's spatial matcher `max_distance`. */
export const DEFAULT_OVERLAP_DISTANCE = 100;

/**
 * Pairs of images close to each other: each image with a position is paired with its nearest
 * `maxNeighbors` images within `maxDistance` that `accept` also admits (and with each image that
 * pairs with it); each unordered pair once, as (i, j) with i < j, in row-major order. Images
 * without a position get no pairs (as COLMAP's spatial matcher).
 */
function nearbyPairs(
  names: readonly string[],
  positions: readonly (Vec3 | null)[],
  maxDistance: number,
  maxNeighbors: number,
  accept: (i: number, j: number) => boolean = () => true,
): ImagePair[] {
  if (positions.length !== names.length) throw new RangeError(`nearby pairs: ${positions.length} positions for ${names.length} images`);
  const partners = names.map(() => new Set<number>());
  positions.forEach((p, i) => {
    if (!p) return;
    const near: { j: number; d: number }[] = [];
    positions.forEach((q, j) => {
      if (!q || j === i) return;
      const d = Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
      if (d <= maxDistance && accept(i, j)) near.push({ j, d });
    });
    near.sort((a, b) => a.d - b.d || a.j - b.j);
    for (const { j } of near.slice(0, maxNeighbors)) partners[Math.min(i, j)]!.add(Math.max(i, j));
  });
  return partners.flatMap((js, i) => [...js].sort((a, b) => a - b).map((j) => ({ imageName1: names[i]!, imageName2: names[j]! })));
}

/**
 * Spatial pairs (2.12 `spatial`): images within `maxDistance` of each other by `positions` (metres
 * in a local ENU frame for GPS, the priors' units for pose priors), at most `maxNeighbors` nearest each.
 */
export function spatialPairs(
  names: readonly string[],
  positions: readonly (Vec3 | null)[],
  maxDistance = DEFAULT_OVERLAP_DISTANCE,
  maxNeighbors = MAX_SPATIAL_NEIGHBORS,
): ImagePair[] {
  return nearbyPairs(names, positions, maxDistance, maxNeighbors);
}

/**
 * From-poses pairs (2.12 `from_poses`): camera centres within `maxDistance` AND principal axes
 * within `maxAngleDeg` of each other (no angle bound when null), from the images' pose priors.
 */
export function fromPosesPairs(
  names: readonly string[],
  poses: readonly (PriorPose | null)[],
  maxDistance = DEFAULT_OVERLAP_DISTANCE,
  maxAngleDeg: number | null = null,
  maxNeighbors = MAX_SPATIAL_NEIGHBORS,
): ImagePair[] {
  const minCos = maxAngleDeg === null ? -Infinity : Math.cos((Math.min(maxAngleDeg, 180) * Math.PI) / 180);
  const cosine = (a: Vec3, b: Vec3) => (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) / (Math.hypot(...a) * Math.hypot(...b));
  return nearbyPairs(
    names,
    poses.map((p) => p?.centre ?? null),
    maxDistance,
    maxNeighbors,
    (i, j) => cosine(poses[i]!.axis, poses[j]!.axis) >= minCos - 1e-12,
  );
}

export interface PairsSpecLike {
  strategy?: string;
  overlap?: number;
  retrieval_k?: number;
  overlap_distance_m?: number | null;
  max_angle_deg?: number | null;
}

/** What spatial and from-poses pairs read: positions (ENU metres from GPS, or prior centres) and the priors' poses. */
export interface PairPositions {
  positions: readonly (Vec3 | null)[];
  poses: readonly (PriorPose | null)[];
}

/**
 * The positions spatial and from-poses pairs read from the dataset: the priors' camera centres when
 * at least two images have a pose prior, else GPS in a local ENU frame on its ground plane (up left
 * out: EXIF altitudes are often tens of metres off, as COLMAP's spatial matcher `ignore_z`).
 */
export function pairPositions(images: DatasetSnapshot["images"]): PairPositions {
  const poses = priorPoses(images);
  if (poses.filter((p) => p !== null).length >= 2) return { positions: poses.map((p) => p?.centre ?? null), poses };
  const enu = enuPositions(images);
  return { positions: (enu?.positions ?? images.map(() => null)).map((p) => (p ? [p[0], p[1], 0] : null)), poses };
}

/**
 * Pairs for a PairsSpec; `retrieval` needs the dataset's similarity index, `spatial` and
 * `from_poses` the images' positions, in image order; `vocabtree` the images' bags of words as `retrieval`.
 */
export function selectPairs(
  names: readonly string[],
  spec: PairsSpecLike = {},
  retrieval: RetrievalIndex | null = null,
  located: PairPositions | null = null,
): ImagePair[] {
  const strategy = spec.strategy ?? "exhaustive";
  if (strategy === "exhaustive") return exhaustivePairs(names);
  if (strategy === "sequential") return sequentialPairs(names, spec.overlap ?? 10);
  if (strategy === "retrieval" || strategy === "vocabtree") {
    if (!retrieval) throw new RangeError(`pairs: ${strategy} needs the dataset's similarity index`);
    return retrievalPairs(names, retrieval, spec.retrieval_k ?? 20, spec.overlap ?? 10);
  }
  if (strategy === "spatial" || strategy === "from_poses") {
    if (!located) throw new RangeError(`pairs: ${strategy} needs the images' positions`);
    const distance = spec.overlap_distance_m ?? DEFAULT_OVERLAP_DISTANCE;
    return strategy === "spatial"
      ? spatialPairs(names, located.positions, distance)
      : fromPosesPairs(names, located.poses, distance, spec.max_angle_deg ?? null);
  }
  throw new RangeError(`pairs: strategy ${strategy} is not supported by this runner`);
}

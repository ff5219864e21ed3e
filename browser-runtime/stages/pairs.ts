/**
 * @module Pair selection (spec 2.12 PairsSpec; capabilities `pairs.exhaustive`,
 * `pairs.sequential`, `pairs.retrieval`). Images are identified by name, in the dataset's order.
 */
import { nearestByHamming } from "../../protocol/wire/dhash";

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

/**
 * Each image with its next `overlap` images in sequence order (COLMAP's sequential
 * matcher without loop detection or quadratic overlap): pairs (i, i + k), 1 <= k <= overlap.
 */
export function sequentialPairs(names: readonly string[], overlap = 10): ImagePair[] {
  if (!Number.isInteger(overlap) || overlap < 1)
    throw new RangeError(`sequential pairs: overlap must be a positive integer, got ${overlap}`);
  const pairs: ImagePair[] = [];
  for (let i = 0; i < names.length; i += 1) {
    for (let k = 1; k <= overlap && i + k < names.length; k += 1) pairs.push({ imageName1: names[i]!, imageName2: names[i + k]! });
  }
  return pairs;
}

/**
 * Retrieval pairs (2.12 `retrieval`, `retrieval_k`): each image with its `k` nearest images by
 * the Hamming distance of their dHashes (`hashes[i]` is image i's), ties in dataset order; each
 * unordered pair once, as (i, j) with i < j, in row-major order. An image is paired with the k it
 * retrieves and with every image that retrieves it, so no image is left out.
 */
export function retrievalPairs(names: readonly string[], hashes: readonly string[], k: number): ImagePair[] {
  if (hashes.length !== names.length) throw new RangeError(`retrieval pairs: ${hashes.length} hashes for ${names.length} images`);
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`retrieval pairs: retrieval_k must be a positive integer, got ${k}`);
  const partners = names.map(() => new Set<number>());
  names.forEach((_, i) => {
    for (const { index: j } of nearestByHamming(hashes, i, k)) partners[Math.min(i, j)]!.add(Math.max(i, j));
  });
  return partners.flatMap((js, i) => [...js].sort((a, b) => a - b).map((j) => ({ imageName1: names[i]!, imageName2: names[j]! })));
}

export interface PairsSpecLike {
  strategy?: string;
  overlap?: number;
  retrieval_k?: number;
}

/**
 * Pairs for a PairsSpec; `retrieval` needs the dataset's dHashes, in image order. Strategies
 * other than exhaustive, sequential and retrieval are not implemented here.
 */
export function selectPairs(
  names: readonly string[],
  spec: PairsSpecLike = {},
  retrieval: { hashes: readonly string[] } | null = null,
): ImagePair[] {
  const strategy = spec.strategy ?? "exhaustive";
  if (strategy === "exhaustive") return exhaustivePairs(names);
  if (strategy === "sequential") return sequentialPairs(names, spec.overlap ?? 10);
  if (strategy === "retrieval") {
    if (!retrieval) throw new RangeError("pairs: retrieval needs the dataset's similarity index");
    return retrievalPairs(names, retrieval.hashes, spec.retrieval_k ?? 20);
  }
  throw new RangeError(`pairs: strategy ${strategy} is not supported by this runner`);
}

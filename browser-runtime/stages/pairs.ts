/**
 * @module Pair selection (spec 2.12 PairsSpec; capabilities `pairs.exhaustive`,
 * `pairs.sequential`). Images are identified by name, in the dataset's order.
 */

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
  if (!Number.isInteger(overlap) || overlap < 1) throw new RangeError(`sequential pairs: overlap must be a positive integer, got ${overlap}`);
  const pairs: ImagePair[] = [];
  for (let i = 0; i < names.length; i += 1) {
    for (let k = 1; k <= overlap && i + k < names.length; k += 1) pairs.push({ imageName1: names[i]!, imageName2: names[i + k]! });
  }
  return pairs;
}

export interface PairsSpecLike {
  strategy?: string;
  overlap?: number;
}

/** Pairs for a PairsSpec; strategies other than exhaustive and sequential are not implemented here. */
export function selectPairs(names: readonly string[], spec: PairsSpecLike = {}): ImagePair[] {
  const strategy = spec.strategy ?? "exhaustive";
  if (strategy === "exhaustive") return exhaustivePairs(names);
  if (strategy === "sequential") return sequentialPairs(names, spec.overlap ?? 10);
  throw new RangeError(`pairs: strategy ${strategy} is not supported by this runner`);
}

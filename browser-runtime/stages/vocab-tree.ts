/**
 * @module Vocabulary-tree retrieval (Nistér and Stewénius 2006; spec 2.12 `pairs.vocabtree`): each
 * RootSIFT descriptor of an image descends a hierarchical k-means tree (trained by
 * scripts/train-vocab.ts on ../shared/datasets/vocab-training) to a leaf, its visual word; an image
 * is its bag of words. Images are compared by tf-idf weights (idf from the dataset's own images),
 * L1-normalised, scored by their histogram intersection (1 - half their L1 distance).
 */
import { type LocalFeatures } from "../../protocol/wire/features";
import { VocabTreeFile } from "../../protocol/wire/bow";
import { nearestWord, rootSift } from "./vlad";

export interface VocabTree {
  id: string;
  branching: number;
  depth: number;
  dim: number;
  /** Level l (1..depth) holds branching^l nodes; node i's children are i * branching + c on the next level. */
  levels: Float32Array[];
}

/** RootSIFT centroids lie in [0, 1]: one byte each loses at most 1/510 per value. */
export function encodeTreeNodes(nodes: Float32Array): string {
  let bin = "";
  for (const v of nodes) bin += String.fromCharCode(Math.max(0, Math.min(255, Math.round(v * 255))));
  return btoa(bin);
}

export function vocabTreeOf(file: VocabTreeFile): VocabTree {
  if (file.format !== "edgesfm.vocab.tree.v1" || file.descriptor !== "rootsift")
    throw new Error(`not a RootSIFT vocabulary tree: ${file.id}`);
  const bin = atob(file.nodes);
  const levels: Float32Array[] = [];
  let at = 0;
  for (let l = 1, count = file.branching; l <= file.depth; l += 1, count *= file.branching) {
    const level = new Float32Array(count * file.dim);
    for (let i = 0; i < level.length; i += 1) level[i] = bin.charCodeAt(at + i) / 255;
    levels.push(level);
    at += level.length;
  }
  if (at !== bin.length) throw new Error(`vocabulary tree ${file.id}: ${bin.length} values for ${file.branching}^1..${file.depth}`);
  return { id: file.id, branching: file.branching, depth: file.depth, dim: file.dim, levels };
}

/** A tree the tenant uploaded (`vocab_tree_path: "blob:<sha256>"`): its file's bytes, checked as the service checked them at submission. */
export const vocabTreeFromBytes = (bytes: Uint8Array): VocabTree =>
  vocabTreeOf(VocabTreeFile.parse(JSON.parse(new TextDecoder().decode(bytes))));

/** An image's bag of words: word ids ascending, each with its count. */
export interface BagOfWords {
  words: number[];
  counts: number[];
}

export function bagOfWords(features: Pick<LocalFeatures, "descriptors" | "descriptorDim" | "descriptorKind">, tree: VocabTree): BagOfWords {
  if (features.descriptorDim !== tree.dim && features.descriptors.length > 0)
    throw new RangeError(`vocabulary tree: ${features.descriptorDim}-dimensional descriptors for a ${tree.dim}-dimensional tree`);
  const x = rootSift(features);
  const n = x.length / tree.dim;
  const counts = new Map<number, number>();
  const one = new Float32Array(tree.dim);
  for (let i = 0; i < n; i += 1) {
    one.set(x.subarray(i * tree.dim, (i + 1) * tree.dim));
    let node = 0;
    for (const level of tree.levels) {
      const children = level.subarray(node * tree.branching * tree.dim, (node + 1) * tree.branching * tree.dim);
      node = node * tree.branching + nearestWord(one, 0, children, tree.branching, tree.dim);
    }
    counts.set(node, (counts.get(node) ?? 0) + 1);
  }
  const words = [...counts.keys()].sort((a, b) => a - b);
  return { words, counts: words.map((w) => counts.get(w)!) };
}

/**
 * The `k` images most similar to each image (itself excluded), best first: tf-idf over the
 * dataset's bags (idf = ln(N / images holding the word)), L1-normalised, histogram intersection.
 */
export function nearestByWords(bags: readonly BagOfWords[], k: number): number[][] {
  const n = bags.length;
  const df = new Map<number, number>();
  for (const b of bags) for (const w of b.words) df.set(w, (df.get(w) ?? 0) + 1);
  const weighted = bags.map((b) => {
    const v = b.words.map((w, i) => b.counts[i]! * Math.log(n / df.get(w)!));
    const sum = v.reduce((s, x) => s + x, 0);
    return new Map(b.words.map((w, i) => [w, sum > 0 ? v[i]! / sum : 0]));
  });
  // An inverted file: for each word, the images holding it with their weight.
  const postings = new Map<number, [number, number][]>();
  weighted.forEach((v, i) => v.forEach((x, w) => x > 0 && (postings.get(w) ?? postings.set(w, []).get(w)!).push([i, x])));
  return weighted.map((q, i) => {
    const score = new Float64Array(n);
    q.forEach((x, w) => {
      for (const [j, y] of postings.get(w) ?? []) score[j]! += Math.min(x, y);
    });
    return Array.from({ length: n }, (_, j) => j)
      .filter((j) => j !== i)
      .sort((a, b) => score[b]! - score[a]! || a - b)
      .slice(0, k);
  });
}

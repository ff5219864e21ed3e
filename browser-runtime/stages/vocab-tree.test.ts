import { describe, expect, it } from "vitest";
import { DEFAULT_VOCAB_TREE_ID } from "../../protocol/wire/bow";
import { DescriptorKind } from "../../protocol/wire/features";
import { DEFAULT_TREE } from "./vocab";
import { bagOfWords, encodeTreeNodes, nearestByWords, vocabTreeFromBytes, vocabTreeOf } from "./vocab-tree";

/** n pseudo-random SIFT-like uint8 descriptors (seeded). */
function descriptors(n: number, seed: number): Uint8Array {
  let a = seed;
  return Uint8Array.from({ length: n * 128 }, () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    return a >>> 26 === 0 ? (a >>> 8) % 256 : (a >>> 8) % 24;
  });
}
const features = (d: Uint8Array) => ({ descriptors: d, descriptorDim: 128, descriptorKind: DescriptorKind.siftL1Root }) as const;

describe("vocabulary tree (10 branches, 3 levels)", () => {
  it("ships the tree the service names: 10 + 100 + 1000 nodes of 128 values in [0, 1]", () => {
    expect(DEFAULT_TREE).toMatchObject({ id: DEFAULT_VOCAB_TREE_ID, branching: 10, depth: 3, dim: 128 });
    expect(DEFAULT_TREE.levels.map((l) => l.length / 128)).toEqual([10, 100, 1000]);
    expect(DEFAULT_TREE.levels.every((l) => l.every((v) => v >= 0 && v <= 1))).toBe(true);
    const file = {
      format: "edgesfm.vocab.tree.v1",
      id: "t",
      branching: 2,
      depth: 1,
      dim: 2,
      descriptor: "rootsift",
      training: {},
    } as const;
    expect(vocabTreeOf({ ...file, nodes: encodeTreeNodes(Float32Array.from([0, 1, 0.5, 0.25])) }).levels[0]![3]).toBeCloseTo(0.25, 2);
    expect(() => vocabTreeOf({ ...file, nodes: encodeTreeNodes(new Float32Array(3)) })).toThrow(/values/);
  });

  it("a bag counts every descriptor once, at a leaf; the same features give the same bag", () => {
    const bag = bagOfWords(features(descriptors(300, 1)), DEFAULT_TREE);
    expect(bag.counts.reduce((s, c) => s + c, 0)).toBe(300);
    expect(bag.words.every((w, i) => w >= 0 && w < 1000 && (i === 0 || w > bag.words[i - 1]!))).toBe(true);
    expect(bagOfWords(features(descriptors(300, 1)), DEFAULT_TREE)).toEqual(bag);
    expect(bagOfWords(features(new Uint8Array(0)), DEFAULT_TREE)).toEqual({ words: [], counts: [] });
  });

  it("images sharing descriptors retrieve each other first", () => {
    const a = descriptors(400, 1);
    const b = Uint8Array.from([...a.subarray(0, 200 * 128), ...descriptors(200, 2)]);
    const bags = [a, descriptors(400, 3), b, descriptors(400, 4)].map((d) => bagOfWords(features(d), DEFAULT_TREE));
    const near = nearestByWords(bags, 1);
    expect(near[0]).toEqual([2]);
    expect(near[2]).toEqual([0]);
  });
});

describe("an uploaded tree (vocab_tree_path blob:<sha256>)", () => {
  it("reads a tree file's bytes as the shipped tree, and rejects one whose nodes do not fill its levels", () => {
    const file = { format: "edgesfm.vocab.tree.v1", id: "up", branching: 2, depth: 2, dim: 128, descriptor: "rootsift", training: {} };
    const nodes = new Float32Array((2 + 4) * 128).map((_, i) => (i % 7) / 7);
    const bytes = (n: Float32Array) => new TextEncoder().encode(JSON.stringify({ ...file, nodes: encodeTreeNodes(n) }));
    const tree = vocabTreeFromBytes(bytes(nodes));
    expect(tree).toMatchObject({ id: "up", branching: 2, depth: 2, dim: 128 });
    expect(tree.levels.map((l) => l.length)).toEqual([256, 512]);
    expect(() => vocabTreeFromBytes(bytes(nodes.subarray(1)))).toThrow(/nodes/);
  });
});

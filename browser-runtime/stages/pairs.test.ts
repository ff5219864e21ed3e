import { describe, expect, it } from "vitest";
import { exhaustivePairs, retrievalPairs, selectPairs, sequentialPairs } from "./pairs";

const names = ["a", "b", "c", "d", "e"];
const flat = (pairs: Array<{ imageName1: string; imageName2: string }>): string[] => pairs.map((p) => p.imageName1 + p.imageName2);

describe("pair selection (spec 2.12 PairsSpec)", () => {
  it("exhaustive gives every unordered pair once, n (n - 1) / 2 in all", () => {
    expect(flat(exhaustivePairs(names))).toEqual(["ab", "ac", "ad", "ae", "bc", "bd", "be", "cd", "ce", "de"]);
    expect(exhaustivePairs(Array.from({ length: 29 }, (_, i) => `${i}`)).length).toBe(406);
    expect(exhaustivePairs(["only"])).toEqual([]);
  });

  it("sequential pairs each image with the next `overlap` images", () => {
    expect(flat(sequentialPairs(names, 2))).toEqual(["ab", "ac", "bc", "bd", "cd", "ce", "de"]);
    expect(sequentialPairs(names, 10)).toEqual(exhaustivePairs(names));
    expect(() => sequentialPairs(names, 0)).toThrow(RangeError);
  });

  it("selectPairs follows the spec defaults and refuses strategies it cannot run", () => {
    expect(selectPairs(names)).toEqual(exhaustivePairs(names));
    expect(selectPairs(names, { strategy: "sequential" }).length).toBe(10);
    expect(selectPairs(names, { strategy: "sequential", overlap: 1 }).length).toBe(4);
    expect(() => selectPairs(names, { strategy: "vocabtree" })).toThrow(/not supported/);
    expect(() => selectPairs(names, { strategy: "retrieval" })).toThrow(/similarity index/);
  });

  it("retrieval pairs each image with its retrieval_k nearest by Hamming distance, and with those that retrieve it; each pair once, in order", () => {
    // a-b and c-d are near twins; e is far from all, nearest to d (47 bits apart).
    const hashes = ["0000000000000000", "0000000000000001", "00000000ffff0000", "00000000ffff0001", "ffffffffffffffff"];
    expect(flat(retrievalPairs(names, hashes, 1))).toEqual(["ab", "cd", "de"]);
    expect(flat(selectPairs(names, { strategy: "retrieval", retrieval_k: 1 }, { hashes }))).toEqual(["ab", "cd", "de"]);
    expect(retrievalPairs(names, hashes, 4)).toEqual(exhaustivePairs(names));
    // The spec default retrieval_k (20) on 5 images: every pair.
    expect(selectPairs(names, { strategy: "retrieval" }, { hashes })).toEqual(exhaustivePairs(names));
    expect(() => retrievalPairs(names, hashes.slice(1), 1)).toThrow(RangeError);
    expect(() => retrievalPairs(names, hashes, 0)).toThrow(RangeError);
  });
});

import { describe, expect, it } from "vitest";
import { exhaustivePairs, selectPairs, sequentialPairs } from "./pairs";

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
  });
});

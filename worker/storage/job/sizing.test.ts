import { describe, expect, it } from "vitest";
import { UNIT_DESCRIPTORS, blockWork, packHeaviestFirst } from "./sizing";

/** When the last of `shards` ends on `lanes` runners taking them in order, each the next free one (as leases go). */
function makespan(shards: number[], lanes: number): { end: number; idle: number } {
  const free = Array.from({ length: lanes }, () => 0);
  for (const w of shards) {
    const k = free.indexOf(Math.min(...free));
    free[k]! += w;
  }
  const end = Math.max(...free);
  return { end, idle: free.reduce((s, f) => s + (end - f), 0) / (lanes * end) };
}

describe("packing shards heaviest first", () => {
  it("packs items into shards of the budget, heaviest first, each item once, in its own order inside its shard", () => {
    const items = [3, 9, 1, 4, 4, 2, 12, 1, 5].map((weight, id) => ({ id, weight }));
    const shards = packHeaviestFirst(items, 8, 3);
    expect(
      shards
        .flat()
        .map((it) => it.id)
        .sort((x, y) => x - y),
    ).toEqual(items.map((it) => it.id));
    const weights = shards.map((s) => s.reduce((sum, it) => sum + it.weight, 0));
    expect(weights).toEqual([...weights].sort((x, y) => y - x));
    for (const s of shards) {
      expect(s.length).toBeLessThanOrEqual(3);
      // Over the budget only alone.
      if (s.length > 1) expect(s.reduce((sum, it) => sum + it.weight, 0)).toBeLessThanOrEqual(8);
      expect(s.map((it) => it.id)).toEqual([...s.map((it) => it.id)].sort((x, y) => x - y));
    }
  });

  it("the last shards are the small ones: two runners end closer together than with the blocks in planning order", () => {
    // Blocks of a 4-group plan in planning order, as a set's real keypoints weigh them: heavy and light interleaved.
    const blocks = [20, 48, 52, 45, 22, 50, 47, 18, 49, 21].map((weight) => ({ weight }));
    const inOrder = makespan(
      blocks.map((b) => b.weight),
      2,
    );
    const packed = makespan(
      packHeaviestFirst(blocks, 8).map((s) => s.reduce((sum, it) => sum + it.weight, 0)),
      2,
    );
    expect(packed.end).toBeLessThanOrEqual(inOrder.end);
    expect(packed.idle).toBeLessThan(inOrder.idle);
    expect(packed.idle).toBeLessThan(0.01);
  });
});

describe("a block's weight", () => {
  it("every pair of its groups (inside one group, each pair once), or its listed pairs, by their images' descriptors", () => {
    const d = (name: string) => ({ a: UNIT_DESCRIPTORS, b: UNIT_DESCRIPTORS / 2, c: UNIT_DESCRIPTORS, x: UNIT_DESCRIPTORS / 4 })[name]!;
    expect(
      blockWork(
        "match",
        [
          ["a", "b", "c"],
          ["a", "b", "c"],
        ],
        null,
        d,
      ),
    ).toBeCloseTo(0.5 + 1 + 0.5, 9);
    expect(blockWork("match", [["a", "b"], ["x"]], null, d)).toBeCloseTo(0.25 + 0.125, 9);
    expect(blockWork("verify", [["a", "b"], ["x"]], null, d)).toBeCloseTo(0.5 + Math.sqrt(0.125), 9);
    expect(
      blockWork(
        "match",
        [
          ["a", "b", "c"],
          ["a", "b", "c"],
        ],
        [["a", "c"]],
        d,
      ),
    ).toBeCloseTo(1, 9);
  });
});

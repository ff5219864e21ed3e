import { describe, expect, it } from "vitest";
import type { DatasetSnapshot } from "../../protocol";
import { MATCH_SHARD_WORK, type PlannedTask, UNIT_DESCRIPTORS, groupShards, planItems, shardBudget } from "./shards";
import { hashJson } from "./runtime";

/**
 * A dataset of n images with distinct contents (the planner reads names, content hashes and sizes):
 * 4.1 MP by default, about 8192 SIFT keypoints, so that a pair weighs one unit of work.
 */
function dataset(n: number, [width, height] = [2048, 2000]): DatasetSnapshot {
  const images = Array.from({ length: n }, (_, i) => ({
    image_id: `im${i}`,
    name: `f${String(i).padStart(3, "0")}.jpg`,
    content_sha: hashJson(["image", i]),
    byte_size: 1,
    width,
    height,
    media_type: "image/jpeg",
    focal_length_35mm: null,
    gps: null,
    pose_prior: null,
  }));
  return {
    dataset_id: "ds",
    manifest_hash: "m",
    camera_model: "SIMPLE_RADIAL",
    intrinsics_mode: "single",
    is_spherical: false,
    respect_exif_orientation: true,
    rig_config: null,
    images,
  } as DatasetSnapshot;
}

const task = (kind: "extract" | "match" | "verify", params: Record<string, unknown>, pair_list?: [number, number][]): PlannedTask => ({
  kind,
  params,
  inputs_hash: hashJson([kind, "inputs"]),
  params_hash: hashJson(params),
  rv_id: "rv",
  pair_list,
});

/** Each image with its next: n - 1 pairs. */
const chainList = (n: number) => Array.from({ length: n - 1 }, (_, i) => [i, i + 1] as [number, number]);

const chain = (list?: [number, number][]) => {
  // As a request names it: the list itself is part of the params.
  const pairs = list
    ? { strategy: "explicit", image_pairs: list.map(([i, j]) => ({ image_name1: `f${i}`, image_name2: `f${j}` })) }
    : { strategy: "exhaustive" };
  return [task("extract", {}), task("match", { pairs }, list), task("verify", {})];
};

describe("match and verify items of a pair list known at submission (explicit and sequential pairs)", () => {
  it("weigh and read the listed pairs of their block alone: shards grow with the pairs, not with n^2", () => {
    const ds = dataset(200);
    const [, exhaustiveMatch] = planItems(ds, chain());
    const list = chainList(200);
    const [, match, verify] = planItems(ds, chain(list));
    // The same blocks (paths), so verification and mapping read the same files.
    expect(match!.map((it) => it.path)).toEqual(exhaustiveMatch!.map((it) => it.path));
    for (const items of [match!, verify!]) {
      expect(items.reduce((s, it) => s + it.weight, 0)).toBe(list.length);
      // An item reads exactly the images of its pairs.
      for (const it of items) {
        const [a, b] = it.block!.map((names) => new Set(names)) as [Set<string>, Set<string>];
        const mine = list
          .map(([i, j]) => [ds.images[i]!.name, ds.images[j]!.name])
          .filter(([x, y]) => (a.has(x!) && b.has(y!)) || (b.has(x!) && a.has(y!)));
        expect(it.weight).toBe(mine.length);
        expect(new Set(it.images)).toEqual(new Set(mine.flat()));
      }
    }
    const shards = (items: { weight: number }[]) => groupShards(items, MATCH_SHARD_WORK).length;
    // 199 pairs in 528 blocks: shards of at most 64 items, against one per block of about 40 pairs exhaustively.
    expect(shards(match!)).toBeLessThanOrEqual(Math.ceil(match!.length / 64) + Math.ceil(list.length / MATCH_SHARD_WORK));
    expect(shards(exhaustiveMatch!)).toBe(exhaustiveMatch!.length);
  });

  it("a changed pair changes the keys of its block alone (the list's other blocks are reused)", () => {
    const ds = dataset(200);
    const list = chainList(200);
    const [, before] = planItems(ds, chain(list));
    const [, after] = planItems(ds, chain([...list.slice(0, -1), [0, 199]]));
    const changed = before!.filter((it, k) => it.key !== after![k]!.key).map((it) => it.path);
    const touched = before!.filter((it, k) => it.weight !== after![k]!.weight || it.images.join() !== after![k]!.images.join());
    expect(changed.length).toBeGreaterThan(0);
    expect(changed.length).toBeLessThanOrEqual(2);
    expect(changed).toEqual(touched.map((it) => it.path));
  });

  it("sequential pairs are known at submission too: their blocks weigh the window's pairs", () => {
    const ds = dataset(200);
    const [, match] = planItems(ds, [task("extract", {}), task("match", { pairs: { strategy: "sequential", overlap: 3 } })]);
    expect(match!.reduce((s, it) => s + it.weight, 0)).toBe(199 + 198 + 197);
    const names = new Set(match!.flatMap((it) => it.images));
    expect(names.size).toBe(200);
  });

  it("sequential blocks follow the pose priors' timestamps, as the runner orders the sequence", () => {
    const ds = dataset(200);
    // Timestamps 7 i mod 200: image i is followed in time by the image whose timestamp is one more.
    ds.images.forEach((im, i) => (im.pose_prior = { timestamp_ns: String((i * 7) % 200) } as (typeof im)["pose_prior"]));
    const byTime = [...ds.images].sort((a, b) => Number(a.pose_prior!.timestamp_ns) - Number(b.pose_prior!.timestamp_ns));
    const [, match] = planItems(ds, [task("extract", {}), task("match", { pairs: { strategy: "sequential", overlap: 1 } })]);
    expect(match!.reduce((s, it) => s + it.weight, 0)).toBe(199);
    for (let t = 0; t + 1 < 200; t++) {
      const [x, y] = [byTime[t]!.name, byTime[t + 1]!.name];
      const home = match!.filter((it) => {
        const [a, b] = it.block!.map((names) => new Set(names)) as [Set<string>, Set<string>];
        return (a.has(x) && b.has(y)) || (b.has(x) && a.has(y));
      });
      expect(home).toHaveLength(1);
      expect(home[0]!.images).toEqual(expect.arrayContaining([x, y]));
    }
  });
});

describe("match shards sized by work: pairs times their images' descriptors", () => {
  /** The match task's shards of an exhaustive incremental chain: per shard, its pairs and weight. */
  const matchShards = (ds: DatasetSnapshot, features: Record<string, unknown> = {}) => {
    const [, match] = planItems(ds, [
      task("extract", { features }),
      task("match", { pairs: { strategy: "exhaustive" } }),
      task("verify", {}),
    ]);
    const pairsOf = (it: { block: [string[], string[]] | null }) => {
      const [a, b] = it.block!;
      return a.join() === b.join() ? (a.length * (a.length - 1)) / 2 : a.length * b.length;
    };
    return groupShards(match!, shardBudget("match")).map((shard) => ({
      pairs: shard.reduce((s, it) => s + pairsOf(it), 0),
      weight: shard.reduce((s, it) => s + it.weight, 0),
    }));
  };

  it("11 photos of 6 MP (sceaux-castle's size) get many small match shards where 11 of 1 MP get one", () => {
    const small = matchShards(dataset(11, [1000, 1000]));
    // 2000 keypoints an image: 55 pairs weigh 55 (2000/8192)^2 = 3.3 units, one shard.
    expect(small.map((s) => s.pairs)).toEqual([55]);
    // 6 MP: 12,000 keypoints, capped at max_num_features 8192 (the default): a pair weighs 1, groups of 2 images.
    const large = matchShards(dataset(11, [3000, 2000]));
    expect(large.reduce((s, sh) => s + sh.pairs, 0)).toBe(55);
    expect(large.length).toBeGreaterThanOrEqual(Math.ceil(55 / MATCH_SHARD_WORK));
    expect(Math.max(...large.map((s) => s.pairs))).toBeLessThan(55 / 3);
    // With max_num_features 16384 the 6 MP photos keep ~12,000 descriptors: heavier pairs, groups of one image, shards of a few pairs.
    const many = matchShards(dataset(11, [3000, 2000]), { max_num_features: 16384 });
    const pairWeight = (12_000 / UNIT_DESCRIPTORS) ** 2;
    expect(many.reduce((s, sh) => s + sh.pairs, 0)).toBe(55);
    expect(many.length).toBeGreaterThan(large.length);
    for (const sh of many) expect(sh.weight).toBeCloseTo(sh.pairs * pairWeight, 6);
    // Groups are buckets of content hashes: a bucket may hold two or three photos, a block a few more pairs than the budget.
    expect(Math.max(...many.map((s) => s.pairs))).toBeLessThan(55 / 6);
  });
});

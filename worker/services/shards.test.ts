import { describe, expect, it } from "vitest";
import type { DatasetSnapshot } from "../../protocol";
import { PAIR_LIST_PATH } from "../../protocol/wire/pairs";
import { MATCH_SHARD_WORK, UNIT_DESCRIPTORS, groupShards, shardBudget } from "../storage/job/sizing";
import { type ItemFile, type PlannedTask, planItems, reusable } from "./shards";
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

const task = (
  kind: "extract" | "match" | "verify",
  params: Record<string, unknown>,
  pair_list?: [number, number][],
  pair_list_file?: ItemFile,
): PlannedTask => ({
  kind,
  params,
  inputs_hash: hashJson([kind, "inputs"]),
  params_hash: hashJson(params),
  rv_id: "rv",
  pair_list,
  pair_list_file,
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
    // Only the blocks holding pairs, each a block of the groups (its path), verified block by block.
    expect(match!.length).toBeLessThan(exhaustiveMatch!.length);
    expect(exhaustiveMatch!.map((it) => it.path)).toEqual(expect.arrayContaining(match!.map((it) => it.path)));
    expect(verify!.map((it) => it.path.replace("two_view_geometries/", "matches/").replace(".json", ".bin"))).toEqual(
      match!.map((it) => it.path),
    );
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
    // By block (a block that loses its last pair is gone, one that gains its first is new).
    const [b, a] = [before!, after!].map((items) => new Map(items.map((it) => [it.path, it] as const)));
    const paths = [...new Set([...b!.keys(), ...a!.keys()])];
    const changed = paths.filter((p) => b!.get(p)?.key !== a!.get(p)?.key);
    const touched = paths.filter((p) => b!.get(p)?.weight !== a!.get(p)?.weight || b!.get(p)?.images.join() !== a!.get(p)?.images.join());
    expect(changed.length).toBeGreaterThan(0);
    expect(changed.length).toBeLessThanOrEqual(2);
    expect(changed).toEqual(touched);
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

describe("match and verify items of pairs chosen on a runner (retrieval, vocabtree), planned once its list is chosen", () => {
  const LIST_FILE: ItemFile = { path: PAIR_LIST_PATH, blob_sha: "a".repeat(64), byte_size: 1, media_type: "text/plain" };
  /** Each image with its 3 nearest in name order, as an index would choose: about 3 n pairs. */
  const nearList = (n: number) =>
    Array.from({ length: n }, (_, i) => [1, 2, 3].filter((k) => i + k < n).map((k) => [i, i + k] as [number, number])).flat();
  const indexed = (pairs: Record<string, unknown>, list?: [number, number][], matcher: Record<string, unknown> = {}) => [
    task("extract", {}),
    task("match", { pairs, matcher }, list, list && LIST_FILE),
    task("verify", {}),
  ];

  it("before its list, the match task is one item, the list's, and the verify task has none", () => {
    const [, match, verify] = planItems(dataset(100), indexed({ strategy: "vocabtree", retrieval_k: 5 }));
    expect(match).toMatchObject([{ path: PAIR_LIST_PATH, block: null }]);
    expect(match![0]!.images).toHaveLength(100);
    expect(verify).toEqual([]);
    expect(reusable(match![0]!)).toBe(false);
  });

  it("from its list: only the blocks holding pairs, each reading the list; keys hold the block's pairs, not the spec that chose them", () => {
    const ds = dataset(100);
    const list = nearList(100);
    const [, all] = planItems(ds, chain());
    const [, match, verify] = planItems(ds, indexed({ strategy: "retrieval", retrieval_k: 3 }, list));
    // 294 pairs of 100 images (16 groups: 136 blocks): the blocks that hold them, weighing their pairs alone (where every
    // block weighed every pair of its groups, 4,950).
    expect(match!.length).toBeLessThan(all!.length);
    expect(match!.length).toBeLessThanOrEqual(list.length);
    expect(match!.reduce((s, it) => s + it.weight, 0)).toBe(list.length);
    expect(all!.reduce((s, it) => s + it.weight, 0)).toBe((100 * 99) / 2);
    expect(match!.every((it) => it.reads?.length === 1 && it.reads[0]!.path === PAIR_LIST_PATH)).toBe(true);
    expect(verify!.map((it) => it.path.replace("two_view_geometries/", "matches/").replace(".json", ".bin"))).toEqual(
      match!.map((it) => it.path),
    );
    // The same pairs chosen by another spec are the same blocks; another matcher is not.
    const [, vocab] = planItems(ds, indexed({ strategy: "vocabtree", retrieval_k: 8 }, list));
    expect(vocab!.map((it) => it.key)).toEqual(match!.map((it) => it.key));
    const [, other] = planItems(ds, indexed({ strategy: "retrieval", retrieval_k: 3 }, list, { max_ratio: 0.7 }));
    expect(other!.every((it, k) => it.key !== match![k]!.key)).toBe(true);
  });

  it("a task reused whole chooses no list: its verify task covers every block", () => {
    const ds = dataset(20);
    const chained = indexed({ strategy: "vocabtree", retrieval_k: 5 }).map((t) => ({ ...t, reused: t.kind === "match" }));
    const [, match, verify] = planItems(ds, chained);
    const [, exhaustive] = planItems(ds, chain());
    expect(match!.map((it) => it.path)).toEqual(exhaustive!.map((it) => it.path));
    expect(verify).toHaveLength(exhaustive!.length);
  });
});

describe("blocks weighed by the extraction's keypoint counts", () => {
  it("weigh each pair by its images' keypoints; the groups, and so the blocks' keys, stay those of the estimates", () => {
    const ds = dataset(40, [1000, 1000]);
    const keypoints = new Map(ds.images.map((im, i) => [im.name, i % 2 === 0 ? 8192 : 4096]));
    const [, estimated] = planItems(ds, chain());
    const [, counted] = planItems(ds, chain(), keypoints);
    expect(counted!.map((it) => it.key)).toEqual(estimated!.map((it) => it.key));
    for (const it of counted!) {
      const [a, b] = it.block!;
      const same = a.join() === b.join();
      const pairs = a.flatMap((x, i) => (same ? a.slice(i + 1) : b).map((y) => [x, y] as const));
      const weight = pairs.reduce((s, [x, y]) => s + (keypoints.get(x)! * keypoints.get(y)!) / UNIT_DESCRIPTORS ** 2, 0);
      expect(it.weight).toBeCloseTo(weight, 9);
    }
  });
});

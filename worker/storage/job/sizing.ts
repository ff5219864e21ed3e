/**
 * @module How much work a shard holds (runners.md "Shards"): items weighed by what they cost one
 * engine and packed into shards of a budget. At submission match and verify blocks are weighed by
 * descriptor counts estimated from pixels; once the features they read exist (the job's extraction
 * has succeeded, or an input artifact gives them), each image's real keypoint count (its features
 * file's size) weighs them again and their shards are packed anew before any is leased (issue 17:
 * lund's 1024x768 photos, estimated at 1,600 descriptors, made two match shards of 25 and 139 s).
 * Match and verify shards are packed heaviest first and leased in that order, so the last ones are
 * the small ones and no runner waits long on another's tail.
 */
import type { ShardItem, TaskKind } from "../../../protocol";
import { FEATURES_HEADER_BYTES, KEYPOINT_BYTES } from "../../../protocol/wire/features";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { featureFiles, jobDataset } from "./records";
import { shardIdOf } from "./shards";

/** Pixels per extraction shard: SIFT on one engine takes about 0.3-0.5 s per megapixel. */
export const EXTRACT_SHARD_PIXELS = 8_000_000;
/**
 * Descriptors of the unit pair of matching and verification work: FeaturesSpec's default
 * `max_num_features`. A pair of images with `d1` and `d2` descriptors weighs `d1 d2 / 8192^2` in
 * matching (brute force compares every descriptor with every other) and `sqrt(d1 d2) / 8192` in
 * verification (RANSAC over matches, about as many as descriptors).
 */
export const UNIT_DESCRIPTORS = 8192;
/**
 * Matching work per shard, in pairs of two 8k-descriptor sets: brute force of one such pair takes
 * about half a second on one wasm engine of a quiet machine (sceaux-castle's 55 pairs of 6 MP photos
 * as one shard ran for minutes on a loaded one, longer than a runner that leaves every minute or two lives).
 */
export const MATCH_SHARD_WORK = 8;
/** Verification work per shard, in pairs of 8k-descriptor images (RANSAC of one pair: 10-30 ms). */
export const VERIFY_SHARD_WORK = 128;
/** A shard's items travel in its lease and come back as one artifact each (TaskOutputs holds at most 64). */
export const MAX_SHARD_ITEMS = 64;

/** The shard budget of a task kind, in its items' weight units. */
export function shardBudget(kind: TaskKind): number {
  return kind === "extract" ? EXTRACT_SHARD_PIXELS : kind === "match" ? MATCH_SHARD_WORK : VERIFY_SHARD_WORK;
}

/** The most items of a shard of a task kind: a match item answers two artifacts, its matches and its pair list. */
export const shardMaxItems = (kind: TaskKind) => (kind === "match" ? MAX_SHARD_ITEMS / 2 : MAX_SHARD_ITEMS);

/** A pair's weight in matching or verification, for images of `d1` and `d2` descriptors. */
export function pairWork(kind: "match" | "verify", d1: number, d2: number): number {
  const [x, y] = [d1 / UNIT_DESCRIPTORS, d2 / UNIT_DESCRIPTORS];
  return kind === "match" ? x * y : Math.sqrt(x * y);
}

/**
 * A block's weight: its listed pairs, or (`pairs` null) every pair of its two content groups
 * (`block`, the same group twice for the pairs inside one), by each image's descriptors.
 */
export function blockWork(
  kind: "match" | "verify",
  block: readonly [readonly string[], readonly string[]],
  pairs: readonly (readonly [string, string])[] | null,
  descriptors: (name: string) => number,
): number {
  if (pairs) return pairs.reduce((s, [x, y]) => s + pairWork(kind, descriptors(x), descriptors(y)), 0);
  const [a, b] = block;
  const same = a.length === b.length && a.every((name, i) => name === b[i]);
  let sum = 0;
  for (const [i, x] of a.entries()) for (const y of same ? a.slice(i + 1) : b) sum += pairWork(kind, descriptors(x), descriptors(y));
  return sum;
}

/** Groups items in order into shards of about `budget` weight and at most `maxItems` items (an item heavier than `budget` is a shard alone). */
export function groupShards<T extends { weight: number }>(items: T[], budget: number, maxItems = MAX_SHARD_ITEMS): T[][] {
  const shards: T[][] = [];
  let current: T[] = [];
  let weight = 0;
  for (const item of items) {
    if (current.length > 0 && (weight + item.weight > budget || current.length >= maxItems)) {
      shards.push(current);
      current = [];
      weight = 0;
    }
    current.push(item);
    weight += item.weight;
  }
  if (current.length > 0) shards.push(current);
  return shards;
}

/**
 * Packs items into shards of about `budget` weight, heaviest first (first-fit decreasing): the
 * shards come out heaviest first, the order runners lease them in, so the work left at the end is
 * the smallest (longest-processing-time-first scheduling). Each shard keeps its items in their
 * own order (its artifacts' order).
 */
export function packHeaviestFirst<T extends { weight: number }>(items: T[], budget: number, maxItems = MAX_SHARD_ITEMS): T[][] {
  const order = new Map(items.map((it, i) => [it, i]));
  const bins: { items: T[]; weight: number }[] = [];
  for (const item of [...items].sort((x, y) => y.weight - x.weight)) {
    const bin = bins.find((b) => b.items.length < maxItems && b.weight + item.weight <= budget);
    if (bin) {
      bin.items.push(item);
      bin.weight += item.weight;
    } else bins.push({ items: [item], weight: item.weight });
  }
  return bins.sort((x, y) => y.weight - x.weight).map((b) => b.items.sort((x, y) => order.get(x)! - order.get(y)!));
}

/** A SIFT features file of N keypoints is 32 + N (16 + 128) bytes (protocol/wire/features.ts). */
const SIFT_KEYPOINT_FILE_BYTES = KEYPOINT_BYTES + 128;

/**
 * Each image's keypoints in the features a task reads (its input artifact, or the extraction it
 * follows once done), from their files' sizes; null unless every image of the dataset has a SIFT features file.
 */
export function keypointCounts(cx: JobContext, taskId: string): Record<string, number> | null {
  const files = featureFiles(cx, taskId);
  const counts: Record<string, number> = {};
  for (const im of jobDataset(cx)?.images ?? []) {
    const size = files.get(im.name)?.byte_size;
    const n = size === undefined ? NaN : (size - FEATURES_HEADER_BYTES) / SIFT_KEYPOINT_FILE_BYTES;
    if (!Number.isInteger(n) || n < 0) return null;
    counts[im.name] = n;
  }
  return files.size > 0 ? counts : null;
}

/**
 * Once the features they read exist (the job's extraction succeeded, or at creation from an input
 * artifact or a reused extraction): the match and verify tasks none of whose shards was ever leased
 * get their uncached blocks weighed by the images' real keypoint counts and packed again, heaviest
 * first (shard numbers follow: a lease takes the lowest pending one).
 */
export function packByKeypoints(cx: JobContext): void {
  const tasks = cx.sql
    .exec<{ task_id: string; kind: "match" | "verify" }>(
      `SELECT task_id, kind FROM tasks WHERE sharded = 1 AND status = 'pending' AND kind IN ('match', 'verify')
         AND NOT EXISTS (SELECT 1 FROM shards s WHERE s.task_id = tasks.task_id AND (s.status <> 'pending' OR s.attempts > 0))`,
    )
    .toArray();
  for (const { task_id: taskId, kind } of tasks) {
    const counts = keypointCounts(cx, taskId);
    if (!counts) continue;
    const items = cx.sql
      .exec<{ ord: number; item_json: string; pairs_json: string | null }>(
        "SELECT ord, item_json, pairs_json FROM items WHERE task_id = ? AND shard_id IS NOT NULL ORDER BY ord",
        taskId,
      )
      .toArray()
      .map((r) => {
        const item = JSON.parse(r.item_json) as ShardItem;
        const pairs = r.pairs_json ? (JSON.parse(r.pairs_json) as [string, string][]) : null;
        return { ord: r.ord, weight: item.block ? blockWork(kind, item.block, pairs, (name) => counts[name] ?? 0) : NaN };
      });
    // (NaN: a chosen pair list, whose blocks are planned by their real keypoints when they come, pair-list.ts.)
    if (items.length === 0 || items.some((it) => !Number.isFinite(it.weight))) continue;
    const shards = packHeaviestFirst(items, shardBudget(kind), shardMaxItems(kind));
    cx.sql.exec("DELETE FROM shards WHERE task_id = ?", taskId);
    shards.forEach((shard, idx) => {
      const shardId = shardIdOf(taskId, idx);
      cx.sql.exec("INSERT INTO shards (shard_id, task_id, idx, status) VALUES (?, ?, ?, 'pending')", shardId, taskId, idx);
      cx.sql.exec(
        "UPDATE items SET shard_id = ? WHERE task_id = ? AND ord IN (SELECT value FROM json_each(?))",
        shardId,
        taskId,
        JSON.stringify(shard.map((it) => it.ord)),
      );
    });
    const weights = shards.map((s) => s.reduce((sum, it) => sum + it.weight, 0));
    appendEvent(cx, taskId, {
      kind: "log_line",
      level: "INFO",
      message: `${items.length} blocks weighed by their features' keypoint counts and packed into ${shards.length} shards, heaviest first (${weights[0]!.toFixed(1)} to ${weights.at(-1)!.toFixed(1)} units of ${shardBudget(kind)})`,
    });
  }
}

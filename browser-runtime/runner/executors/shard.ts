/**
 * @module What a shard lease covers (worker/routes/runners.md "Shards"): the items of a sharded
 * task (an image to extract, a block of the pair list to match or verify), each answered with
 * its own artifact holding one file at the item's path, in item order.
 */
import type { Lease, LeaseShard, ShardItem } from "../../../protocol";
import type { ImagePair } from "../../stages/pairs";

/** The lease's shard; extract, match and verify tasks are always sharded. */
export function shardOf(lease: Lease): LeaseShard {
  if (!lease.shard) throw new Error(`a ${lease.task.kind} lease covers a shard of its task, and this one names none`);
  return lease.shard;
}

/** The pairs of `pairs` inside an item's block: one image in each of its two lists (both in the list, for a block of one list). */
export function blockPairs<P extends ImagePair>(pairs: readonly P[], item: ShardItem): P[] {
  if (!item.block) throw new Error(`item ${item.path} is not a block of the pair list`);
  const [a, b] = item.block.map((names) => new Set(names)) as [Set<string>, Set<string>];
  return pairs.filter((p) => (a.has(p.imageName1) && b.has(p.imageName2)) || (b.has(p.imageName1) && a.has(p.imageName2)));
}

/** The names of every image the shard's items read, each once. */
export const shardImages = (shard: LeaseShard) => new Set(shard.items.flatMap((it) => it.images));

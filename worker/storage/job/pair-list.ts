/**
 * @module The blocks of pairs chosen on a runner, planned when the list exists (runners.md "Shards";
 * issue 18): a match task of retrieval or vocabulary-tree pairs starts with one shard, one item at
 * PAIR_LIST_PATH, where a trusted runner chooses the whole list from the index. Its result comes
 * with the blocks the submission service planned from that list (services/pair-list.ts: only the
 * blocks holding pairs, content-keyed, sized by the extraction's keypoints, with their cache hits),
 * and the match and verify tasks get them as further items and shards in the transaction that
 * records it, as hierarchical mapping adds its clusters (hierarchical.ts). The list item is the
 * job's own: never cached, and no part of the task's artifacts.
 */
import type { DatasetSnapshot, Phase, ShardItem, TaskKind } from "../../../protocol";
import { PAIR_LIST_PATH } from "../../../protocol/wire/pairs";
import type { LeaseScope, PlannedItem } from "../job-rows";
import { type Outcome, ok } from "../outcome";
import { nowIso } from "../sql";
import type { JobContext } from "./context";
import { recordFiles } from "./blobs";
import { appendEvent } from "./events";
import { heldLease } from "./leases";
import { dependsOn, jobDataset, taskRows } from "./records";
import { assembledOutputs, insertItems, shardItems } from "./shards";
import { keypointCounts } from "./sizing";

/** Whether a shard's items are a chosen pair list (its one item at PAIR_LIST_PATH). */
export const isPairList = (items: readonly ShardItem[]) => items.length === 1 && items[0]!.path === PAIR_LIST_PATH;

/** What the service plans a chosen list's blocks from: the job's dataset and tasks, and the images' keypoints when the job extracted them. */
export interface PairListContext {
  dataset: DatasetSnapshot;
  tasks: { task_id: string; kind: TaskKind; params: Record<string, unknown>; inputs_hash: string; params_hash: string; rv_id: string }[];
  match_task_id: string;
  /** Each image's keypoints in the features the match task reads (storage/job/sizing.ts); null when unknown. */
  keypoints: Record<string, number> | null;
}

/** The blocks planned from a pair list: the match task's and those of the verify task that reads its matches (null when none does). */
export interface ListedBlocks {
  match: PlannedItem[];
  verify: PlannedItem[] | null;
}

/** For a lease of an index's pair-list shard: what its blocks are planned from; null for any other lease. */
export function pairListContext(cx: JobContext, leaseId: string, scope: LeaseScope): Outcome<PairListContext | null> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  if (!lease.value.shard_id || !isPairList(shardItems(cx, lease.value.shard_id))) return ok(null);
  const rows = taskRows(cx);
  return ok({
    dataset: jobDataset(cx)!,
    tasks: rows.map((r) => ({
      task_id: r.task_id as string,
      kind: r.kind as TaskKind,
      params: JSON.parse(r.params_json as string) as Record<string, unknown>,
      inputs_hash: r.inputs_hash as string,
      params_hash: r.params_hash as string,
      rv_id: r.rv_id as string,
    })),
    match_task_id: lease.value.task_id,
    keypoints: keypointCounts(cx, lease.value.task_id),
  });
}

/**
 * Adds the blocks planned from the pair list of the match task `taskId` (in the transaction that
 * records its list shard): its items after the list item, their shards after the list's; the
 * verify task's items and shards. Cached blocks bring their files, as at submission.
 */
export function addListedBlocks(cx: JobContext, taskId: string, blocks: ListedBlocks): void {
  const add = (id: string, items: PlannedItem[]) => {
    cx.sql.exec("UPDATE tasks SET sharded = 1 WHERE task_id = ?", id);
    const ords = cx.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM items WHERE task_id = ?", id).one().n;
    const shards = cx.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM shards WHERE task_id = ?", id).one().n;
    insertItems(
      cx,
      id,
      items.map((it) => ({ ...it, shard: it.shard === null ? null : shards + it.shard })),
      ords,
    );
    for (const it of items) if (it.cached) recordFiles(cx, it.cached.artifacts);
  };
  add(taskId, blocks.match);
  const verify = taskRows(cx).find((r) => r.kind === "verify" && dependsOn(r).includes(taskId));
  if (verify && blocks.verify) {
    const verifyId = verify.task_id as string;
    add(verifyId, blocks.verify);
    // Every block verified before: the task is done as planned (as a task whose every item is cached at submission, plan.ts).
    if (blocks.verify.length > 0 && blocks.verify.every((it) => it.cached)) {
      const now = nowIso();
      cx.sql.exec(
        "UPDATE tasks SET status = 'succeeded', outputs_json = ?, started_at = ?, finished_at = ? WHERE task_id = ?",
        JSON.stringify(assembledOutputs(cx, verifyId)),
        now,
        now,
        verifyId,
      );
      appendEvent(cx, verifyId, { kind: "phase_started", phase: verify.phase as Phase });
      appendEvent(cx, verifyId, {
        kind: "log_line",
        level: "INFO",
        message: `cache hit: reused every one of its ${blocks.verify.length} items`,
      });
      appendEvent(cx, verifyId, { kind: "phase_completed", phase: verify.phase as Phase });
    }
  }
  const hits = blocks.match.filter((it) => it.cached).length;
  const pairs = blocks.match.reduce((s, it) => s + (it.pairs?.length ?? 0), 0);
  const shards = new Set(blocks.match.flatMap((it) => (it.shard === null ? [] : [it.shard]))).size;
  appendEvent(cx, taskId, {
    kind: "log_line",
    level: "INFO",
    message: `the index's ${pairs} pairs fall in ${blocks.match.length} blocks (${hits} reused from the cache), matched in ${shards} shards`,
  });
}

/**
 * @module Sharded tasks (runners.md "Shards"): a stage task's work as content-keyed items, grouped
 * into shards that runners lease independently. The task stays one Task (spec 2.9): it runs from
 * its first shard's lease, its `phase_progress` counts shards done over shards total, and it
 * succeeds when every shard has, with one artifact whose files are its items' files in item order
 * (no byte is copied: the files are the blobs the runners uploaded). A dying runner loses only its
 * shard; cancel, resume and the cache work shard by shard and item by item.
 */
import type { ArtifactDescriptor, JobStatus, Phase, ShardItem, TaskOutputs } from "../../../protocol";
import type { PlannedItem } from "../job-rows";
import type { FieldError } from "../../errors";
import { first } from "../sql";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { type Row, shardStats } from "./records";

export const shardIdOf = (taskId: string, idx: number) => `${taskId}-${idx}`;

/** Stores a sharded task's items and its shards (every uncached item's shard is pending). */
export function insertItems(cx: JobContext, taskId: string, items: PlannedItem[]): void {
  const shards = new Set<number>();
  items.forEach((it, ord) => {
    const shardId = it.cached || it.shard === null ? null : shardIdOf(taskId, it.shard);
    if (shardId) shards.add(it.shard!);
    cx.sql.exec(
      "INSERT INTO items (task_id, ord, item_key, item_json, shard_id, outputs_json, cache_hit) VALUES (?, ?, ?, ?, ?, ?, ?)",
      taskId,
      ord,
      it.item.key,
      JSON.stringify(it.item),
      shardId,
      it.cached ? JSON.stringify(it.cached) : null,
      it.cached ? 1 : 0,
    );
  });
  for (const idx of shards) cx.sql.exec("INSERT INTO shards (shard_id, task_id, idx, status) VALUES (?, ?, ?, 'pending')", shardIdOf(taskId, idx), taskId, idx);
}

/** The lowest pending shard of the task, now running for `runnerId`; null when none is pending. */
export function takeShard(cx: JobContext, taskId: string, runnerId: string): { shard_id: string; idx: number } | null {
  const shard = first<{ shard_id: string; idx: number }>(cx.sql, "SELECT shard_id, idx FROM shards WHERE task_id = ? AND status = 'pending' ORDER BY idx LIMIT 1", taskId);
  if (!shard) return null;
  cx.sql.exec("UPDATE shards SET status = 'running', attempts = attempts + 1, runner_id = ? WHERE shard_id = ?", runnerId, shard.shard_id);
  return shard;
}

export function hasPendingShard(cx: JobContext, taskId: string): boolean {
  return pendingShards(cx, taskId) > 0;
}

export function pendingShards(cx: JobContext, taskId: string): number {
  return cx.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM shards WHERE task_id = ? AND status = 'pending'", taskId).one().n;
}

/** What a shard lease carries: the shard's items in order. */
export function leaseShard(cx: JobContext, shardId: string) {
  const shard = cx.sql.exec<{ task_id: string; idx: number }>("SELECT task_id, idx FROM shards WHERE shard_id = ?", shardId).one();
  const count = cx.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM shards WHERE task_id = ?", shard.task_id).one().n;
  return { shard_id: shardId, index: shard.idx, count, items: shardItems(cx, shardId) };
}

export function shardItems(cx: JobContext, shardId: string): ShardItem[] {
  return cx.sql
    .exec<{ item_json: string }>("SELECT item_json FROM items WHERE shard_id = ? ORDER BY ord", shardId)
    .toArray()
    .map((r) => JSON.parse(r.item_json) as ShardItem);
}

/**
 * The structural check of a shard's result before anything is recorded: one artifact per item,
 * in order, all of one kind and format, each with exactly one file at its item's path.
 */
export function shardResultErrors(items: ShardItem[], outputs: TaskOutputs): FieldError[] {
  if (outputs.artifacts.length !== items.length) {
    return [{ path: "outputs_ref.artifacts", message: `the shard has ${items.length} items: answer one artifact per item, in order`, code: "shard_items" }];
  }
  const [head] = outputs.artifacts;
  return outputs.artifacts.flatMap((a, i) => {
    const path = `outputs_ref.artifacts.${i}`;
    if (a.kind !== head!.kind || a.artifact_format !== head!.artifact_format) return [{ path: `${path}.kind`, message: "every item's artifact has the same kind and format", code: "shard_kind" }];
    if (a.files.length !== 1 || a.files[0]!.path !== items[i]!.path) return [{ path: `${path}.files`, message: `one file at '${items[i]!.path}'`, code: "shard_path" }];
    return [];
  });
}

/**
 * Records a shard's (checked) result: each item's artifact, the shard done by its runner, and a
 * `phase_progress` of shards done over total. Answers whether the task is now complete.
 */
export function recordShard(cx: JobContext, shardId: string, runnerId: string, outputs: TaskOutputs): boolean {
  const { task_id: taskId } = cx.sql.exec<{ task_id: string }>("SELECT task_id FROM shards WHERE shard_id = ?", shardId).one();
  const ords = cx.sql.exec<{ ord: number }>("SELECT ord FROM items WHERE shard_id = ? ORDER BY ord", shardId).toArray();
  ords.forEach(({ ord }, i) => {
    cx.sql.exec("UPDATE items SET outputs_json = ? WHERE task_id = ? AND ord = ?", JSON.stringify({ artifacts: [outputs.artifacts[i]], result: null }), taskId, ord);
  });
  cx.sql.exec("UPDATE shards SET status = 'succeeded', runner_id = ? WHERE shard_id = ?", runnerId, shardId);
  const stats = shardStats(cx, taskId)!;
  const phase = cx.sql.exec<{ phase: string }>("SELECT phase FROM tasks WHERE task_id = ?", taskId).one().phase as Phase;
  appendEvent(cx, taskId, { kind: "phase_progress", phase, current: stats.done, total: stats.total, rate: null });
  return stats.done === stats.total;
}

/** A shard goes back to pending (or to `status`: cancelled on a pending cancel, failed, cancelled_dirty). */
export function returnShard(cx: JobContext, shardId: string, status: "pending" | JobStatus): void {
  cx.sql.exec("UPDATE shards SET status = ?, runner_id = CASE WHEN ? = 'pending' THEN NULL ELSE runner_id END WHERE shard_id = ?", status, status, shardId);
}

/**
 * A sharded task's status from its shards (3.2): running while any shard runs or some are done
 * and others wait; failed, cancelled_dirty or cancelled once nothing runs and a shard ended so;
 * pending before any shard ran.
 */
export function rollUp(cx: JobContext, taskId: string): JobStatus {
  const counts = new Map(
    cx.sql.exec<{ status: string; n: number }>("SELECT status, COUNT(*) AS n FROM shards WHERE task_id = ? GROUP BY status", taskId).toArray().map((r) => [r.status, r.n]),
  );
  const n = (s: string) => counts.get(s) ?? 0;
  if (n("running") > 0) return "running";
  if (n("failed") > 0) return "failed";
  if (n("cancelled_dirty") > 0) return "cancelled_dirty";
  if (n("cancelled") > 0) return "cancelled";
  if (n("pending") > 0) return n("succeeded") > 0 ? "running" : "pending";
  return "succeeded";
}

/** Resume (3.1): failed and cancelled shards are pending again; done ones stay done. */
export function resetShards(cx: JobContext): void {
  cx.sql.exec("UPDATE shards SET status = 'pending', runner_id = NULL WHERE status IN ('failed', 'cancelled', 'cancelled_dirty', 'running')");
}

/** Cancel (3.1): shards not yet leased stop now. */
export function cancelPendingShards(cx: JobContext): void {
  cx.sql.exec("UPDATE shards SET status = 'cancelled' WHERE status = 'pending'");
}

/** The task's one output: per artifact position, the items' files in item order, numeric summaries summed. */
export function assembledOutputs(cx: JobContext, taskId: string): TaskOutputs {
  const parts = cx.sql
    .exec<{ outputs_json: string }>("SELECT outputs_json FROM items WHERE task_id = ? ORDER BY ord", taskId)
    .toArray()
    .map((r) => JSON.parse(r.outputs_json) as TaskOutputs);
  const first = parts[0]!.artifacts[0]!;
  const summary: Record<string, unknown> = {};
  for (const a of parts.map((p) => p.artifacts[0]!)) {
    for (const [k, v] of Object.entries(a.summary)) {
      if (typeof v === "number") summary[k] = ((summary[k] as number | undefined) ?? 0) + v;
      else if (!(k in summary)) summary[k] = v;
    }
  }
  const artifact: ArtifactDescriptor = { ...first, summary, files: parts.flatMap((p) => p.artifacts[0]!.files) };
  return { artifacts: [artifact], result: null };
}

/** Items computed by this job whose outputs the tenant has not recorded in its cache yet. */
export function unrecordedItems(cx: JobContext): { task_id: string; ord: number; cache_key: string; outputs_json: string }[] {
  return cx.sql
    .exec<{ task_id: string; ord: number; item_key: string; outputs_json: string }>(
      "SELECT task_id, ord, item_key, outputs_json FROM items WHERE outputs_json IS NOT NULL AND cache_hit = 0 AND recorded = 0",
    )
    .toArray()
    .map((r) => ({ task_id: r.task_id, ord: r.ord, cache_key: r.item_key, outputs_json: r.outputs_json }));
}

export function markItemsRecorded(cx: JobContext, items: { task_id: string; ord: number }[]): void {
  for (const it of items) cx.sql.exec("UPDATE items SET recorded = 1 WHERE task_id = ? AND ord = ?", it.task_id, it.ord);
}

/** Whether a task row is sharded. */
export const isSharded = (r: Row) => r.sharded === 1;

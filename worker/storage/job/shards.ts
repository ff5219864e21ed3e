/**
 * @module Sharded tasks (runners.md "Shards"): a stage task's work as content-keyed items, grouped
 * into shards that runners lease independently. The task stays one Task (spec 2.9): it runs from
 * its first shard's lease, its `phase_progress` counts shards done over shards total, and it
 * succeeds when every shard has, with one artifact whose files are its items' files in item order
 * (no byte is copied: the files are the blobs the runners uploaded); a match task has a second, its
 * blocks' pair lists (`pairs.image_names.v1`). A dying runner loses only its
 * shard; cancel, resume and the cache work shard by shard and item by item.
 */
import {
  type ArtifactDescriptor,
  CORE_ARTIFACT_FORMATS,
  type JobStatus,
  MERGE_PATH,
  type Phase,
  type ShardItem,
  type ShardResultRecord,
  type TaskOutputs,
} from "../../../protocol";
import { PAIR_LIST_PATH, blockPairListPath } from "../../../protocol/wire/pairs";
import type { LeaseHolder, PlannedItem, ShardNeed, ShardResult } from "../job-rows";
import type { FieldError } from "../../errors";
import { type PageRequest, type PageResult, first, nowIso, paginate } from "../sql";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { type Row, shardStats } from "./records";

export const shardIdOf = (taskId: string, idx: number) => `${taskId}-${idx}`;

/** Stores a sharded task's items (from `firstOrd`: a task may add more) and their shards (every uncached item's shard is pending). */
export function insertItems(cx: JobContext, taskId: string, items: PlannedItem[], firstOrd = 0): void {
  const shards = new Set<number>();
  items.forEach((it, i) => {
    const ord = firstOrd + i;
    const shardId = it.cached || it.shard === null ? null : shardIdOf(taskId, it.shard);
    if (shardId) shards.add(it.shard!);
    cx.sql.exec(
      "INSERT INTO items (task_id, ord, item_key, item_json, shard_id, outputs_json, cache_hit, pairs_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      taskId,
      ord,
      it.item.key,
      JSON.stringify(it.item),
      shardId,
      it.cached ? JSON.stringify(it.cached) : null,
      it.cached ? 1 : 0,
      it.pairs ? JSON.stringify(it.pairs) : null,
    );
  });
  for (const idx of shards)
    cx.sql.exec("INSERT INTO shards (shard_id, task_id, idx, status) VALUES (?, ?, ?, 'pending')", shardIdOf(taskId, idx), taskId, idx);
}

/**
 * Pending shards `holder` may compute (runners.md "Trust"): any shard for a trusted runner; for
 * an untrusted one, not those waiting for a trusted decision, nor replicas of its own principal's results.
 */
const ELIGIBLE = `task_id = ? AND status = 'pending' AND (? = 0 OR (need <> 'trusted' AND NOT EXISTS (
  SELECT 1 FROM shard_results r WHERE r.shard_id = shards.shard_id AND r.verdict = 'candidate' AND r.principal = ?)))`;
const eligibleArgs = (taskId: string, holder: LeaseHolder) => [taskId, holder.pool ? 1 : 0, principalOf(holder)] as const;

export const principalOf = (holder: LeaseHolder) => holder.principal ?? holder.runner_id;

/** The lowest pending shard of the task `holder` may compute, now running for it; null when there is none. */
export function takeShard(cx: JobContext, taskId: string, holder: LeaseHolder): { shard_id: string; idx: number } | null {
  const shard = first<{ shard_id: string; idx: number }>(
    cx.sql,
    `SELECT shard_id, idx FROM shards WHERE ${ELIGIBLE} ORDER BY idx LIMIT 1`,
    ...eligibleArgs(taskId, holder),
  );
  if (!shard) return null;
  cx.sql.exec(
    "UPDATE shards SET status = 'running', attempts = attempts + 1, runner_id = ? WHERE shard_id = ?",
    holder.runner_id,
    shard.shard_id,
  );
  return shard;
}

export function hasEligibleShard(cx: JobContext, taskId: string, holder: LeaseHolder): boolean {
  return cx.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM shards WHERE ${ELIGIBLE}`, ...eligibleArgs(taskId, holder)).one().n > 0;
}

export function hasPendingShard(cx: JobContext, taskId: string): boolean {
  return pendingShards(cx, taskId) > 0;
}

/** Pending shards an untrusted runner may compute (not waiting for a trusted decision): the pool queue's units. */
export function untrustedShards(cx: JobContext, taskId: string): number {
  return cx.sql
    .exec<{ n: number }>("SELECT COUNT(*) AS n FROM shards WHERE task_id = ? AND status = 'pending' AND need <> 'trusted'", taskId)
    .one().n;
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

/** The pair list of a match shard's item, its second output (runners.md "Shards"). */
const PAIR_LIST = { kind: "pairs.image_names.v1", artifact_format: CORE_ARTIFACT_FORMATS["pairs.image_names.v1"] } as const;

/**
 * The structural check of a shard's result before anything is recorded: one artifact per item,
 * in order, all of one kind and format, each with exactly one file at its item's path; a match
 * shard may follow them with each block's pair list, in the same order, at the block's pair-list
 * path (`pairs/<a>-<b>.txt`).
 */
export function shardResultErrors(items: ShardItem[], outputs: TaskOutputs): FieldError[] {
  // A hierarchical map's merge item (protocol/hierarchical.ts) answers the model: one artifact of its files.
  const merge = items.length === 1 && items[0]!.path === MERGE_PATH;
  if (merge && outputs.artifacts.length === 1) return [];
  const n = items.length;
  const lists = outputs.artifacts.length === 2 * n && items.every((it) => blockPairListPath(it.path) !== null);
  if (outputs.artifacts.length !== n && !lists) {
    return [
      {
        path: "outputs_ref.artifacts",
        message: `the shard has ${n} items: answer one artifact per item, in order (a match shard may follow them with each block's pair list)`,
        code: "shard_items",
      },
    ];
  }
  const [head] = outputs.artifacts;
  if (n === 1 && items[0]!.path === PAIR_LIST_PATH && head!.kind !== PAIR_LIST.kind)
    return [{ path: "outputs_ref.artifacts.0.kind", message: `a chosen pair list is a ${PAIR_LIST.kind}`, code: "shard_kind" }];
  return outputs.artifacts.flatMap((a, k) => {
    const path = `outputs_ref.artifacts.${k}`;
    const [list, item] = [k >= n, items[k % n]!];
    const kind = list ? PAIR_LIST : head!;
    if (a.kind !== kind.kind || a.artifact_format !== kind.artifact_format)
      return [
        {
          path: `${path}.kind`,
          message: list ? `a block's pair list is a ${PAIR_LIST.kind}` : "every item's artifact has the same kind and format",
          code: "shard_kind",
        },
      ];
    const at = list ? blockPairListPath(item.path)! : item.path;
    if (a.files.length !== 1 || a.files[0]!.path !== at)
      return [{ path: `${path}.files`, message: `one file at '${at}'`, code: "shard_path" }];
    return [];
  });
}

/** Item `i`'s outputs of a shard's result of `n` items: its artifact, and its pair list when the result has them. */
const itemOutputs = (outputs: TaskOutputs, n: number, i: number): TaskOutputs => ({
  artifacts: outputs.artifacts.filter((_, k) => k % n === i),
  result: null,
});

// ---- results of untrusted runners (runners.md "Trust") ----

/** Records a shard result with who computed it; answers its id. */
export function addResult(
  cx: JobContext,
  shardId: string,
  lease: { lease_id: string; runner_id: string; principal: string; trusted: boolean },
  outputs: TaskOutputs,
  verdict: string,
): number {
  return cx.sql
    .exec<{ id: number }>(
      "INSERT INTO shard_results (shard_id, lease_id, runner_id, principal, trusted, outputs_json, verdict, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING result_id AS id",
      shardId,
      lease.lease_id,
      lease.runner_id,
      lease.principal,
      lease.trusted ? 1 : 0,
      JSON.stringify(outputs),
      verdict,
      nowIso(),
    )
    .one().id;
}

/** The shard's results with `verdict`, oldest first. */
export function shardResults(cx: JobContext, shardId: string, verdict: string): ShardResult[] {
  return cx.sql
    .exec<{ result_id: number; runner_id: string; principal: string; trusted: number; outputs_json: string }>(
      "SELECT result_id, runner_id, principal, trusted, outputs_json FROM shard_results WHERE shard_id = ? AND verdict = ? ORDER BY result_id",
      shardId,
      verdict,
    )
    .toArray()
    .map((r) => ({
      result_id: r.result_id,
      runner_id: r.runner_id,
      principal: r.principal,
      trusted: r.trusted === 1,
      outputs: JSON.parse(r.outputs_json) as TaskOutputs,
    }));
}

/**
 * A page of the job's shard results (of `taskId` when given) in the order they arrived, each with
 * its files' digests (runners.md "Trust": what an auditor reads).
 */
export function shardResultPage(cx: JobContext, taskId: string | null, page: PageRequest): PageResult<ShardResultRecord> {
  type R = {
    result_id: number;
    task_id: string;
    idx: number;
    runner_id: string;
    trusted: number;
    verdict: string;
    created_at: string;
    outputs_json: string;
  };
  return paginate<R, ShardResultRecord>(
    cx.sql,
    {
      table: `(SELECT r.result_id, s.task_id, s.idx, r.runner_id, r.trusted, r.verdict, r.created_at, r.outputs_json
               FROM shard_results r JOIN shards s ON s.shard_id = r.shard_id)`,
      key: "result_id",
      where: taskId ? "task_id = ?" : "1 = 1",
      params: taskId ? [taskId] : [],
    },
    page,
    (r) => ({
      result_id: r.result_id,
      task_id: r.task_id,
      shard_index: r.idx,
      runner_id: r.runner_id,
      trusted: r.trusted === 1,
      verdict: r.verdict as ShardResultRecord["verdict"],
      created_at: r.created_at,
      files: (JSON.parse(r.outputs_json) as TaskOutputs).artifacts.flatMap((a) => a.files),
    }),
  );
}

/** A shard waiting for another result: pending again, for whom `need` says. */
export function awaitResult(cx: JobContext, shardId: string, need: ShardNeed): void {
  const cancelling = cx.sql.exec<{ c: number }>("SELECT cancel_requested AS c FROM job WHERE id = 1").one().c === 1;
  cx.sql.exec(
    "UPDATE shards SET status = ?, need = ?, runner_id = NULL WHERE shard_id = ?",
    cancelling ? "cancelled" : "pending",
    need,
    shardId,
  );
}

/**
 * Drops the open results of a quarantined principal in this job (runners.md "Trust"): they are
 * rejected, and a shard left with no open result no longer waits for a replica.
 */
export function dropResultsOf(cx: JobContext, principal: string): void {
  const open = cx.sql
    .exec<{ shard_id: string }>("SELECT DISTINCT shard_id FROM shard_results WHERE principal = ? AND verdict = 'candidate'", principal)
    .toArray()
    .map((r) => r.shard_id);
  cx.sql.exec("UPDATE shard_results SET verdict = 'rejected' WHERE principal = ? AND verdict = 'candidate'", principal);
  for (const shardId of open) {
    const left = shardResults(cx, shardId, "candidate").length;
    cx.sql.exec(
      "UPDATE shards SET need = ? WHERE shard_id = ? AND status <> 'succeeded'",
      left === 0 ? "any" : left === 1 ? "replica" : "trusted",
      shardId,
    );
  }
}

/** Records a shard's (checked) result: each item's artifact, and the shard done by its runner. */
export function recordShard(cx: JobContext, shardId: string, runnerId: string, outputs: TaskOutputs): void {
  const ords = cx.sql.exec<{ ord: number }>("SELECT ord FROM items WHERE shard_id = ? ORDER BY ord", shardId).toArray();
  // Every item's outputs in one statement (a batch completion records many shards): {ord: outputs_json as text}.
  const byOrd = Object.fromEntries(ords.map(({ ord }, i) => [ord, JSON.stringify(itemOutputs(outputs, ords.length, i))]));
  cx.sql.exec(
    "UPDATE items SET outputs_json = (SELECT value FROM json_each(?) WHERE key = CAST(items.ord AS TEXT)) WHERE shard_id = ?",
    JSON.stringify(byOrd),
    shardId,
  );
  cx.sql.exec("UPDATE shards SET status = 'succeeded', need = 'any', runner_id = ? WHERE shard_id = ?", runnerId, shardId);
}

/** A `phase_progress` of the task's shards done over total; answers whether every shard is done. */
export function reportShards(cx: JobContext, taskId: string): boolean {
  const stats = shardStats(cx, taskId)!;
  const phase = cx.sql.exec<{ phase: string }>("SELECT phase FROM tasks WHERE task_id = ?", taskId).one().phase as Phase;
  appendEvent(cx, taskId, { kind: "phase_progress", phase, current: stats.done, total: stats.total, rate: null });
  return stats.done === stats.total;
}

/** A shard goes back to pending (or to `status`: cancelled on a pending cancel, failed, cancelled_dirty). */
export function returnShard(cx: JobContext, shardId: string, status: "pending" | JobStatus): void {
  cx.sql.exec(
    "UPDATE shards SET status = ?, runner_id = CASE WHEN ? = 'pending' THEN NULL ELSE runner_id END WHERE shard_id = ?",
    status,
    status,
    shardId,
  );
}

/**
 * A sharded task's status from its shards (3.2): running while any shard runs or some are done
 * and others wait; failed, cancelled_dirty or cancelled once nothing runs and a shard ended so;
 * pending before any shard ran.
 */
export function rollUp(cx: JobContext, taskId: string): JobStatus {
  const counts = new Map(
    cx.sql
      .exec<{ status: string; n: number }>("SELECT status, COUNT(*) AS n FROM shards WHERE task_id = ? GROUP BY status", taskId)
      .toArray()
      .map((r) => [r.status, r.n]),
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
  cx.sql.exec(
    "UPDATE shards SET status = 'pending', runner_id = NULL WHERE status IN ('failed', 'cancelled', 'cancelled_dirty', 'running')",
  );
}

/** Cancel (3.1): shards not yet leased stop now. */
export function cancelPendingShards(cx: JobContext): void {
  cx.sql.exec("UPDATE shards SET status = 'cancelled' WHERE status = 'pending'");
}

/**
 * The task's outputs: per artifact position (the items' artifacts, then a match task's pair lists,
 * when every item has one), the items' files in item order, numeric summaries summed.
 */
export function assembledOutputs(cx: JobContext, taskId: string): TaskOutputs {
  // A chosen pair list (pair-list.ts) is the job's own work, not a part of the task's artifacts.
  const parts = cx.sql
    .exec<{ outputs_json: string }>(
      "SELECT outputs_json FROM items WHERE task_id = ? AND item_json ->> '$.path' <> ? ORDER BY ord",
      taskId,
      PAIR_LIST_PATH,
    )
    .toArray()
    .map((r) => JSON.parse(r.outputs_json) as TaskOutputs);
  const positions = Math.min(...parts.map((p) => p.artifacts.length));
  const assembled = (position: number): ArtifactDescriptor => {
    const artifacts = parts.map((p) => p.artifacts[position]!);
    const summary: Record<string, unknown> = {};
    for (const a of artifacts) {
      for (const [k, v] of Object.entries(a.summary)) {
        if (typeof v === "number") summary[k] = ((summary[k] as number | undefined) ?? 0) + v;
        else if (!(k in summary)) summary[k] = v;
      }
    }
    return { ...artifacts[0]!, summary, files: artifacts.flatMap((a) => a.files) };
  };
  return { artifacts: Array.from({ length: positions }, (_, p) => assembled(p)), result: null };
}

/** Items computed by this job whose outputs the tenant has not recorded in its cache yet. */
export function unrecordedItems(cx: JobContext): { task_id: string; ord: number; cache_key: string; outputs_json: string }[] {
  return cx.sql
    .exec<{ task_id: string; ord: number; item_key: string; outputs_json: string }>(
      // A hierarchical map's items and a chosen pair list are the job's own work units (hierarchical.ts, pair-list.ts),
      // not reusable: never recorded.
      `SELECT task_id, ord, item_key, outputs_json FROM items WHERE outputs_json IS NOT NULL AND cache_hit = 0 AND recorded = 0
         AND task_id NOT IN (SELECT task_id FROM tasks WHERE kind = 'map') AND item_json ->> '$.path' <> ?`,
      PAIR_LIST_PATH,
    )
    .toArray()
    .map((r) => ({ task_id: r.task_id, ord: r.ord, cache_key: r.item_key, outputs_json: r.outputs_json }));
}

export function markItemsRecorded(cx: JobContext, items: { task_id: string; ord: number }[]): void {
  if (items.length === 0) return;
  cx.sql.exec(
    "UPDATE items SET recorded = 1 WHERE (task_id, ord) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))",
    JSON.stringify(items.map((it) => [it.task_id, it.ord])),
  );
}

/** Whether a task row is sharded. */
export const isSharded = (r: Row) => r.sharded === 1;

/**
 * @module Leases (spec 3.2.3): a ready task leased to one runner at a time, held for a TTL that
 * each heartbeat and report extends, and lost when it expires (the task goes back to the queue).
 * A lease id names its tenant and job, so any route can find the job's object.
 */
import { type LeaseDirective, type LeaseState, type Phase, type TaskKind, TERMINAL_STATUSES } from "../../../protocol";
import { readConfig } from "../../config";
import type { LeaseHolder, LeaseScope, ShardContext } from "../job-rows";
import { secret } from "../key-registry";
import { type Outcome, clash, missing, ok } from "../outcome";
import { exists, first, nowIso } from "../sql";
import type { JobContext } from "./context";
import { appendEvent, latestEventId } from "./events";
import { propagate, scheduleAlarm } from "./propagate";
import { ancestors, dependsOn, featureFiles, frozen, jobDataset, jobRow, taskRow } from "./records";
import {
  hasEligibleShard,
  hasPendingShard,
  isSharded,
  leaseShard,
  pendingShards,
  principalOf,
  returnShard,
  rollUp,
  shardItems,
  takeShard,
  untrustedShards,
} from "./shards";
import { setStatus, settle } from "./status";

/** A lease id names its job so any route can find the object: `<tenant>.<job>.<task>.<secret>`. */
export function parseLeaseId(leaseId: string): { tenant: string; job: string } | null {
  const parts = leaseId.split(".");
  return parts.length === 4 && parts.every((p) => /^[A-Za-z0-9_-]+$/.test(p)) ? { tenant: parts[0]!, job: parts[1]! } : null;
}

/** What a lease grant answers: the leases as JSON text (none when the task is no longer leasable), and what is left to lease. */
export interface Grant {
  /** Each `Lease` as the route answers it, serialised here from the stored JSON (the dataset is not parsed or copied per lease). */
  leases: { lease: string; lease_id: string }[];
  /** Further shards of the task the holder's scope may lease (the queue entry's units); 0 for an unsharded task. */
  left: number;
  /** The lease covers a whole task (not sharded): a multi-shard lease takes nothing beside it. */
  whole?: boolean;
}

/**
 * Leases the task (or up to `count` of its pending shards, runners.md "Batching": each its own
 * lease, expiry and reclaim) to a runner when it is still leasable: the job is live and not being
 * cancelled, the task is pending (a sharded one: has a pending shard) and every dependency
 * succeeded. `leases` is empty otherwise (the caller drops its stale queue entry); `left` counts
 * the task's shards still to lease. `onlyShards`: a task that is not sharded is not leased (1 left).
 * `inputsByRef` (the runner asked, runners.md "Inputs by reference"): the grant's further leases carry
 * `inputs` as `{"x-inputs_of": <the first's lease_id>}` instead of repeating them (the first is whole).
 */
export async function grantLease(
  cx: JobContext,
  taskId: string,
  holder: LeaseHolder,
  count = 1,
  onlyShards = false,
  inputsByRef = false,
): Promise<Grant> {
  const job = jobRow(cx);
  const task = taskRow(cx, taskId);
  const none: Grant = { leases: [], left: 0 };
  if (!job || !task || !["pending", "running"].includes(job.status) || job.cancel_requested) return none;
  const sharded = isSharded(task);
  // A multi-shard lease's further leases are shards only (a whole task, say a map, is never leased beside others): offered on.
  if (onlyShards && !sharded) return { ...none, left: 1 };
  const left = () => (!sharded ? 0 : holder.pool ? untrustedShards(cx, taskId) : pendingShards(cx, taskId));
  if (sharded ? !["pending", "running"].includes(task.status as string) || !hasPendingShard(cx, taskId) : task.status !== "pending")
    return none;
  if (!dependsOn(task).every((d) => taskRow(cx, d)?.status === "succeeded")) return none;
  // Pending shards, but only replicas of this runner's own results or ones for a trusted runner: others may take them.
  if (sharded && !hasEligibleShard(cx, taskId, holder)) return { ...none, left: left() };
  const ttl = readConfig(cx.env).leaseTtlMs;
  const now = Date.now();
  const granted = cx.storage.transactionSync(() => {
    const granted: { lease_id: string; shard_id: string | null }[] = [];
    for (let k = 0; k < (sharded ? count : 1); k++) {
      const shard = sharded ? takeShard(cx, taskId, holder) : null;
      if (sharded && !shard) break;
      const leaseId = `${job.tenant_id}.${job.job_id}.${taskId}.${secret()}`;
      cx.sql.exec(
        "INSERT INTO leases (lease_id, task_id, runner_id, pool, granted_at, expires_at, state, shard_id, principal) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)",
        leaseId,
        taskId,
        holder.runner_id,
        holder.pool ? 1 : 0,
        new Date(now).toISOString(),
        now + ttl,
        shard?.shard_id ?? null,
        principalOf(holder),
      );
      granted.push({ lease_id: leaseId, shard_id: shard?.shard_id ?? null });
    }
    const starting = task.status === "pending";
    cx.sql.exec(
      `UPDATE tasks SET status = 'running', attempts = attempts + ?, started_at = COALESCE(started_at, ?)${sharded ? "" : ", progress_current = NULL, progress_total = NULL"} WHERE task_id = ?`,
      granted.length,
      new Date(now).toISOString(),
      taskId,
    );
    if (job.status === "pending") {
      cx.sql.exec("UPDATE job SET started_at = ? WHERE id = 1", new Date(now).toISOString());
      setStatus(cx, "running");
    }
    if (starting) appendEvent(cx, taskId, { kind: "phase_started", phase: task.phase as Phase });
    return granted;
  });
  await scheduleAlarm(cx);
  await propagate(cx);
  const leased = taskRow(cx, taskId)!;
  const { datasetJson, artifactsJson } = frozen(cx);
  const upstream = ancestors(cx, taskId).map((d) => {
    const dep = taskRow(cx, d)!;
    return `{"task_id":${JSON.stringify(d)},"kind":${JSON.stringify(dep.kind)},"outputs_ref":${dep.outputs_json as string}}`;
  });
  const taskHead = JSON.stringify({
    task_id: taskId,
    job_id: job.job_id,
    kind: leased.kind as TaskKind,
    phase: leased.phase as Phase,
    attempt: leased.attempts as number,
  });
  // What every lease of the grant shares, serialised once; by reference, the further leases name the first's inputs.
  const taskPart = `"task":${taskHead.slice(0, -1)},"params":${leased.params_json as string}},`;
  const checkpoint = `"checkpoint":${(leased.checkpoint_json as string | null) ?? "null"},`;
  const body = `${taskPart}"inputs":{"dataset":${datasetJson},"upstream":[${upstream.join(",")}],"artifacts":${artifactsJson}},${checkpoint}`;
  const byRef =
    inputsByRef && granted.length > 1
      ? `${taskPart}"inputs":${JSON.stringify({ "x-inputs_of": granted[0]!.lease_id })},${checkpoint}`
      : body;
  // A Lease (protocol/schemas/runner.ts) in its field order, the stored JSON spliced in as it is.
  const leases = granted.map(({ lease_id: leaseId, shard_id: shardId }, k) => {
    const head = JSON.stringify({
      lease_id: leaseId,
      runner_id: holder.runner_id,
      expires_at: new Date(now + ttl).toISOString(),
      ttl_seconds: Math.round(ttl / 1000),
    });
    const tail = JSON.stringify({ shard: shardId ? leaseShard(cx, shardId) : null, _links: leaseLinks(leaseId) });
    return { lease: `${head.slice(0, -1)},${k === 0 ? body : byRef}${tail.slice(1)}`, lease_id: leaseId };
  });
  return { leases, left: left(), whole: !sharded };
}

/** Whether the lease is still held (a runner holds at most one lease; see Dispatcher). */
export function leaseActive(cx: JobContext, leaseId: string): boolean {
  return exists(cx.sql, "SELECT 1 FROM leases WHERE lease_id = ? AND state = 'active'", leaseId);
}

/** Holds the lease for another TTL and tells the runner whether to go on. */
export function heartbeat(cx: JobContext, leaseId: string, scope: LeaseScope): Outcome<LeaseState> {
  const lease = leaseRow(cx, leaseId, scope);
  if (!lease) return missing("lease");
  if (lease.state === "active") extendLease(cx, leaseId);
  return ok(leaseState(cx, leaseId));
}

/** The lease when the holder still holds it: 404 for an unknown one, 409 for one no longer held. */
export function heldLease(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
): Outcome<{ lease_id: string; task_id: string; runner_id: string; shard_id: string | null; pool: number; principal: string | null }> {
  const lease = leaseRow(cx, leaseId, scope);
  if (!lease) return missing("lease");
  if (lease.state !== "active") return clash(`the lease is no longer held (${lease.state})`);
  return ok(lease);
}

/** The held lease's task and the job's reconstruction (what a snapshot seal is checked against). */
export function leaseTask(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
): Outcome<{
  job_id: string;
  project_id: string;
  task_id: string;
  kind: TaskKind;
  params_json: string;
  recon_id: string | null;
  manifest_hash: string | null;
}> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const job = jobRow(cx)!;
  const task = taskRow(cx, lease.value.task_id)!;
  return ok({
    job_id: job.job_id,
    project_id: job.project_id,
    task_id: lease.value.task_id,
    kind: task.kind as TaskKind,
    params_json: task.params_json as string,
    recon_id: job.recon_id,
    manifest_hash: jobDataset(cx)?.manifest_hash ?? null,
  });
}

/**
 * What a held shard lease's result is checked against (runners.md "Trust"): the shard's items, the
 * dataset's image sizes, and the features its images' matches index into (`features/<name>` files
 * of the features input: the job's input artifact, or the upstream extraction). Null for a whole-task lease.
 */
export function shardContext(cx: JobContext, leaseId: string, scope: LeaseScope): Outcome<ShardContext | null> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  if (!lease.value.shard_id) return ok(null);
  return ok({
    kind: taskRow(cx, lease.value.task_id)!.kind as TaskKind,
    items: shardItems(cx, lease.value.shard_id),
    images: (jobDataset(cx)?.images ?? []).map((im) => ({ name: im.name, width: im.width ?? null, height: im.height ?? null })),
    features: [...featureFiles(cx, lease.value.task_id)].map(([name, f]) => ({ name, blob_sha: f.blob_sha })),
  });
}

export function extendLease(cx: JobContext, leaseId: string): void {
  cx.sql.exec("UPDATE leases SET expires_at = ? WHERE lease_id = ?", Date.now() + readConfig(cx.env).leaseTtlMs, leaseId);
}

/** What a runner is told about its lease: until when it holds it, and whether to go on, stop at a phase boundary, or tear down. */
export function leaseState(cx: JobContext, leaseId: string): LeaseState {
  const lease = cx.sql
    .exec<{ state: string; expires_at: number }>("SELECT state, expires_at FROM leases WHERE lease_id = ?", leaseId)
    .one();
  const job = jobRow(cx)!;
  const directive: LeaseDirective = lease.state !== "active" ? "teardown" : job.cancel_requested ? "stop" : "continue";
  return { lease_id: leaseId, expires_at: new Date(lease.expires_at).toISOString(), directive, latest_event_id: latestEventId(cx) };
}

/** A vanished runner loses its lease and the task goes back to the queue (the alarm's part). */
export function expireLeases(cx: JobContext): void {
  const expired = cx.sql
    .exec<{ lease_id: string; task_id: string; runner_id: string; shard_id: string | null }>(
      "SELECT lease_id, task_id, runner_id, shard_id FROM leases WHERE state = 'active' AND expires_at <= ?",
      Date.now(),
    )
    .toArray();
  if (expired.length === 0) return;
  cx.storage.transactionSync(() => {
    for (const l of expired) {
      cx.sql.exec("UPDATE leases SET state = 'expired' WHERE lease_id = ?", l.lease_id);
      returnWork(cx, l, `the lease of runner ${l.runner_id} expired`);
    }
    settle(cx);
  });
}

/**
 * An unfinished lease's work goes back: its shard (only that shard: the others are untouched) or
 * its whole task, to pending, or to cancelled when a cancel is pending.
 */
export function returnWork(cx: JobContext, lease: { task_id: string; shard_id: string | null }, why: string): void {
  if (!lease.shard_id) return returnTask(cx, lease.task_id, why);
  const cancelling = jobRow(cx)!.cancel_requested;
  returnShard(cx, lease.shard_id, cancelling ? "cancelled" : "pending");
  rollUpTask(cx, lease.task_id);
  appendEvent(cx, lease.task_id, {
    kind: "warning",
    message: cancelling ? `${why}; its shard ${lease.shard_id} is cancelled` : `${why}; its shard ${lease.shard_id} is queued again`,
  });
}

/** A sharded task's status follows its shards' (shards.ts rollUp). */
export function rollUpTask(cx: JobContext, taskId: string): void {
  const status = rollUp(cx, taskId);
  cx.sql.exec(
    "UPDATE tasks SET status = ?, finished_at = ? WHERE task_id = ?",
    status,
    TERMINAL_STATUSES.has(status) ? nowIso() : null,
    taskId,
  );
}

/** An unfinished task goes back to pending, or to cancelled when a cancel is pending. */
export function returnTask(cx: JobContext, taskId: string, why: string): void {
  const cancelling = jobRow(cx)!.cancel_requested;
  cx.sql.exec(
    "UPDATE tasks SET status = ?, finished_at = ?, progress_current = NULL, progress_total = NULL WHERE task_id = ?",
    cancelling ? "cancelled" : "pending",
    cancelling ? nowIso() : null,
    taskId,
  );
  appendEvent(cx, taskId, { kind: "warning", message: cancelling ? `${why}; the task is cancelled` : `${why}; the task is queued again` });
}

function leaseRow(cx: JobContext, leaseId: string, scope: LeaseScope) {
  return first<{
    lease_id: string;
    task_id: string;
    runner_id: string;
    state: string;
    expires_at: number;
    shard_id: string | null;
    pool: number;
    principal: string | null;
  }>(
    cx.sql,
    "SELECT lease_id, task_id, runner_id, state, expires_at, shard_id, pool, principal FROM leases WHERE lease_id = ? AND pool = ?",
    leaseId,
    scope.pool ? 1 : 0,
  );
}

function leaseLinks(leaseId: string) {
  const base = `/v1/leases/${leaseId}`;
  return {
    self: { href: base },
    heartbeat: { href: `${base}:heartbeat` },
    events: { href: `${base}/events` },
    blobs: { href: `${base}/blobs/{sha}` },
    checkpoint: { href: `${base}/checkpoint` },
    complete: { href: `${base}:complete` },
    fail: { href: `${base}:fail` },
    release: { href: `${base}:release` },
  };
}

/**
 * @module The job's status (spec 3.1): set with its timestamps and a `job_status` event (our
 * additive kind), rolled up from its tasks' states, cancelled (cooperatively or by force) and
 * resumed.
 */
import type { JobStatus } from "../../../protocol";
import { TERMINAL_STATUSES } from "../../../protocol";
import type { JobRow } from "../job-rows";
import { type Outcome, clash, missing, ok } from "../outcome";
import { nowIso } from "../sql";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { propagate } from "./propagate";
import { jobRow, runtimeDeadline, taskRows } from "./records";
import { cancelPendingShards, resetShards, returnShard, rollUp } from "./shards";

/** Sets the job status with its timestamps and error, and logs a `job_status` event. */
export function setStatus(cx: JobContext, status: JobStatus, error?: { error_class: string; error_message: string }): void {
  const finished = TERMINAL_STATUSES.has(status) ? nowIso() : null;
  cx.sql.exec(
    "UPDATE job SET status = ?, finished_at = ?, error_class = ?, error_message = ? WHERE id = 1",
    status,
    finished,
    error?.error_class ?? null,
    error?.error_message ?? null,
  );
  appendEvent(cx, null, { kind: "job_status", status, error_class: error?.error_class ?? null });
}

/** Rolls the task states up into the job (3.1): done, failed, or cancelled once nothing runs. */
export function settle(cx: JobContext): void {
  const job = jobRow(cx)!;
  if (TERMINAL_STATUSES.has(job.status)) return;
  const tasks = taskRows(cx);
  if (tasks.every((t) => t.status === "succeeded")) return setStatus(cx, "succeeded");
  if (tasks.some((t) => t.status === "running")) return;
  if (job.cancel_requested) {
    cancelPending(cx);
    return setStatus(cx, "cancelled");
  }
  const failed = tasks.find((t) => t.status === "failed");
  if (failed) return setStatus(cx, "failed", { error_class: failed.error_class as string, error_message: failed.error_message as string });
}

/** Cooperative: pending tasks stop now, running ones at their next phase boundary. Force: everything stops now. */
export async function cancel(cx: JobContext, force: boolean): Promise<Outcome<JobRow>> {
  const job = jobRow(cx);
  if (!job) return missing("job");
  if (job.status === "succeeded" || job.status === "failed") return clash(`the job already ${job.status}`);
  if (job.status === "cancelled" || job.status === "cancelled_dirty") return ok(job);
  cx.storage.transactionSync(() => {
    cx.sql.exec("UPDATE job SET cancel_requested = 1, cancel_force = cancel_force OR ? WHERE id = 1", force ? 1 : 0);
    cancelPending(cx);
    if (force) {
      const finished = nowIso();
      for (const l of cx.sql
        .exec<{ lease_id: string; task_id: string; shard_id: string | null }>(
          "SELECT lease_id, task_id, shard_id FROM leases WHERE state = 'active'",
        )
        .toArray()) {
        cx.sql.exec("UPDATE leases SET state = 'revoked' WHERE lease_id = ?", l.lease_id);
        if (l.shard_id) returnShard(cx, l.shard_id, "cancelled_dirty");
        cx.sql.exec("UPDATE tasks SET status = 'cancelled_dirty', finished_at = ? WHERE task_id = ?", finished, l.task_id);
      }
      setStatus(cx, "cancelled_dirty");
    } else {
      appendEvent(cx, null, {
        kind: "log_line",
        level: "INFO",
        message: "cancel requested: running tasks stop at their next phase boundary",
      });
      settle(cx);
    }
  });
  await propagate(cx);
  return ok(jobRow(cx)!);
}

/** Resets failed and cancelled tasks and re-enqueues them; a map task keeps its checkpoint (3.1). */
export async function resume(cx: JobContext): Promise<Outcome<JobRow>> {
  const job = jobRow(cx);
  if (!job) return missing("job");
  if (!["failed", "cancelled", "cancelled_dirty"].includes(job.status)) return clash(`a ${job.status} job cannot be resumed`);
  cx.storage.transactionSync(() => {
    cx.sql.exec(
      `UPDATE tasks SET status = 'pending', started_at = NULL, finished_at = NULL, error_class = NULL, error_message = NULL,
         progress_current = NULL, progress_total = NULL WHERE status IN ('failed', 'cancelled', 'cancelled_dirty')`,
    );
    resetShards(cx);
    cx.sql.exec(
      `UPDATE job SET cancel_requested = 0, cancel_force = 0, started_at = NULL, finished_at = NULL, error_class = NULL,
         error_message = NULL WHERE id = 1`,
    );
    setStatus(cx, "pending");
  });
  await propagate(cx);
  return ok(jobRow(cx)!);
}

/**
 * Fails a job that has run past its `max_runtime_seconds` (counted from its start): the leases are
 * revoked (their runners are told at their next heartbeat), running tasks fail with `TimeoutError`,
 * pending ones are cancelled; `:resume` starts the clock again. Answers whether it did.
 */
export function enforceRuntime(cx: JobContext): boolean {
  const deadline = runtimeDeadline(cx);
  if (deadline === null || Date.now() < deadline) return false;
  const limit = cx.sql.exec<{ m: number }>("SELECT max_runtime_seconds AS m FROM job WHERE id = 1").one().m;
  const error = { error_class: "TimeoutError", error_message: `the job ran longer than its max_runtime_seconds (${limit} s)` };
  cx.storage.transactionSync(() => {
    const finished = nowIso();
    for (const l of cx.sql
      .exec<{ lease_id: string; shard_id: string | null }>("SELECT lease_id, shard_id FROM leases WHERE state = 'active'")
      .toArray()) {
      cx.sql.exec("UPDATE leases SET state = 'revoked' WHERE lease_id = ?", l.lease_id);
      if (l.shard_id) returnShard(cx, l.shard_id, "failed");
    }
    for (const t of cx.sql.exec<{ task_id: string }>("SELECT task_id FROM tasks WHERE status = 'running'").toArray()) {
      cx.sql.exec(
        "UPDATE tasks SET status = 'failed', error_class = ?, error_message = ?, finished_at = ? WHERE task_id = ?",
        error.error_class,
        error.error_message,
        finished,
        t.task_id,
      );
      appendEvent(cx, t.task_id, {
        kind: "error",
        error_class: error.error_class,
        message: error.error_message,
        detail: { max_runtime_seconds: limit },
      });
    }
    cancelPending(cx);
    setStatus(cx, "failed", error);
  });
  return true;
}

function cancelPending(cx: JobContext): void {
  cx.sql.exec("UPDATE tasks SET status = 'cancelled', finished_at = ? WHERE status = 'pending'", nowIso());
  cancelPendingShards(cx);
  // A sharded task between leases has nothing running: it is cancelled now too.
  for (const t of cx.sql.exec<{ task_id: string }>("SELECT task_id FROM tasks WHERE sharded = 1 AND status = 'running'").toArray()) {
    const status = rollUp(cx, t.task_id);
    if (status !== "running") cx.sql.exec("UPDATE tasks SET status = ?, finished_at = ? WHERE task_id = ?", status, nowIso(), t.task_id);
  }
}

/**
 * @module How a leased task ends (spec 3.1, 3.2): completed with validated outputs (2.11 rule
 * 3), failed with its error class (7), or released unfinished (queued again). Each ends the
 * lease, rolls the task states up into the job and propagates the change.
 */
import type { Phase, TaskOutputs } from "../../../protocol";
import type { LeaseScope } from "../job-rows";
import { type Outcome, invalid, ok } from "../outcome";
import { nowIso } from "../sql";
import { inputSize } from "./blobs";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { heldLease, returnWork } from "./leases";
import { propagate } from "./propagate";
import { taskRow } from "./records";
import { assembledOutputs, recordShard, returnShard, shardItems, shardResultErrors } from "./shards";
import { settle } from "./status";

/**
 * Completes the task with validated outputs. Every file must be a blob uploaded under this job,
 * or one of its inputs (a dataset image, an input artifact's file: an export lists the photos
 * it references), with the declared size; otherwise the task fails with a validation error
 * (2.11 rule 3) and nothing else is lost. The outputs are then recorded by the tenant
 * (propagate): the cache entry and the artifacts.
 */
export async function complete(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
  outputs: TaskOutputs,
): Promise<Outcome<{ task_id: string; runner_id: string }>> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const errors = outputs.artifacts.flatMap((a, i) =>
    a.files.flatMap((f, j) => {
      const size = inputSize(cx, f.blob_sha);
      const path = `outputs_ref.artifacts.${i}.files.${j}`;
      if (size === undefined) return [{ path: `${path}.blob_sha`, message: "no blob with this sha was uploaded under this job, nor is it an input of the job", code: "unknown_blob" }];
      if (size !== f.byte_size) return [{ path: `${path}.byte_size`, message: `the blob has ${size} bytes`, code: "size_mismatch" }];
      return [];
    }),
  );
  const shardId = lease.value.shard_id;
  if (shardId) errors.push(...shardResultErrors(shardItems(cx, shardId), outputs));
  if (errors.length > 0) {
    await fail(cx, leaseId, scope, { error_class: "ValidationError", message: "the task's outputs_ref is invalid", detail: { errors } });
    return invalid("outputs_ref rejected; the task failed with a validation error", errors);
  }
  const taskId = lease.value.task_id;
  const task = taskRow(cx, taskId)!;
  cx.storage.transactionSync(() => {
    cx.sql.exec("UPDATE leases SET state = 'completed' WHERE lease_id = ?", leaseId);
    // A shard's items are recorded; the task completes with the last one (unless it already ended, e.g. failed).
    if (shardId && !recordShard(cx, shardId, lease.value.runner_id, outputs)) return;
    if (shardId && task.status !== "running") return;
    const taskOutputs = shardId ? assembledOutputs(cx, taskId) : outputs;
    cx.sql.exec("UPDATE tasks SET status = 'succeeded', outputs_json = ?, finished_at = ? WHERE task_id = ?", JSON.stringify(taskOutputs), nowIso(), taskId);
    appendEvent(cx, taskId, { kind: "phase_completed", phase: task.phase as Phase });
    settle(cx);
  });
  await propagate(cx);
  return ok({ task_id: taskId, runner_id: lease.value.runner_id });
}

/** The runner reports failure: the task fails, the job fails with its error class (3.1, 7). */
export async function fail(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
  error: { error_class: string; message: string; detail: Record<string, unknown> | null },
): Promise<Outcome<{ runner_id: string }>> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const taskId = lease.value.task_id;
  cx.storage.transactionSync(() => {
    cx.sql.exec("UPDATE leases SET state = 'failed' WHERE lease_id = ?", leaseId);
    // A failed shard fails its task (and the job) as a failed task does; resume retries the shards not done.
    if (lease.value.shard_id) returnShard(cx, lease.value.shard_id, "failed");
    cx.sql.exec(
      "UPDATE tasks SET status = 'failed', error_class = ?, error_message = ?, finished_at = ? WHERE task_id = ?",
      error.error_class,
      error.message,
      nowIso(),
      taskId,
    );
    appendEvent(cx, taskId, { kind: "error", error_class: error.error_class, message: error.message, detail: error.detail });
    settle(cx);
  });
  await propagate(cx);
  return ok({ runner_id: lease.value.runner_id });
}

/** The runner gives the task back unfinished: it is re-queued, or cancelled when a cancel is pending. */
export async function release(cx: JobContext, leaseId: string, scope: LeaseScope, reason: string): Promise<Outcome<{ runner_id: string }>> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  cx.storage.transactionSync(() => {
    cx.sql.exec("UPDATE leases SET state = 'released' WHERE lease_id = ?", leaseId);
    returnWork(cx, lease.value, `released by runner ${lease.value.runner_id}: ${reason}`);
    settle(cx);
  });
  await propagate(cx);
  return ok({ runner_id: lease.value.runner_id });
}

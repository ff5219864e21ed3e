/**
 * @module How a leased task ends (spec 3.1, 3.2): completed with validated outputs (2.11 rule
 * 3), failed with its error class (7), or released unfinished (queued again). Each ends the
 * lease, rolls the task states up into the job and propagates the change.
 */
import type { Phase, TaskOutputs } from "../../../protocol";
import type { FieldError } from "../../errors";
import type { Completion, Judgement, LeaseScope } from "../job-rows";
import { type Outcome, clash, invalid, missing, ok } from "../outcome";
import { exists, first, nowIso } from "../sql";
import { inputSize } from "./blobs";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { extendLease, heldLease, returnWork, rollUpTask } from "./leases";
import { propagate } from "./propagate";
import { taskRow } from "./records";
import { growHierarchical, partitionErrors, shardedOutputs } from "./hierarchical";
import { type ListedBlocks, addListedBlocks, isPairList } from "./pair-list";
import {
  addResult,
  awaitResult,
  dropResultsOf,
  recordShard,
  reportShards,
  returnShard,
  shardItems,
  shardResultErrors,
  shardResults,
} from "./shards";
import { packByKeypoints } from "./sizing";
import { settle } from "./status";

/**
 * Completes the task with validated outputs. Every file must be a blob uploaded under this job,
 * or one of its inputs (a dataset image, an input artifact's file: an export lists the photos
 * it references), with the declared size; otherwise the task fails with a validation error
 * (2.11 rule 3) and nothing else is lost. The outputs are then recorded by the tenant
 * (propagate): the cache entry and the artifacts.
 *
 * A shard's result is first weighed by who computed it (runners.md "Trust"): an untrusted runner's
 * invalid result (here, or `refused` by the validation service's reading of its files) is discarded and its shard queued again (the task goes on); a result the
 * validation service wants confirmed (`replicate`) is held until a runner of another principal
 * computes the shard again; a result for a shard that already holds one answers `compare` and
 * keeps its lease until the service's `judge`.
 */
export async function complete(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
  outputs: TaskOutputs,
  policy: { replicate: boolean; refused?: FieldError[]; blocks?: ListedBlocks } = { replicate: false },
  tell = true,
  batch: Batch | null = null,
): Promise<Outcome<Completion>> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const errors = outputs.artifacts.flatMap((a, i) =>
    a.files.flatMap((f, j) => {
      const size = inputSize(cx, f.blob_sha);
      const path = `outputs_ref.artifacts.${i}.files.${j}`;
      if (size === undefined)
        return [
          {
            path: `${path}.blob_sha`,
            message: "no blob with this sha was uploaded under this job, nor is it an input of the job",
            code: "unknown_blob",
          },
        ];
      if (size !== f.byte_size) return [{ path: `${path}.byte_size`, message: `the blob has ${size} bytes`, code: "size_mismatch" }];
      return [];
    }),
  );
  const { task_id: taskId, runner_id: runnerId, shard_id: shardId } = lease.value;
  const trusted = lease.value.pool === 0;
  const items = shardId ? shardItems(cx, shardId) : [];
  if (shardId) errors.push(...shardResultErrors(items, outputs), ...partitionErrors(cx, items, outputs));
  // What the validation service found reading the files (runners.md "Trust"): the files' structure against the shard.
  if (errors.length === 0) errors.push(...(policy.refused ?? []));
  // A chosen pair list comes with the blocks the service planned from it (services/validation.ts completeLease).
  if (errors.length === 0 && isPairList(items) && !policy.blocks)
    return clash("a chosen pair list is completed on its own (:complete), where its blocks are planned");
  // In a batch, a trusted shard's result is recorded now and its task told once for the batch; anything else tells first what came before it.
  const deferred = batch !== null && errors.length === 0 && shardId !== null && trusted && !policy.replicate;
  if (batch && !deferred) batch.flush();
  const who = { lease_id: leaseId, runner_id: runnerId, principal: lease.value.principal ?? runnerId, trusted };
  // A refused shard result is kept, with its files' digests, as every result is (runners.md "Trust": the audit trail).
  if (errors.length > 0 && shardId) addResult(cx, shardId, who, outputs, "refused");
  if (errors.length > 0 && shardId && !trusted) {
    // A volunteer's broken result costs the job nothing: it is discarded and the shard computed again.
    cx.storage.transactionSync(() => {
      cx.sql.exec("UPDATE leases SET state = 'rejected' WHERE lease_id = ?", leaseId);
      returnWork(cx, lease.value, `the result of untrusted runner ${runnerId} was refused (${errors[0]!.message}); it is quarantined`);
      settle(cx);
    });
    if (tell) await propagate(cx);
    return ok({
      state: "rejected",
      task_id: taskId,
      runner_id: runnerId,
      principal: lease.value.principal ?? runnerId,
      shard_id: shardId,
      errors,
    });
  }
  if (errors.length > 0) {
    await fail(
      cx,
      leaseId,
      scope,
      { error_class: "ValidationError", message: "the task's outputs_ref is invalid", detail: { errors } },
      tell,
    );
    return invalid("outputs_ref rejected; the task failed with a validation error", errors);
  }
  const done = { state: "done" as const, task_id: taskId, runner_id: runnerId };
  if (!shardId) {
    cx.storage.transactionSync(() => {
      cx.sql.exec("UPDATE leases SET state = 'completed' WHERE lease_id = ?", leaseId);
      succeed(cx, taskId, outputs);
    });
    if (tell) await propagate(cx);
    return ok(done);
  }
  const others = shardResults(cx, shardId, "candidate");
  if (others.length > 0) {
    // Compared by the validation service, outside this object; the lease stays held (a service that dies meanwhile loses only this result).
    const resultId = cx.storage.transactionSync(() => {
      extendLease(cx, leaseId);
      return addResult(cx, shardId, who, outputs, "comparing");
    });
    return ok({
      state: "compare",
      task_id: taskId,
      runner_id: runnerId,
      shard_id: shardId,
      result: { result_id: resultId, ...who, outputs },
      others,
    });
  }
  const hold = !trusted && policy.replicate;
  if (deferred) {
    cx.storage.transactionSync(() => {
      cx.sql.exec("UPDATE leases SET state = 'completed' WHERE lease_id = ?", leaseId);
      addResult(cx, shardId, who, outputs, "accepted");
      recordShard(cx, shardId, runnerId, outputs);
    });
    batch.finished.add(taskId);
    return ok(done);
  }
  cx.storage.transactionSync(() => {
    cx.sql.exec("UPDATE leases SET state = 'completed' WHERE lease_id = ?", leaseId);
    // The blocks of pairs chosen on a runner become work units before the list shard is counted done (pair-list.ts).
    if (policy.blocks) addListedBlocks(cx, taskId, policy.blocks);
    addResult(cx, shardId, who, outputs, hold ? "candidate" : trusted ? "accepted" : "unchecked");
    if (hold) {
      awaitResult(cx, shardId, "replica");
      rollUpTask(cx, taskId);
    } else finishShard(cx, taskId, shardId, runnerId, outputs);
    settle(cx);
  });
  if (tell) await propagate(cx);
  return ok(hold ? { ...done, state: "held" } : done);
}

/**
 * Completes several leases of `runnerId` in this job in one call (runners.md "Batching"), each as
 * `complete` does with a trusted runner's result (`refused`: what the validation service found in
 * its files; it weighs a pool runner's one by one), and tells the change once for all of them. Answers each lease's outcome, in order:
 * one lease's refusal (unknown, no longer held, invalid) leaves the others standing.
 */
export async function completeMany(
  cx: JobContext,
  runnerId: string,
  scope: LeaseScope,
  entries: { lease_id: string; outputs: TaskOutputs; refused?: FieldError[] }[],
): Promise<Outcome<Completion>[]> {
  const outcomes: Outcome<Completion>[] = [];
  const batch: Batch = {
    finished: new Set(),
    // Each task whose shards this batch finished: one phase_progress, its next work units, its success, then the job's status.
    flush() {
      if (this.finished.size === 0) return;
      cx.storage.transactionSync(() => {
        for (const taskId of this.finished) finishTask(cx, taskId);
        settle(cx);
      });
      this.finished.clear();
    },
  };
  for (const { lease_id: leaseId, outputs, refused } of entries) {
    const lease = heldLease(cx, leaseId, scope);
    if (lease.ok && lease.value.runner_id !== runnerId) outcomes.push(missing("lease"));
    else if (lease.ok && lease.value.pool === 1) outcomes.push(clash("a pool lease is completed on its own (:complete)"));
    else outcomes.push(lease.ok ? await complete(cx, leaseId, scope, outputs, { replicate: false, refused }, false, batch) : lease);
  }
  batch.flush();
  await propagate(cx);
  return outcomes;
}

/** The shards a batch completion (completeMany) recorded, told per task once the batch is done or before anything else happens. */
interface Batch {
  /** Tasks with shards recorded but not yet reported. */
  readonly finished: Set<string>;
  flush(): void;
}

/**
 * Applies the validation service's judgement of a compared result (runners.md "Trust"): the
 * verdicts, the results of a rejected principal dropped from the whole job, the warnings, and
 * the shard done with the result it uses, or waiting for the next one. Ends the lease.
 */
export async function judge(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
  resultId: number,
  judgement: Judgement,
): Promise<Outcome<{ task_id: string; runner_id: string }>> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const { task_id: taskId, runner_id: runnerId, shard_id: shardId } = lease.value;
  if (
    !shardId ||
    !exists(cx.sql, "SELECT 1 FROM shard_results WHERE result_id = ? AND lease_id = ? AND verdict = 'comparing'", resultId, leaseId)
  ) {
    return clash("the lease holds no result under comparison");
  }
  cx.storage.transactionSync(() => {
    cx.sql.exec("UPDATE leases SET state = 'completed' WHERE lease_id = ?", leaseId);
    for (const v of judgement.verdicts)
      cx.sql.exec("UPDATE shard_results SET verdict = ? WHERE result_id = ? AND shard_id = ?", v.verdict, v.result_id, shardId);
    const rejected = cx.sql
      .exec<{ principal: string }>(
        "SELECT DISTINCT principal FROM shard_results WHERE shard_id = ? AND verdict = 'rejected' AND trusted = 0",
        shardId,
      )
      .toArray();
    for (const r of rejected) dropResultsOf(cx, r.principal);
    for (const message of judgement.warnings) appendEvent(cx, taskId, { kind: "warning", message });
    const used =
      judgement.use === null
        ? null
        : first<{ runner_id: string; outputs_json: string }>(
            cx.sql,
            "SELECT runner_id, outputs_json FROM shard_results WHERE result_id = ?",
            judgement.use,
          );
    if (used) finishShard(cx, taskId, shardId, used.runner_id, JSON.parse(used.outputs_json) as TaskOutputs);
    else {
      awaitResult(cx, shardId, judgement.need);
      rollUpTask(cx, taskId);
    }
    settle(cx);
  });
  await propagate(cx);
  return ok({ task_id: taskId, runner_id: runnerId });
}

/** A shard's accepted result is recorded; the task succeeds with its last shard (unless it already ended, e.g. failed). */
function finishShard(cx: JobContext, taskId: string, shardId: string, runnerId: string, outputs: TaskOutputs): void {
  recordShard(cx, shardId, runnerId, outputs);
  finishTask(cx, taskId);
}

/** After shards of the task were recorded: its progress reported; it succeeds with its last shard (unless it already ended, e.g. failed). */
function finishTask(cx: JobContext, taskId: string): void {
  // A hierarchical map's next work units, once those before them are done.
  growHierarchical(cx, taskId);
  if (!reportShards(cx, taskId)) return;
  if (taskRow(cx, taskId)!.status !== "running") return;
  succeed(cx, taskId, shardedOutputs(cx, taskId));
}

function succeed(cx: JobContext, taskId: string, outputs: TaskOutputs): void {
  const task = taskRow(cx, taskId)!;
  cx.sql.exec(
    "UPDATE tasks SET status = 'succeeded', outputs_json = ?, finished_at = ? WHERE task_id = ?",
    JSON.stringify(outputs),
    nowIso(),
    taskId,
  );
  appendEvent(cx, taskId, { kind: "phase_completed", phase: task.phase as Phase });
  // The blocks that read these features are weighed by their real keypoints before any is leased.
  if (task.kind === "extract") packByKeypoints(cx);
  settle(cx);
}

/** The runner reports failure: the task fails, the job fails with its error class (3.1, 7). */
export async function fail(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
  error: { error_class: string; message: string; detail: Record<string, unknown> | null },
  tell = true,
): Promise<Outcome<{ runner_id: string }>> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const taskId = lease.value.task_id;
  if (lease.value.shard_id && lease.value.pool === 1) {
    // A volunteer cannot fail a tenant's job: its shard goes back to the queue for another runner.
    cx.storage.transactionSync(() => {
      cx.sql.exec("UPDATE leases SET state = 'failed' WHERE lease_id = ?", leaseId);
      returnWork(cx, lease.value, `untrusted runner ${lease.value.runner_id} failed its shard (${error.error_class}: ${error.message})`);
      settle(cx);
    });
    if (tell) await propagate(cx);
    return ok({ runner_id: lease.value.runner_id });
  }
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
  if (tell) await propagate(cx);
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

/**
 * @module What the holder of a lease reports while its task runs: sub-phase events (spec 6.3),
 * a sealed snapshot's `snapshot_available` (6 rule 5), the mapping checkpoint (3.1 resume).
 * Each report holds the lease for another TTL.
 */
import type { Checkpoint, LeaseState, Phase, RunnerEvent } from "../../../protocol";
import type { LeaseScope } from "../job-rows";
import { type Outcome, invalid, ok } from "../outcome";
import { storedSize } from "./blobs";
import type { JobContext } from "./context";
import { appendEvent, snapshotAnnounced } from "./events";
import { extendLease, heldLease, leaseState } from "./leases";
import { taskRow } from "./records";

/** Appends the runner's events (6.3), stamped with the common fields; the task's own phase events are the service's. */
export function postEvents(cx: JobContext, leaseId: string, scope: LeaseScope, events: RunnerEvent[]): Outcome<LeaseState> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  const own = taskRow(cx, lease.value.task_id)!.phase as Phase;
  const mine = events.find((e) => (e.kind === "phase_started" || e.kind === "phase_completed") && e.phase === own);
  if (mine) {
    return invalid(`the service emits ${mine.kind} of the task's own phase '${own}'`, [
      { path: "events", message: "post sub-phases only", code: "reserved_phase" },
    ]);
  }
  cx.storage.transactionSync(() => {
    for (const e of events) {
      // A shard's own progress is the service's: its task's phase_progress counts shards (runners.md "Shards").
      if (lease.value.shard_id && e.kind === "phase_progress" && e.phase === own) continue;
      appendEvent(cx, lease.value.task_id, e);
    }
  });
  extendLease(cx, leaseId);
  return ok(leaseState(cx, leaseId));
}

/** `snapshot_available` (6 rule 5) once per sealed seq, after the snapshot is readable; a retried seal announces nothing new. */
/**
 * Announces the sealed snapshots no event announced yet (6 rule 5), in seq order: the one just
 * sealed, and any whose seal was recorded by the tenant before the Worker died (its announcement
 * then comes with the task's next seal). Each seq is announced once.
 */
export function announceSnapshots(
  cx: JobContext,
  leaseId: string,
  scope: LeaseScope,
  sealed: { seq: number; summary: Record<string, unknown> }[],
): Outcome<null> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  for (const s of [...sealed].sort((a, b) => a.seq - b.seq)) {
    if (!snapshotAnnounced(cx, s.seq))
      appendEvent(cx, lease.value.task_id, { kind: "snapshot_available", snapshot_seq: s.seq, summary: s.summary });
  }
  extendLease(cx, leaseId);
  return ok(null);
}

/** The latest mapping checkpoint (3.1 resume); its blob must have been uploaded under the lease. */
export function putCheckpoint(cx: JobContext, leaseId: string, scope: LeaseScope, checkpoint: Checkpoint): Outcome<LeaseState> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  if (storedSize(cx, checkpoint.blob_sha) !== checkpoint.byte_size) {
    return invalid("the checkpoint's blob was not uploaded under this job with that size", [
      { path: "blob_sha", message: "upload the blob first", code: "unknown_blob" },
    ]);
  }
  cx.sql.exec("UPDATE tasks SET checkpoint_json = ? WHERE task_id = ?", JSON.stringify(checkpoint), lease.value.task_id);
  extendLease(cx, leaseId);
  return ok(leaseState(cx, leaseId));
}

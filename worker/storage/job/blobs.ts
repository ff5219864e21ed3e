/**
 * @module The blobs a job may read and cite in its outputs (spec 2.11 rule 3): those uploaded
 * under its leases, the files of its input artifacts and of its tasks' outputs, and its
 * dataset's images.
 */
import type { LeaseScope } from "../job-rows";
import { type Outcome, ok } from "../outcome";
import { first } from "../sql";
import type { JobContext } from "./context";
import { heldLease } from "./leases";
import { frozen } from "./records";

/** The byte size of a blob uploaded under the job or listed in its artifacts' files; undefined for any other. */
export function storedSize(cx: JobContext, sha: string): number | undefined {
  return first<{ byte_size: number }>(cx.sql, "SELECT byte_size FROM blobs WHERE sha = ?", sha)?.byte_size;
}

/** The byte size of a blob the job may read and cite: `storedSize`, or a dataset image's; undefined for any other blob. */
export function inputSize(cx: JobContext, sha: string): number | undefined {
  const stored = storedSize(cx, sha);
  if (stored !== undefined) return stored;
  return frozen(cx).imageSizes.get(sha);
}

/** The artifacts' files become readable (and citable) by the job's tasks. */
export function recordFiles(cx: JobContext, artifacts: readonly { files: readonly { blob_sha: string; byte_size: number }[] }[]): void {
  for (const f of artifacts.flatMap((a) => a.files)) record(cx, f.blob_sha, f.byte_size);
}

/** A blob the runner uploaded under its lease: readable by the job's later tasks, citable in outputs. */
export function recordBlob(cx: JobContext, leaseId: string, scope: LeaseScope, sha: string, byteSize: number): Outcome<null> {
  const lease = heldLease(cx, leaseId, scope);
  if (!lease.ok) return lease;
  record(cx, sha, byteSize);
  return ok(null);
}

/** Whether the holder of the lease may read the blob: the dataset's images, the input artifacts' files, the job's outputs, its checkpoint. */
export function mayRead(cx: JobContext, leaseId: string, scope: LeaseScope, sha: string): boolean {
  if (!heldLease(cx, leaseId, scope).ok) return false;
  return inputSize(cx, sha) !== undefined;
}

function record(cx: JobContext, sha: string, byteSize: number): void {
  cx.sql.exec("INSERT OR IGNORE INTO blobs (sha, byte_size) VALUES (?, ?)", sha, byteSize);
}

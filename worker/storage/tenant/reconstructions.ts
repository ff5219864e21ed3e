/**
 * @module Reconstructions (spec 2.7): one per (dataset snapshot, params, runtime) in a project,
 * its status mirroring its latest driving job, and its reconstruction-level files (2.14). A
 * reconstruction holds each blob its files and its snapshots' files use, once.
 */
import { ulid } from "../ids";
import { type Outcome, invalid, missing, ok } from "../outcome";
import { exists, first } from "../sql";
import type { ReconInput, ReconRow, StoredFile } from "../tenant-rows";
import * as blobs from "./blobs";
import * as garbage from "./garbage";

export function get(db: DurableObjectStorage, reconId: string): ReconRow | null {
  return first<ReconRow>(db.sql, "SELECT * FROM reconstructions WHERE recon_id = ?", reconId);
}

/** The reconstruction the job drives, created on first use, now `pending` and following the job; answers its id. */
export function drive(db: DurableObjectStorage, job: { job_id: string; project_id: string; created_at: string }, r: ReconInput): string {
  db.sql.exec(
    `INSERT INTO reconstructions (recon_id, project_id, dataset_id, dataset_snapshot_hash, params_hash, rv_id, spec_json, status, job_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)
     ON CONFLICT (project_id, dataset_snapshot_hash, params_hash, rv_id) DO UPDATE SET status = 'pending', job_id = excluded.job_id`,
    ulid(),
    job.project_id,
    r.dataset_id,
    r.dataset_snapshot_hash,
    r.params_hash,
    r.rv_id,
    r.spec_json,
    job.job_id,
    job.created_at,
  );
  return db.sql
    .exec<{ recon_id: string }>(
      "SELECT recon_id FROM reconstructions WHERE project_id = ? AND dataset_snapshot_hash = ? AND params_hash = ? AND rv_id = ?",
      job.project_id,
      r.dataset_snapshot_hash,
      r.params_hash,
      r.rv_id,
    )
    .one().recon_id;
}

/**
 * Writes a reconstruction-level file (2.14: rewritten by every match or verify run). The
 * reconstruction holds the new blob; the old one is released unless a snapshot holds it too.
 */
export function putFile(db: DurableObjectStorage, reconId: string, name: string, blob: { sha: string; size: number }): Outcome<null> {
  if (!get(db, reconId)) return missing("reconstruction");
  if (!blobs.get(db, blob.sha))
    return invalid("the file's blob is no longer stored", [{ path: "blob_sha", message: "unknown blob", code: "unknown_blob" }]);
  db.transactionSync(() => {
    const old = first<{ sha: string }>(db.sql, "SELECT sha FROM recon_files WHERE recon_id = ? AND name = ?", reconId, name);
    db.sql.exec(
      "INSERT INTO recon_files (recon_id, name, sha, size) VALUES (?, ?, ?, ?) ON CONFLICT (recon_id, name) DO UPDATE SET sha = excluded.sha, size = excluded.size",
      reconId,
      name,
      blob.sha,
      blob.size,
    );
    blobs.hold(db, "recon", reconId, blob.sha);
    if (old && old.sha !== blob.sha) releaseIfUnused(db, reconId, old.sha);
  });
  garbage.schedule(db);
  return ok(null);
}

export function file(db: DurableObjectStorage, reconId: string, name: string): StoredFile | null {
  return blobs.storedFile(
    db,
    name,
    first<{ sha: string; size: number }>(db.sql, "SELECT sha, size FROM recon_files WHERE recon_id = ? AND name = ?", reconId, name),
  );
}

/** The reconstruction-level files of `fromId` that `toId` lacks, now also `toId`'s (inside the caller's transaction). */
export function adoptFiles(db: DurableObjectStorage, fromId: string, toId: string): void {
  const files = db.sql
    .exec<{ name: string; sha: string; size: number }>("SELECT name, sha, size FROM recon_files WHERE recon_id = ?", fromId)
    .toArray();
  for (const f of files) {
    if (
      db.sql.exec("INSERT OR IGNORE INTO recon_files (recon_id, name, sha, size) VALUES (?, ?, ?, ?)", toId, f.name, f.sha, f.size)
        .rowsWritten > 0
    ) {
      blobs.hold(db, "recon", toId, f.sha);
    }
  }
}

/** Forgets a reconstruction: its snapshots, sub-models and files, and its blob references (inside the caller's transaction). */
export function drop(db: DurableObjectStorage, reconId: string): void {
  blobs.letGoAll(db, "recon", reconId);
  for (const table of ["recon_files", "submodels", "snapshot_components", "snapshot_files", "snapshots", "reconstructions"]) {
    db.sql.exec(`DELETE FROM ${table} WHERE recon_id = ?`, reconId);
  }
}

function releaseIfUnused(db: DurableObjectStorage, reconId: string, sha: string): void {
  const used =
    exists(db.sql, "SELECT 1 FROM snapshot_files WHERE recon_id = ? AND sha = ? LIMIT 1", reconId, sha) ||
    exists(db.sql, "SELECT 1 FROM recon_files WHERE recon_id = ? AND sha = ? LIMIT 1", reconId, sha);
  if (!used) blobs.letGo(db, "recon", reconId, sha);
}

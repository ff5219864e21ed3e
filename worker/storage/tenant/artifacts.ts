/**
 * @module Stage artifacts (spec 2.11, 4.8, 4.9, 4.10): one row per output a task produced, per
 * import, per sealed snapshot root or component (snapshots.ts); each holds its blobs, so the
 * bytes live as long as the artifact.
 */
import type { TaskOutputs } from "../../../protocol";
import { ulid } from "../ids";
import { type Outcome, missing, ok } from "../outcome";
import { type PageRequest, type PageResult, exists, first, nowIso, paginate } from "../sql";
import type { ArtifactFilter, ArtifactRow, ArtifactScope } from "../tenant-rows";
import * as blobs from "./blobs";
import * as reconstructions from "./reconstructions";

export const artifactOf = (r: Record<string, SqlStorageValue>): ArtifactRow => ({
  artifact_id: r.artifact_id as string,
  job_id: r.job_id as string,
  task_id: r.task_id as string,
  project_id: r.project_id as string,
  dataset_id: (r.dataset_id as string | null) ?? null,
  manifest_hash: (r.manifest_hash as string | null) ?? null,
  recon_id: (r.recon_id as string | null) ?? null,
  kind: r.kind as string,
  name: r.name as string,
  descriptor_json: r.descriptor_json as string,
  created_at: r.created_at as string,
});

export function get(db: DurableObjectStorage, artifactId: string): ArtifactRow | null {
  const r = first(db.sql, "SELECT * FROM artifacts WHERE artifact_id = ?", artifactId);
  return r ? artifactOf(r) : null;
}

/** The job's or the reconstruction's artifacts, oldest first, with exact-match filters; 404 when the owner does not exist. */
export function list(
  db: DurableObjectStorage,
  owner: { job_id: string } | { recon_id: string },
  filter: ArtifactFilter,
  page: PageRequest,
): Outcome<PageResult<ArtifactRow>> {
  const where: string[] = [];
  const params: SqlStorageValue[] = [];
  if ("job_id" in owner) {
    // The job index (jobs.ts records artifacts, so it is not imported here).
    if (!exists(db.sql, "SELECT 1 FROM jobs WHERE job_id = ?", owner.job_id)) return missing("job");
    where.push("job_id = ?");
    params.push(owner.job_id);
  } else {
    if (!reconstructions.get(db, owner.recon_id)) return missing("reconstruction");
    where.push("recon_id = ?");
    params.push(owner.recon_id);
  }
  for (const field of ["kind", "task_id", "name"] as const) {
    const value = filter[field];
    if (value === undefined) continue;
    where.push(`${field} = ?`);
    params.push(value);
  }
  return ok(paginate(db.sql, { table: "artifacts", key: "artifact_id", where: where.join(" AND "), params }, page, artifactOf));
}

/** The latest artifact of `kind` computed from the dataset, or, with `job_id`, by that job. */
export function latest(db: DurableObjectStorage, kind: string, owner: { dataset_id: string } | { job_id: string }): ArtifactRow | null {
  const [column, id] = "job_id" in owner ? ["job_id", owner.job_id] : ["dataset_id", owner.dataset_id];
  const r = first(
    db.sql,
    `SELECT * FROM artifacts WHERE ${column} = ? AND kind = ? ORDER BY created_at DESC, artifact_id DESC LIMIT 1`,
    id,
    kind,
  );
  return r ? artifactOf(r) : null;
}

/**
 * Records an artifact and holds its blobs (inside the caller's transaction). Recording one the
 * owner already recorded (the same task output, the same snapshot root or component) changes nothing.
 */
export function insert(
  db: DurableObjectStorage,
  a: {
    job_id: string;
    task_id: string;
    ord: number | null;
    scope: ArtifactScope;
    descriptor: TaskOutputs["artifacts"][number];
    snapshot?: { seq: number; component: number };
  },
): void {
  const artifactId = ulid();
  const written = db.sql.exec(
    `INSERT OR IGNORE INTO artifacts (artifact_id, job_id, task_id, ord, project_id, dataset_id, manifest_hash, recon_id, snapshot_seq, component,
       kind, name, descriptor_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    artifactId,
    a.job_id,
    a.task_id,
    a.ord,
    a.scope.project_id,
    a.scope.dataset_id,
    a.scope.manifest_hash,
    a.scope.recon_id,
    a.snapshot?.seq ?? null,
    a.snapshot?.component ?? null,
    a.descriptor.kind,
    a.descriptor.name,
    JSON.stringify(a.descriptor),
    nowIso(),
  ).rowsWritten;
  if (written === 0) return;
  for (const f of a.descriptor.files) blobs.hold(db, "artifact", artifactId, f.blob_sha);
}

/** Forgets the artifact, releasing its blobs (inside the caller's transaction). */
export function drop(db: DurableObjectStorage, artifactId: string): void {
  blobs.letGoAll(db, "artifact", artifactId);
  db.sql.exec("DELETE FROM artifacts WHERE artifact_id = ?", artifactId);
}

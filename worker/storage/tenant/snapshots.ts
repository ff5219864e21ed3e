/**
 * @module Sealed snapshots of a reconstruction (spec 2.10, 3.5: rows only ever inserted), their
 * files (component -1 is the root), each component's counts (2.8 rule 2 picks the largest), the
 * SubModels that follow each component's latest snapshot (2.8), and the artifacts a seal records
 * (2.11 `reconstruction.snapshot`, `reconstruction.submodel`).
 */
import { CORE_ARTIFACT_FORMATS } from "../../../protocol";
import { POINTS_MEDIA_TYPE } from "../../../protocol/wire/points";
import { ulid } from "../ids";
import { type Outcome, invalid, missing, ok } from "../outcome";
import { type PageRequest, type PageResult, exists, first, nowIso, paginate } from "../sql";
import type { AdoptedSnapshot } from "../job-rows";
import type { ArtifactRow, ArtifactScope, SealInput, StoredFile, SubmodelRow } from "../tenant-rows";
import * as artifacts from "./artifacts";
import * as blobs from "./blobs";
import * as reconstructions from "./reconstructions";

/**
 * Seals the next snapshot of the reconstruction, all or nothing: its rows are only ever
 * inserted (3.5), its blobs gain one reference held by the reconstruction, and each component's
 * SubModel now points at it. The same lease sealing the same request again (a retry after a
 * lost answer) gets the snapshot it already made.
 */
export function seal(db: DurableObjectStorage, input: SealInput): Outcome<{ seq: number; created: boolean }> {
  if (!reconstructions.get(db, input.recon_id)) return missing("reconstruction");
  const prior = first<{ seq: number }>(
    db.sql,
    "SELECT seq FROM snapshots WHERE recon_id = ? AND lease_id = ? AND digest = ?",
    input.recon_id,
    input.lease_id,
    input.digest,
  );
  if (prior) return ok({ seq: prior.seq, created: false });
  const gone = input.files.find((f) => !blobs.get(db, f.sha));
  if (gone)
    return invalid("a file's blob is no longer stored", [{ path: "files", message: `blob ${gone.sha} is gone`, code: "unknown_blob" }]);
  const seq = db.transactionSync(() => insert(db, input));
  return ok({ seq, created: true });
}

/**
 * The reconstruction's first snapshot, taken from the last one `taskId` sealed (in whichever
 * reconstruction): the same files and blobs, now also held by this reconstruction, plus the
 * reconstruction-level files (2.14) of that one that this one lacks. Null when the
 * reconstruction already has snapshots or the task sealed none. Inside the caller's transaction.
 */
export function adopt(db: DurableObjectStorage, reconId: string, taskId: string): AdoptedSnapshot | null {
  if (exists(db.sql, "SELECT 1 FROM snapshots WHERE recon_id = ? LIMIT 1", reconId)) return null;
  const src = first<{ recon_id: string; seq: number; job_id: string; lease_id: string; digest: string; summary_json: string }>(
    db.sql,
    "SELECT recon_id, seq, job_id, lease_id, digest, summary_json FROM snapshots WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
    taskId,
  );
  if (!src) return null;
  const files = db.sql
    .exec<SealInput["files"][number]>(
      "SELECT component, name, sha, size FROM snapshot_files WHERE recon_id = ? AND seq = ?",
      src.recon_id,
      src.seq,
    )
    .toArray();
  const components = db.sql
    .exec<{ idx: number; num_reg_images: number; num_points3D: number; summary_json: string | null }>(
      `SELECT c.idx, c.num_reg_images, c.num_points3D, m.summary_json FROM snapshot_components c
       LEFT JOIN submodels m ON m.recon_id = c.recon_id AND m.idx = c.idx AND m.snapshot_seq = c.seq WHERE c.recon_id = ? AND c.seq = ?`,
      src.recon_id,
      src.seq,
    )
    .toArray()
    .map((c) => ({
      ...c,
      summary_json: c.summary_json ?? JSON.stringify({ num_reg_images: c.num_reg_images, num_points3D: c.num_points3D }),
    }));
  // The adopted snapshot's artifacts keep the dataset scope of the source's.
  const manifest = first<{ m: string | null }>(
    db.sql,
    "SELECT manifest_hash AS m FROM artifacts WHERE recon_id = ? AND snapshot_seq = ? AND component = -1",
    src.recon_id,
    src.seq,
  );
  const seq = insert(db, { ...src, recon_id: reconId, task_id: taskId, files, components, manifest_hash: manifest?.m ?? null });
  reconstructions.adoptFiles(db, src.recon_id, reconId);
  return { seq, summary: JSON.parse(src.summary_json) as Record<string, unknown> };
}

/** The sealed seqs, ascending; null when the reconstruction does not exist. */
export function seqs(db: DurableObjectStorage, reconId: string): number[] | null {
  if (!reconstructions.get(db, reconId)) return null;
  return db.sql
    .exec<{ seq: number }>("SELECT seq FROM snapshots WHERE recon_id = ? ORDER BY seq", reconId)
    .toArray()
    .map((r) => r.seq);
}

/**
 * The seq of the reconstruction's largest sealed snapshot: the most registered images in its root
 * model, then the most points, then the latest. Null when none is sealed (or no such reconstruction).
 */
export function largest(db: DurableObjectStorage, reconId: string): number | null {
  const r = first<{ seq: number }>(
    db.sql,
    `SELECT seq FROM snapshots WHERE recon_id = ?
     ORDER BY coalesce(json_extract(summary_json, '$.num_reg_images'), 0) DESC, coalesce(json_extract(summary_json, '$.num_points3D'), 0) DESC, seq DESC LIMIT 1`,
    reconId,
  );
  return r?.seq ?? null;
}

/** The snapshots of the reconstruction that `jobId` sealed, with the summary each was sealed with. */
export function sealedBy(db: DurableObjectStorage, reconId: string, jobId: string): { seq: number; summary: Record<string, unknown> }[] {
  return db.sql
    .exec<{ seq: number; summary_json: string }>(
      "SELECT seq, summary_json FROM snapshots WHERE recon_id = ? AND job_id = ? ORDER BY seq",
      reconId,
      jobId,
    )
    .toArray()
    .map((r) => ({ seq: r.seq, summary: JSON.parse(r.summary_json) as Record<string, unknown> }));
}

/** Whether the snapshot (and, with idx, its component) exists. */
export function has(db: DurableObjectStorage, reconId: string, seq: number, idx: number | null): boolean {
  return idx === null
    ? exists(db.sql, "SELECT 1 FROM snapshots WHERE recon_id = ? AND seq = ?", reconId, seq)
    : exists(db.sql, "SELECT 1 FROM snapshot_components WHERE recon_id = ? AND seq = ? AND idx = ?", reconId, seq, idx);
}

/**
 * A sealed file: of component `idx` (component 0 of a seal without components is the root),
 * or (idx null) of the root, which is the largest model (2.8 rule 2): the root's own file
 * when the seal gave one, else the largest component's
 * (most registered images, then most points, then the lowest idx). Null when the snapshot
 * does not hold it.
 */
export function file(db: DurableObjectStorage, reconId: string, seq: number, idx: number | null, name: string): StoredFile | null {
  const own = sealedFile(db, reconId, seq, idx ?? -1, name);
  if (own) return own;
  if (idx !== null) {
    // A seal without components is one model: its component 0 is the root.
    const single =
      idx === 0 && !exists(db.sql, "SELECT 1 FROM snapshot_files WHERE recon_id = ? AND seq = ? AND component >= 0 LIMIT 1", reconId, seq);
    return single ? sealedFile(db, reconId, seq, -1, name) : null;
  }
  const largest = first<{ idx: number }>(
    db.sql,
    `SELECT c.idx FROM snapshot_components c JOIN snapshot_files f ON f.recon_id = c.recon_id AND f.seq = c.seq AND f.component = c.idx
     WHERE c.recon_id = ? AND c.seq = ? AND f.name = ? ORDER BY c.num_reg_images DESC, c.num_points3D DESC, c.idx LIMIT 1`,
    reconId,
    seq,
    name,
  );
  return largest ? sealedFile(db, reconId, seq, largest.idx, name) : null;
}

export function listSubmodels(db: DurableObjectStorage, reconId: string, page: PageRequest): Outcome<PageResult<SubmodelRow>> {
  if (!reconstructions.get(db, reconId)) return missing("reconstruction");
  return ok(
    paginate(
      db.sql,
      { table: "submodels", key: "submodel_id", where: "recon_id = ?", params: [reconId] },
      page,
      (r) => r as unknown as SubmodelRow,
    ),
  );
}

export function getSubmodel(db: DurableObjectStorage, submodelId: string): SubmodelRow | null {
  return first<SubmodelRow>(db.sql, "SELECT * FROM submodels WHERE submodel_id = ?", submodelId);
}

/**
 * The artifact of a sealed snapshot's root (idx null) or of one component (2.11 kinds
 * `reconstruction.snapshot`, `reconstruction.submodel`); made now for a snapshot sealed before
 * artifacts were recorded. Null when the snapshot or the component does not exist.
 */
export function artifact(db: DurableObjectStorage, reconId: string, seq: number, idx: number | null): ArtifactRow | null {
  if (!has(db, reconId, seq, null)) return null;
  const find = () =>
    first(db.sql, "SELECT * FROM artifacts WHERE recon_id = ? AND snapshot_seq = ? AND component = ?", reconId, seq, idx ?? -1);
  let r = find();
  if (!r) {
    db.transactionSync(() => recordArtifacts(db, reconId, seq, null));
    r = find();
  }
  return r ? artifacts.artifactOf(r) : null;
}

/** Inserts the next snapshot of the reconstruction (inside the caller's transaction); answers its seq. */
function insert(db: DurableObjectStorage, input: SealInput): number {
  const next = db.sql
    .exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM snapshots WHERE recon_id = ?", input.recon_id)
    .one().n;
  const now = nowIso();
  db.sql.exec(
    "INSERT INTO snapshots (recon_id, seq, job_id, task_id, lease_id, digest, summary_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    input.recon_id,
    next,
    input.job_id,
    input.task_id,
    input.lease_id,
    input.digest,
    input.summary_json,
    now,
  );
  for (const f of input.files) {
    db.sql.exec(
      "INSERT INTO snapshot_files (recon_id, seq, component, name, sha, size) VALUES (?, ?, ?, ?, ?, ?)",
      input.recon_id,
      next,
      f.component,
      f.name,
      f.sha,
      f.size,
    );
    blobs.hold(db, "recon", input.recon_id, f.sha);
  }
  for (const c of input.components) {
    db.sql.exec(
      "INSERT INTO snapshot_components (recon_id, seq, idx, num_reg_images, num_points3D) VALUES (?, ?, ?, ?, ?)",
      input.recon_id,
      next,
      c.idx,
      c.num_reg_images,
      c.num_points3D,
    );
    db.sql.exec(
      `INSERT INTO submodels (submodel_id, recon_id, idx, parent_submodel_id, summary_json, rigidity_json, snapshot_seq, created_at)
       VALUES (?, ?, ?, NULL, ?, NULL, ?, ?)
       ON CONFLICT (recon_id, idx) DO UPDATE SET summary_json = excluded.summary_json, snapshot_seq = excluded.snapshot_seq`,
      ulid(),
      input.recon_id,
      c.idx,
      c.summary_json,
      next,
      now,
    );
  }
  recordArtifacts(db, input.recon_id, next, input.manifest_hash);
  return next;
}

function sealedFile(db: DurableObjectStorage, reconId: string, seq: number, component: number, name: string): StoredFile | null {
  const ref = first<{ sha: string; size: number }>(
    db.sql,
    "SELECT sha, size FROM snapshot_files WHERE recon_id = ? AND seq = ? AND component = ? AND name = ?",
    reconId,
    seq,
    component,
    name,
  );
  return blobs.storedFile(db, name, ref);
}

/**
 * The artifacts of a sealed snapshot (2.11): its root (the largest model, 2.8 rule 2) as a
 * `reconstruction.snapshot`, each component as a `reconstruction.submodel`, owned by the map
 * task that sealed it. Idempotent.
 */
function recordArtifacts(db: DurableObjectStorage, reconId: string, seq: number, manifestHash: string | null): void {
  const recon = reconstructions.get(db, reconId)!;
  const snap = db.sql
    .exec<{ job_id: string; task_id: string; summary_json: string }>(
      "SELECT job_id, task_id, summary_json FROM snapshots WHERE recon_id = ? AND seq = ?",
      reconId,
      seq,
    )
    .one();
  const names = db.sql
    .exec<{ name: string }>("SELECT DISTINCT name FROM snapshot_files WHERE recon_id = ? AND seq = ? ORDER BY name", reconId, seq)
    .toArray()
    .map((r) => r.name);
  const scope: ArtifactScope = {
    project_id: recon.project_id,
    dataset_id: recon.dataset_id,
    manifest_hash: manifestHash,
    recon_id: reconId,
  };
  const models: { component: number; idx: number | null; summary: Record<string, unknown> }[] = [
    { component: -1, idx: null, summary: JSON.parse(snap.summary_json) },
    ...db.sql
      .exec<{ idx: number; num_reg_images: number; num_points3D: number }>(
        "SELECT idx, num_reg_images, num_points3D FROM snapshot_components WHERE recon_id = ? AND seq = ? ORDER BY idx",
        reconId,
        seq,
      )
      .toArray()
      .map((c) => ({ component: c.idx, idx: c.idx, summary: { num_reg_images: c.num_reg_images, num_points3D: c.num_points3D } })),
  ];
  for (const m of models) {
    const files = names.flatMap((name) => {
      const f = file(db, reconId, seq, m.idx, name);
      return f
        ? [{ path: name, blob_sha: f.sha, byte_size: f.size, media_type: name.endsWith(".bin") ? POINTS_MEDIA_TYPE : "application/json" }]
        : [];
    });
    if (files.length === 0) continue;
    const kind = m.idx === null ? "reconstruction.snapshot" : "reconstruction.submodel";
    artifacts.insert(db, {
      job_id: snap.job_id,
      task_id: snap.task_id,
      ord: null,
      scope,
      snapshot: { seq, component: m.component },
      descriptor: {
        kind,
        name: m.idx === null ? `snapshot ${seq}` : `snapshot ${seq} component ${m.idx}`,
        uri: null,
        artifact_format: CORE_ARTIFACT_FORMATS[kind],
        schema_version: 1,
        media_type: "application/octet-stream",
        summary: m.summary,
        metadata: { recon_id: reconId, seq, submodel_idx: m.idx },
        files,
      },
    });
  }
}

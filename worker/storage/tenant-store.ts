/**
 * @module TenantStore: one SQLite-backed Durable Object per tenant, named by the tenant id, so
 * a request can only ever reach its own tenant's rows (spec 5.3 isolation is structural).
 * Holds projects, datasets, images, uploads, the job index, reconstructions and their sealed
 * snapshots, stage artifacts (2.11), and the reference counts of the tenant's blobs.
 * Bytes live in R2; this object decides when they may be deleted and deletes them in its alarm.
 */
import { DurableObject } from "cloudflare:workers";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { ulid } from "./ids";
import { CORE_ARTIFACT_FORMATS, type DatasetPatch, type JobStatus, type ProjectPatch, type TaskOutputs } from "../../protocol";
import { POINTS_MEDIA_TYPE } from "../../protocol/wire/points";
import type { JobRow } from "./job-store";
import { type Outcome, clash, invalid, missing, ok } from "./outcome";
import { type PageRequest, type PageResult, migrate, nowIso, paginate } from "./sql";
import { TENANT_MIGRATIONS } from "./tenant-migrations";
import type {
  AdoptedSnapshot,
  ArtifactFilter,
  ArtifactRow,
  ArtifactScope,
  BlobFacts,
  CompletedTask,
  BlobRow,
  ChunkRecord,
  DatasetInput,
  DatasetRow,
  ImageRow,
  ProjectRow,
  ReconInput,
  ReconRow,
  SealInput,
  StoredFile,
  SubmodelRow,
  UploadInput,
  UploadRow,
} from "./tenant-rows";

type Row = Record<string, SqlStorageValue>;

const projectOf = (r: Row): ProjectRow => ({
  project_id: r.project_id as string,
  name: r.name as string,
  description: (r.description as string | null) ?? null,
  pool_opt_in: r.pool_opt_in === 1,
  created_at: r.created_at as string,
});

const datasetOf = (r: Row): DatasetRow => ({
  dataset_id: r.dataset_id as string,
  project_id: r.project_id as string,
  source_id: r.source_id as string,
  source: JSON.parse(r.source_json as string),
  name: r.name as string,
  camera_model: r.camera_model as string,
  intrinsics_mode: r.intrinsics_mode as DatasetRow["intrinsics_mode"],
  is_spherical: r.is_spherical === 1,
  respect_exif_orientation: r.respect_exif_orientation === 1,
  rig_config_text: (r.rig_config_json as string | null) ?? null,
  active_maskset_id: (r.active_maskset_id as string | null) ?? null,
  manifest_hash: r.manifest_hash as string,
  created_at: r.created_at as string,
});

const imageOf = (r: Row) => r as unknown as ImageRow;
const artifactOf = (r: Row): ArtifactRow => ({
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
const uploadOf = (r: Row) => r as unknown as UploadRow;

/** How long a garbage R2 key waits before its delete is retried, when R2 fails. */
const GC_RETRY_MS = 60_000;
/** Garbage keys deleted per alarm, so one run stays well inside blockConcurrencyWhile's 30 s. */
const GC_BATCH = 100;

export class TenantStore extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage, TENANT_MIGRATIONS));
  }

  /** Readiness probe (4.1): a real read of this object's database. */
  ping(): number {
    return this.sql.exec<{ v: number }>("SELECT MAX(version) AS v FROM _migrations").one().v;
  }

  // ---- projects (2.2, 4.2) ----

  createProject(input: { name: string; description?: string | null; pool_opt_in?: boolean }): ProjectRow {
    const row = {
      project_id: ulid(),
      name: input.name,
      description: input.description ?? null,
      pool_opt_in: input.pool_opt_in ? 1 : 0,
      created_at: nowIso(),
    };
    this.sql.exec(
      "INSERT INTO projects (project_id, name, description, pool_opt_in, created_at) VALUES (?, ?, ?, ?, ?)",
      ...Object.values(row),
    );
    return projectOf(row);
  }

  listProjects(page: PageRequest): PageResult<ProjectRow> {
    return paginate(this.sql, { table: "projects", key: "project_id", where: "1=1", params: [] }, page, projectOf);
  }

  getProject(projectId: string): ProjectRow | null {
    const r = this.sql.exec("SELECT * FROM projects WHERE project_id = ?", projectId).toArray()[0];
    return r ? projectOf(r) : null;
  }

  patchProject(projectId: string, patch: ProjectPatch): ProjectRow | null {
    const cur = this.getProject(projectId);
    if (!cur) return null;
    const next = {
      name: patch.name ?? cur.name,
      description: patch.description !== undefined ? patch.description : cur.description,
      pool_opt_in: patch["x-pool_opt_in"] ?? cur.pool_opt_in,
    };
    this.sql.exec(
      "UPDATE projects SET name = ?, description = ?, pool_opt_in = ? WHERE project_id = ?",
      next.name,
      next.description,
      next.pool_opt_in ? 1 : 0,
      projectId,
    );
    return { ...cur, ...next };
  }

  /**
   * Cascades to the project's datasets and their images, its reconstructions, its jobs and its
   * artifacts, releasing blob references (4.2); refused while a job is active (7: 409). Answers the ids of
   * the deleted jobs, whose JobStores the caller purges.
   */
  deleteProject(projectId: string): Outcome<{ job_ids: string[] }> {
    if (!this.getProject(projectId)) return missing("project");
    const active = this.sql
      .exec<{ job_id: string }>("SELECT job_id FROM jobs WHERE project_id = ? AND status IN ('pending', 'running')", projectId)
      .toArray();
    if (active.length > 0) return clash(`the project has ${active.length} active job(s), e.g. ${active[0]!.job_id}: cancel them first`);
    const jobIds = this.sql.exec<{ job_id: string }>("SELECT job_id FROM jobs WHERE project_id = ?", projectId).toArray().map((j) => j.job_id);
    this.ctx.storage.transactionSync(() => {
      for (const d of this.sql.exec<{ dataset_id: string }>("SELECT dataset_id FROM datasets WHERE project_id = ?", projectId)) {
        this.dropDataset(d.dataset_id);
      }
      for (const jobId of jobIds) this.dropJob(jobId);
      for (const a of this.sql.exec<{ artifact_id: string }>("SELECT artifact_id FROM artifacts WHERE project_id = ?", projectId).toArray()) {
        this.dropArtifact(a.artifact_id);
      }
      for (const r of this.sql.exec<{ recon_id: string }>("SELECT recon_id FROM reconstructions WHERE project_id = ?", projectId).toArray()) {
        this.dropReconstruction(r.recon_id);
      }
      this.sql.exec("DELETE FROM projects WHERE project_id = ?", projectId);
    });
    this.scheduleGc();
    return ok({ job_ids: jobIds });
  }

  // ---- datasets (2.3, 2.4, 4.4) ----

  /** Creates the dataset and, for an `upload` source, registers its entries as images, atomically. */
  createDataset(projectId: string, input: DatasetInput): Outcome<DatasetRow> {
    if (!this.getProject(projectId)) return missing("project");
    const entries = input.source.kind === "upload" ? input.source.entries : [];
    const bad = this.unknownBlobs(entries.map((e) => e.blob_sha), (i) => `source.entries.${i}.blob_sha`);
    if (bad) return bad;
    const dupes = duplicateNames(entries.map((e) => e.name), (i) => `source.entries.${i}.name`);
    if (dupes) return dupes;
    const datasetId = ulid();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO datasets (dataset_id, project_id, source_id, source_json, name, camera_model, intrinsics_mode,
           is_spherical, respect_exif_orientation, rig_config_json, active_maskset_id, manifest_hash, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
        datasetId,
        projectId,
        ulid(),
        JSON.stringify(input.source),
        input.name,
        input.camera_model,
        input.intrinsics_mode,
        input.is_spherical ? 1 : 0,
        input.respect_exif_orientation ? 1 : 0,
        input.rig_config ? JSON.stringify(input.rig_config) : null,
        manifestHash([]),
        nowIso(),
      );
      for (const e of entries) this.insertImage(datasetId, e.name, e.blob_sha);
      this.refreshManifest(datasetId);
    });
    return ok(this.getDataset(datasetId)!);
  }

  listDatasets(projectId: string, page: PageRequest): Outcome<PageResult<DatasetRow>> {
    if (!this.getProject(projectId)) return missing("project");
    return ok(
      paginate(this.sql, { table: "datasets", key: "dataset_id", where: "project_id = ?", params: [projectId] }, page, datasetOf),
    );
  }

  getDataset(datasetId: string): DatasetRow | null {
    const r = this.sql.exec("SELECT * FROM datasets WHERE dataset_id = ?", datasetId).toArray()[0];
    return r ? datasetOf(r) : null;
  }

  patchDataset(datasetId: string, patch: DatasetPatch): DatasetRow | null {
    const cur = this.getDataset(datasetId);
    if (!cur) return null;
    const next: DatasetRow = {
      ...cur,
      name: patch.name ?? cur.name,
      camera_model: patch.camera_model ?? cur.camera_model,
      intrinsics_mode: patch.intrinsics_mode ?? cur.intrinsics_mode,
      is_spherical: patch.is_spherical ?? cur.is_spherical,
      respect_exif_orientation: patch.respect_exif_orientation ?? cur.respect_exif_orientation,
      rig_config_text: patch.rig_config !== undefined ? (patch.rig_config ? JSON.stringify(patch.rig_config) : null) : cur.rig_config_text,
      active_maskset_id: patch.active_maskset_id !== undefined ? patch.active_maskset_id : cur.active_maskset_id,
    };
    this.sql.exec(
      `UPDATE datasets SET name = ?, camera_model = ?, intrinsics_mode = ?, is_spherical = ?,
         respect_exif_orientation = ?, rig_config_json = ?, active_maskset_id = ? WHERE dataset_id = ?`,
      next.name,
      next.camera_model,
      next.intrinsics_mode,
      next.is_spherical ? 1 : 0,
      next.respect_exif_orientation ? 1 : 0,
      next.rig_config_text,
      next.active_maskset_id,
      datasetId,
    );
    return next;
  }

  deleteDataset(datasetId: string): boolean {
    if (!this.getDataset(datasetId)) return false;
    this.ctx.storage.transactionSync(() => this.dropDataset(datasetId));
    this.scheduleGc();
    return true;
  }

  // ---- images (2.5, 4.5) ----

  /**
   * Registers every item or none (batchCreate is all-or-nothing). `listField` names the request's
   * list of items (`requests`), or is null for a single item whose fields are the body's own.
   */
  createImages(datasetId: string, items: { name: string; blob_sha: string }[], listField: string | null): Outcome<ImageRow[]> {
    if (!this.getDataset(datasetId)) return missing("dataset");
    const at = (i: number, field: string) => (listField === null ? field : `${listField}.${i}.${field}`);
    const bad = this.unknownBlobs(items.map((i) => i.blob_sha), (i) => at(i, "blob_sha"));
    if (bad) return bad;
    const dupes = duplicateNames(items.map((i) => i.name), (i) => at(i, "name"));
    if (dupes) return dupes;
    const taken = items.filter(
      (i) => this.sql.exec("SELECT 1 FROM images WHERE dataset_id = ? AND name = ?", datasetId, i.name).toArray().length > 0,
    );
    if (taken.length > 0) return clash(`an image named '${taken[0]!.name}' already exists in this dataset`);
    const rows = this.ctx.storage.transactionSync(() => {
      const out = items.map((i) => this.insertImage(datasetId, i.name, i.blob_sha));
      this.refreshManifest(datasetId);
      return out;
    });
    return ok(rows);
  }

  listImages(datasetId: string, page: PageRequest): Outcome<PageResult<ImageRow>> {
    if (!this.getDataset(datasetId)) return missing("dataset");
    return ok(paginate(this.sql, { table: "images", key: "image_id", where: "dataset_id = ?", params: [datasetId] }, page, imageOf));
  }

  /** All images of a dataset in creation order (for stages that need the whole manifest). */
  allImages(datasetId: string): ImageRow[] {
    return this.sql.exec("SELECT * FROM images WHERE dataset_id = ? ORDER BY image_id", datasetId).toArray().map(imageOf);
  }

  getImage(imageId: string): ImageRow | null {
    const r = this.sql.exec("SELECT * FROM images WHERE image_id = ?", imageId).toArray()[0];
    return r ? imageOf(r) : null;
  }

  deleteImage(imageId: string): boolean {
    const img = this.getImage(imageId);
    if (!img) return false;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM images WHERE image_id = ?", imageId);
      this.releaseBlob(img.content_sha);
      this.refreshManifest(img.dataset_id);
    });
    this.scheduleGc();
    return true;
  }

  deleteImageByName(datasetId: string, name: string): boolean {
    const r = this.sql.exec<{ image_id: string }>("SELECT image_id FROM images WHERE dataset_id = ? AND name = ?", datasetId, name).toArray()[0];
    return r ? this.deleteImage(r.image_id) : false;
  }

  // ---- blobs ----

  getBlob(sha: string): BlobRow | null {
    const r = this.sql.exec("SELECT * FROM blobs WHERE sha = ? AND refcount > 0", sha).toArray()[0];
    return r ? (r as unknown as BlobRow) : null;
  }

  // ---- uploads (2.6, 3.3, 4.3) ----

  /** Creates an upload, or returns the one created earlier under the same `Idempotency-Key`. */
  createUpload(input: UploadInput, lifetimeMs: number): { upload: UploadRow; created: boolean } {
    this.expireUploads();
    if (input.idempotency_key) {
      const prior = this.sql.exec("SELECT * FROM uploads WHERE idempotency_key = ?", input.idempotency_key).toArray()[0];
      if (prior) return { upload: uploadOf(prior), created: false };
    }
    const now = Date.now();
    const row: UploadRow = {
      upload_id: ulid(),
      state: input.expected_size === 0 ? "received" : "open",
      expected_size: input.expected_size,
      received_bytes: 0,
      content_type: input.content_type ?? null,
      expected_sha: input.expected_sha ?? null,
      blob_sha: null,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + lifetimeMs).toISOString(),
    };
    this.sql.exec(
      `INSERT INTO uploads (upload_id, state, expected_size, received_bytes, content_type, expected_sha, blob_sha,
         idempotency_key, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.upload_id,
      row.state,
      row.expected_size,
      row.received_bytes,
      row.content_type,
      row.expected_sha,
      row.blob_sha,
      input.idempotency_key ?? null,
      row.created_at,
      row.expires_at,
    );
    this.scheduleGc();
    return { upload: row, created: true };
  }

  /** The upload, or null when it never existed or has passed `expires_at` (3.3: both are 404). */
  getUpload(uploadId: string): UploadRow | null {
    const r = this.sql.exec("SELECT * FROM uploads WHERE upload_id = ?", uploadId).toArray()[0];
    if (!r || (r.expires_at as string) <= nowIso()) return null;
    return uploadOf(r);
  }

  /**
   * Records a chunk already written to R2 at `chunk.r2_key`. Chunks append at `received_bytes`;
   * re-sending the same bytes at an offset already received is a no-op (4.3 idempotent re-send).
   * On any failure the caller deletes the orphan R2 object.
   */
  recordChunk(uploadId: string, chunk: ChunkRecord, total: number | null): Outcome<{ upload: UploadRow; stored: boolean }> {
    const up = this.getUpload(uploadId);
    if (!up) return missing("upload");
    if (total !== null && total !== up.expected_size) {
      return invalid(`Content-Range total ${total} differs from the upload's expected_size ${up.expected_size}`, [
        { path: "Content-Range", message: "total must equal expected_size", code: "total_mismatch" },
      ]);
    }
    if (chunk.start + chunk.length > up.expected_size) {
      return invalid(`chunk ends at byte ${chunk.start + chunk.length}, past expected_size ${up.expected_size}`, [
        { path: "Content-Range", message: "range exceeds expected_size", code: "range_exceeds_size" },
      ]);
    }
    const prior = this.sql
      .exec<{ length: number; sha: string }>("SELECT length, sha FROM upload_chunks WHERE upload_id = ? AND start = ?", uploadId, chunk.start)
      .toArray()[0];
    if (prior) {
      if (prior.length === chunk.length && prior.sha === chunk.sha) return ok({ upload: up, stored: false });
      return clash(`different bytes were already received at offset ${chunk.start}`);
    }
    if (up.state === "finalized") return clash("the upload is finalized");
    if (chunk.start !== up.received_bytes) {
      return clash(`chunks must be sent in order: the next chunk starts at byte ${up.received_bytes}`);
    }
    const received = up.received_bytes + chunk.length;
    const state = received === up.expected_size ? "received" : "open";
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO upload_chunks (upload_id, start, length, sha, r2_key) VALUES (?, ?, ?, ?, ?)",
        uploadId,
        chunk.start,
        chunk.length,
        chunk.sha,
        chunk.r2_key,
      );
      this.sql.exec("UPDATE uploads SET received_bytes = ?, state = ? WHERE upload_id = ?", received, state, uploadId);
    });
    return ok({ upload: { ...up, received_bytes: received, state }, stored: true });
  }

  /** The chunks to assemble, in order, once every byte is received. */
  chunksToFinalize(uploadId: string): Outcome<{ upload: UploadRow; chunks: ChunkRecord[] }> {
    const up = this.getUpload(uploadId);
    if (!up) return missing("upload");
    if (up.state === "open") {
      return clash(`upload incomplete: ${up.received_bytes} of ${up.expected_size} bytes received`);
    }
    const chunks = this.sql
      .exec("SELECT start, length, sha, r2_key FROM upload_chunks WHERE upload_id = ? ORDER BY start", uploadId)
      .toArray() as unknown as ChunkRecord[];
    return ok({ upload: up, chunks });
  }

  /**
   * Marks the upload finalized with its blob (created with one reference held by the upload
   * until it expires, or given one more reference if the tenant already had these bytes).
   * The reference is taken before the caller writes the bytes to their content address, so the
   * garbage collector can no longer delete an earlier copy there; the chunks stay until
   * `releaseChunks`, once the bytes are in place. Idempotent: a second call changes nothing.
   */
  completeFinalize(uploadId: string, blob: BlobFacts): Outcome<UploadRow> {
    const up = this.getUpload(uploadId);
    if (!up) return missing("upload");
    if (up.state === "finalized") return ok(up);
    this.ctx.storage.transactionSync(() => {
      this.retainBlob(blob);
      this.sql.exec("UPDATE uploads SET state = 'finalized', blob_sha = ? WHERE upload_id = ?", blob.sha, uploadId);
    });
    return ok({ ...up, state: "finalized", blob_sha: blob.sha });
  }

  /** Queues a finalized upload's chunks for deletion: its bytes are at their content address. */
  releaseChunks(uploadId: string): void {
    this.ctx.storage.transactionSync(() => this.discardChunks(uploadId));
    this.scheduleGc();
  }

  // ---- jobs (2.7, 2.9, 3.2.1): the index, reconstructions, the task cache ----

  /**
   * Indexes a new job of the project, which holds its input blobs, and answers its cache hits:
   * for each key that already succeeded in this tenant, the cached outputs, whose blobs the new
   * job now also holds. A
   * pipeline's reconstruction is the one identified by (dataset snapshot, params, runtime)
   * (2.7), created on first use; its status mirrors its latest driving job. When the task that
   * seals it (the pipeline's last, `map`) is a cache hit, no runner will seal anything for it, so
   * it adopts the cached task's last snapshot (answered as `adopted`). Work on an existing
   * reconstruction (an export) names it (`{recon_id}`) without driving it.
   */
  registerJob(input: { job: JobRow; input_shas: string[]; cache_keys: string[]; recon: ReconInput | { recon_id: string } | null }): Outcome<{
    hits: Record<string, TaskOutputs>;
    recon_id: string | null;
    adopted: AdoptedSnapshot | null;
  }> {
    const { job } = input;
    if (!this.getProject(job.project_id)) return missing("project");
    if (input.recon && "recon_id" in input.recon && !this.getReconstruction(input.recon.recon_id)) return missing("reconstruction");
    return ok(
      this.ctx.storage.transactionSync(() => {
        let reconId: string | null = null;
        const driven = input.recon && "dataset_snapshot_hash" in input.recon ? input.recon : null;
        if (input.recon && "recon_id" in input.recon) reconId = input.recon.recon_id;
        if (driven) {
          const r = driven;
          this.sql.exec(
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
          reconId = this.sql
            .exec<{ recon_id: string }>(
              "SELECT recon_id FROM reconstructions WHERE project_id = ? AND dataset_snapshot_hash = ? AND params_hash = ? AND rv_id = ?",
              job.project_id,
              r.dataset_snapshot_hash,
              r.params_hash,
              r.rv_id,
            )
            .one().recon_id;
        }
        const indexed = { ...job, recon_id: reconId };
        this.sql.exec("INSERT INTO jobs (job_id, project_id, status, job_json) VALUES (?, ?, ?, ?)", job.job_id, job.project_id, job.status, JSON.stringify(indexed));
        // The job's inputs stay readable even if their dataset is deleted while it runs.
        for (const sha of input.input_shas) this.holdBlob(job.job_id, sha);
        const hits: Record<string, TaskOutputs> = {};
        let sealer: string | null = null;
        for (const key of input.cache_keys) {
          const row = this.sql.exec<{ outputs_json: string; task_id: string }>("SELECT outputs_json, task_id FROM task_cache WHERE cache_key = ?", key).toArray()[0];
          if (!row) continue;
          const outputs = JSON.parse(row.outputs_json) as TaskOutputs;
          for (const f of outputs.artifacts.flatMap((a) => a.files)) this.holdBlob(job.job_id, f.blob_sha);
          hits[key] = outputs;
          if (key === input.cache_keys.at(-1)) sealer = row.task_id;
        }
        const adopted = driven && reconId && sealer ? this.adoptSnapshot(reconId, sealer) : null;
        return { hits, recon_id: reconId, adopted };
      }),
    );
  }

  /** Undoes `registerJob` when the job's own object could not be created. */
  forgetJob(jobId: string): void {
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE reconstructions SET status = 'failed' WHERE job_id = ?", jobId);
      this.dropJob(jobId);
    });
    this.scheduleGc();
  }

  /**
   * Follows a JobStore's change; `version` (its event cursor) orders concurrent updates. Records
   * the outputs of tasks that succeeded since the last call: the cache entry (3.2.1; the first
   * one stays) and a StageArtifact per output artifact, holding its blobs. Recording the same task
   * again changes nothing, so the JobStore may repeat a call that seemed lost. A job no longer
   * indexed (its project was deleted) records nothing.
   */
  syncJob(job: JobRow, version: number, completed: { dataset: { dataset_id: string; manifest_hash: string } | null; tasks: CompletedTask[] }): void {
    if (this.sql.exec("SELECT 1 FROM jobs WHERE job_id = ?", job.job_id).toArray().length === 0) return;
    this.ctx.storage.transactionSync(() => {
      const written = this.sql.exec(
        "UPDATE jobs SET status = ?, job_json = ?, version = ? WHERE job_id = ? AND version < ?",
        job.status,
        JSON.stringify(job),
        version,
        job.job_id,
        version,
      ).rowsWritten;
      if (written > 0) {
        const mirrored = ["pending", "running", "succeeded"].includes(job.status) ? job.status : "failed";
        this.sql.exec("UPDATE reconstructions SET status = ? WHERE job_id = ?", mirrored, job.job_id);
      }
      const scope: ArtifactScope = {
        project_id: job.project_id,
        dataset_id: completed.dataset?.dataset_id ?? null,
        manifest_hash: completed.dataset?.manifest_hash ?? null,
        recon_id: job.recon_id,
      };
      for (const t of completed.tasks) {
        if (t.cacheable) {
          this.sql.exec(
            "INSERT OR IGNORE INTO task_cache (cache_key, outputs_json, job_id, task_id, created_at) VALUES (?, ?, ?, ?, ?)",
            t.cache_key,
            t.outputs_json,
            job.job_id,
            t.task_id,
            nowIso(),
          );
        }
        (JSON.parse(t.outputs_json) as TaskOutputs).artifacts.forEach((a, ord) => {
          this.insertArtifact({ job_id: job.job_id, task_id: t.task_id, ord, scope, descriptor: a });
        });
      }
    });
  }

  listJobs(page: PageRequest, status: JobStatus | undefined): PageResult<JobRow> {
    const where = status ? { where: "status = ?", params: [status] } : { where: "1=1", params: [] };
    return paginate(this.sql, { table: "jobs", key: "job_id", ...where }, page, (r) => JSON.parse(r.job_json as string) as JobRow);
  }

  /** A blob a runner uploaded for the job: stored once per tenant, referenced once per job. */
  retainJobBlob(jobId: string, facts: BlobFacts): void {
    this.ctx.storage.transactionSync(() => {
      if (this.sql.exec("INSERT OR IGNORE INTO job_blobs (job_id, sha) VALUES (?, ?)", jobId, facts.sha).rowsWritten > 0) this.retainBlob(facts);
    });
  }

  // ---- reconstructions, sub-models and sealed snapshots (2.7, 2.8, 2.10, 3.5) ----

  getReconstruction(reconId: string): ReconRow | null {
    return (this.sql.exec("SELECT * FROM reconstructions WHERE recon_id = ?", reconId).toArray()[0] as unknown as ReconRow | undefined) ?? null;
  }

  /**
   * Seals the next snapshot of the reconstruction, all or nothing: its rows are only ever
   * inserted (3.5), its blobs gain one reference held by the reconstruction, and each component's
   * SubModel now points at it. The same lease sealing the same request again (a retry after a
   * lost answer) gets the snapshot it already made.
   */
  sealSnapshot(input: SealInput): Outcome<{ seq: number; created: boolean }> {
    if (!this.getReconstruction(input.recon_id)) return missing("reconstruction");
    const prior = this.sql
      .exec<{ seq: number }>("SELECT seq FROM snapshots WHERE recon_id = ? AND lease_id = ? AND digest = ?", input.recon_id, input.lease_id, input.digest)
      .toArray()[0];
    if (prior) return ok({ seq: prior.seq, created: false });
    const gone = input.files.find((f) => !this.getBlob(f.sha));
    if (gone) return invalid("a file's blob is no longer stored", [{ path: "files", message: `blob ${gone.sha} is gone`, code: "unknown_blob" }]);
    const seq = this.ctx.storage.transactionSync(() => this.insertSnapshot(input));
    return ok({ seq, created: true });
  }

  /** Inserts the next snapshot of the reconstruction (inside the caller's transaction); answers its seq. */
  private insertSnapshot(input: SealInput): number {
    const next = this.sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM snapshots WHERE recon_id = ?", input.recon_id).one().n;
    const now = nowIso();
    this.sql.exec(
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
      this.sql.exec(
        "INSERT INTO snapshot_files (recon_id, seq, component, name, sha, size) VALUES (?, ?, ?, ?, ?, ?)",
        input.recon_id,
        next,
        f.component,
        f.name,
        f.sha,
        f.size,
      );
      this.holdReconBlob(input.recon_id, f.sha);
    }
    for (const c of input.components) {
      this.sql.exec(
        "INSERT INTO snapshot_components (recon_id, seq, idx, num_reg_images, num_points3D) VALUES (?, ?, ?, ?, ?)",
        input.recon_id,
        next,
        c.idx,
        c.num_reg_images,
        c.num_points3D,
      );
      this.sql.exec(
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
    this.registerSnapshotArtifacts(input.recon_id, next, input.manifest_hash);
    return next;
  }

  /**
   * The reconstruction's first snapshot, taken from the last one `taskId` sealed (in whichever
   * reconstruction): the same files and blobs, now also held by this reconstruction, plus the
   * reconstruction-level files (2.14) of that one that this one lacks. Null when the
   * reconstruction already has snapshots or the task sealed none.
   */
  private adoptSnapshot(reconId: string, taskId: string): AdoptedSnapshot | null {
    if (this.sql.exec("SELECT 1 FROM snapshots WHERE recon_id = ? LIMIT 1", reconId).toArray().length > 0) return null;
    const src = this.sql
      .exec<{ recon_id: string; seq: number; job_id: string; lease_id: string; digest: string; summary_json: string }>(
        "SELECT recon_id, seq, job_id, lease_id, digest, summary_json FROM snapshots WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
        taskId,
      )
      .toArray()[0];
    if (!src) return null;
    const files = this.sql.exec<SealInput["files"][number]>("SELECT component, name, sha, size FROM snapshot_files WHERE recon_id = ? AND seq = ?", src.recon_id, src.seq).toArray();
    const components = this.sql
      .exec<{ idx: number; num_reg_images: number; num_points3D: number; summary_json: string | null }>(
        `SELECT c.idx, c.num_reg_images, c.num_points3D, m.summary_json FROM snapshot_components c
         LEFT JOIN submodels m ON m.recon_id = c.recon_id AND m.idx = c.idx AND m.snapshot_seq = c.seq WHERE c.recon_id = ? AND c.seq = ?`,
        src.recon_id,
        src.seq,
      )
      .toArray()
      .map((c) => ({ ...c, summary_json: c.summary_json ?? JSON.stringify({ num_reg_images: c.num_reg_images, num_points3D: c.num_points3D }) }));
    // The adopted snapshot's artifacts keep the dataset scope of the source's.
    const manifest = this.sql
      .exec<{ m: string | null }>("SELECT manifest_hash AS m FROM artifacts WHERE recon_id = ? AND snapshot_seq = ? AND component = -1", src.recon_id, src.seq)
      .toArray()[0];
    const seq = this.insertSnapshot({ ...src, recon_id: reconId, task_id: taskId, files, components, manifest_hash: manifest?.m ?? null });
    const reconFiles = this.sql.exec<{ name: string; sha: string; size: number }>("SELECT name, sha, size FROM recon_files WHERE recon_id = ?", src.recon_id).toArray();
    for (const f of reconFiles) {
      if (this.sql.exec("INSERT OR IGNORE INTO recon_files (recon_id, name, sha, size) VALUES (?, ?, ?, ?)", reconId, f.name, f.sha, f.size).rowsWritten > 0) {
        this.holdReconBlob(reconId, f.sha);
      }
    }
    return { seq, summary: JSON.parse(src.summary_json) as Record<string, unknown> };
  }

  /** The sealed seqs, ascending; null when the reconstruction does not exist. */
  snapshotSeqs(reconId: string): number[] | null {
    if (!this.getReconstruction(reconId)) return null;
    return this.sql.exec<{ seq: number }>("SELECT seq FROM snapshots WHERE recon_id = ? ORDER BY seq", reconId).toArray().map((r) => r.seq);
  }

  /**
   * A sealed file: of component `idx` (component 0 of a seal without components is the root),
   * or (idx null) of the root, which is the largest model (2.8 rule 2): the root's own file
   * when the seal gave one, else the largest component's
   * (most registered images, then most points, then the lowest idx). Null when the snapshot
   * does not hold it.
   */
  snapshotFile(reconId: string, seq: number, idx: number | null, name: string): StoredFile | null {
    const own = this.sealedFile(reconId, seq, idx ?? -1, name);
    if (own) return own;
    if (idx !== null) {
      // A seal without components is one model: its component 0 is the root.
      const single =
        idx === 0 &&
        this.sql.exec("SELECT 1 FROM snapshot_files WHERE recon_id = ? AND seq = ? AND component >= 0 LIMIT 1", reconId, seq).toArray().length === 0;
      return single ? this.sealedFile(reconId, seq, -1, name) : null;
    }
    const largest = this.sql
      .exec<{ idx: number }>(
        `SELECT c.idx FROM snapshot_components c JOIN snapshot_files f ON f.recon_id = c.recon_id AND f.seq = c.seq AND f.component = c.idx
         WHERE c.recon_id = ? AND c.seq = ? AND f.name = ? ORDER BY c.num_reg_images DESC, c.num_points3D DESC, c.idx LIMIT 1`,
        reconId,
        seq,
        name,
      )
      .toArray()[0];
    return largest ? this.sealedFile(reconId, seq, largest.idx, name) : null;
  }

  /** Whether the snapshot (and, with idx, its component) exists. */
  hasSnapshot(reconId: string, seq: number, idx: number | null): boolean {
    const q =
      idx === null
        ? this.sql.exec("SELECT 1 FROM snapshots WHERE recon_id = ? AND seq = ?", reconId, seq)
        : this.sql.exec("SELECT 1 FROM snapshot_components WHERE recon_id = ? AND seq = ? AND idx = ?", reconId, seq, idx);
    return q.toArray().length > 0;
  }

  listSubmodels(reconId: string, page: PageRequest): Outcome<PageResult<SubmodelRow>> {
    if (!this.getReconstruction(reconId)) return missing("reconstruction");
    return ok(paginate(this.sql, { table: "submodels", key: "submodel_id", where: "recon_id = ?", params: [reconId] }, page, (r) => r as unknown as SubmodelRow));
  }

  getSubmodel(submodelId: string): SubmodelRow | null {
    return (this.sql.exec("SELECT * FROM submodels WHERE submodel_id = ?", submodelId).toArray()[0] as unknown as SubmodelRow | undefined) ?? null;
  }

  /**
   * Writes a reconstruction-level file (2.14: rewritten by every match or verify run). The
   * reconstruction holds the new blob; the old one is released unless a snapshot holds it too.
   */
  putReconFile(reconId: string, name: string, blob: { sha: string; size: number }): Outcome<null> {
    if (!this.getReconstruction(reconId)) return missing("reconstruction");
    if (!this.getBlob(blob.sha)) return invalid("the file's blob is no longer stored", [{ path: "blob_sha", message: "unknown blob", code: "unknown_blob" }]);
    this.ctx.storage.transactionSync(() => {
      const old = this.sql.exec<{ sha: string }>("SELECT sha FROM recon_files WHERE recon_id = ? AND name = ?", reconId, name).toArray()[0];
      this.sql.exec(
        "INSERT INTO recon_files (recon_id, name, sha, size) VALUES (?, ?, ?, ?) ON CONFLICT (recon_id, name) DO UPDATE SET sha = excluded.sha, size = excluded.size",
        reconId,
        name,
        blob.sha,
        blob.size,
      );
      this.holdReconBlob(reconId, blob.sha);
      if (old && old.sha !== blob.sha) this.releaseReconBlobIfUnused(reconId, old.sha);
    });
    this.scheduleGc();
    return ok(null);
  }

  reconFile(reconId: string, name: string): StoredFile | null {
    const r = this.sql.exec<{ sha: string; size: number }>("SELECT sha, size FROM recon_files WHERE recon_id = ? AND name = ?", reconId, name).toArray()[0];
    const blob = r ? this.getBlob(r.sha) : null;
    return r && blob ? { name, sha: r.sha, size: r.size, r2_key: blob.r2_key } : null;
  }

  // ---- stage artifacts (2.11, 4.8, 4.9, 4.10) ----

  getArtifact(artifactId: string): ArtifactRow | null {
    const r = this.sql.exec("SELECT * FROM artifacts WHERE artifact_id = ?", artifactId).toArray()[0];
    return r ? artifactOf(r) : null;
  }

  /** The job's or the reconstruction's artifacts, oldest first, with exact-match filters; 404 when the owner does not exist. */
  listArtifacts(owner: { job_id: string } | { recon_id: string }, filter: ArtifactFilter, page: PageRequest): Outcome<PageResult<ArtifactRow>> {
    const where: string[] = [];
    const params: SqlStorageValue[] = [];
    if ("job_id" in owner) {
      if (this.sql.exec("SELECT 1 FROM jobs WHERE job_id = ?", owner.job_id).toArray().length === 0) return missing("job");
      where.push("job_id = ?");
      params.push(owner.job_id);
    } else {
      if (!this.getReconstruction(owner.recon_id)) return missing("reconstruction");
      where.push("recon_id = ?");
      params.push(owner.recon_id);
    }
    for (const field of ["kind", "task_id", "name"] as const) {
      const value = filter[field];
      if (value === undefined) continue;
      where.push(`${field} = ?`);
      params.push(value);
    }
    return ok(paginate(this.sql, { table: "artifacts", key: "artifact_id", where: where.join(" AND "), params }, page, artifactOf));
  }

  /**
   * The artifact of a sealed snapshot's root (idx null) or of one component (2.11 kinds
   * `reconstruction.snapshot`, `reconstruction.submodel`); made now for a snapshot sealed before
   * artifacts were recorded. Null when the snapshot or the component does not exist.
   */
  snapshotArtifact(reconId: string, seq: number, idx: number | null): ArtifactRow | null {
    if (!this.hasSnapshot(reconId, seq, null)) return null;
    const find = () =>
      this.sql.exec("SELECT * FROM artifacts WHERE recon_id = ? AND snapshot_seq = ? AND component = ?", reconId, seq, idx ?? -1).toArray()[0];
    let r = find();
    if (!r) {
      this.ctx.storage.transactionSync(() => this.registerSnapshotArtifacts(reconId, seq, null));
      r = find();
    }
    return r ? artifactOf(r) : null;
  }

  // ---- alarm: upload expiry and R2 garbage ----

  override async alarm(): Promise<void> {
    this.expireUploads();
    // No other event runs while garbage is deleted, so a finalize cannot re-reference a blob
    // between the choice of its key and the R2 delete (the bytes would vanish under it).
    const deleted = await this.ctx.blockConcurrencyWhile(() => this.deleteGarbage());
    if (!deleted) await this.ctx.storage.setAlarm(Date.now() + GC_RETRY_MS);
    else this.scheduleGc();
  }

  /** Deletes a batch of garbage from R2 (more waits for the next alarm); false when R2 failed. */
  private async deleteGarbage(): Promise<boolean> {
    const keys = this.sql.exec<{ r2_key: string }>("SELECT r2_key FROM r2_garbage ORDER BY queued_at LIMIT ?", GC_BATCH).toArray();
    try {
      for (const k of keys) {
        // A key ending in '/' stands for every object under it (a blob's derived objects).
        const listed = k.r2_key.endsWith("/") ? await this.env.BLOBS.list({ prefix: k.r2_key }) : null;
        const doomed = listed ? listed.objects.map((o) => o.key) : [k.r2_key];
        if (doomed.length > 0) await this.env.BLOBS.delete(doomed);
        if (!listed?.truncated) this.sql.exec("DELETE FROM r2_garbage WHERE r2_key = ?", k.r2_key);
      }
      return true;
    } catch {
      return false;
    }
  }

  // ---- internals ----

  private insertImage(datasetId: string, name: string, sha: string): ImageRow {
    const blob = this.getBlob(sha)!;
    const row: ImageRow = {
      image_id: ulid(),
      dataset_id: datasetId,
      name,
      content_sha: sha,
      source_kind: "upload",
      rel_path: null,
      byte_size: blob.size,
      width: blob.width,
      height: blob.height,
      media_type: blob.media_type,
      created_at: nowIso(),
    };
    this.sql.exec(
      `INSERT INTO images (image_id, dataset_id, name, content_sha, source_kind, rel_path, byte_size, width, height,
         media_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ...Object.values(row),
    );
    this.sql.exec("UPDATE blobs SET refcount = refcount + 1 WHERE sha = ?", sha);
    return row;
  }

  /** One more reference to a stored blob, held by the job (once per job and blob). */
  private holdBlob(jobId: string, sha: string): void {
    if (this.sql.exec("INSERT OR IGNORE INTO job_blobs (job_id, sha) VALUES (?, ?)", jobId, sha).rowsWritten > 0) {
      this.sql.exec("UPDATE blobs SET refcount = refcount + 1 WHERE sha = ?", sha);
    }
  }

  private sealedFile(reconId: string, seq: number, component: number, name: string): StoredFile | null {
    const r = this.sql
      .exec<{ sha: string; size: number }>(
        "SELECT sha, size FROM snapshot_files WHERE recon_id = ? AND seq = ? AND component = ? AND name = ?",
        reconId,
        seq,
        component,
        name,
      )
      .toArray()[0];
    const blob = r ? this.getBlob(r.sha) : null;
    return r && blob ? { name, sha: r.sha, size: r.size, r2_key: blob.r2_key } : null;
  }

  /** One more reference to a stored blob, held by the reconstruction (once per reconstruction and blob). */
  private holdReconBlob(reconId: string, sha: string): void {
    if (this.sql.exec("INSERT OR IGNORE INTO recon_blobs (recon_id, sha) VALUES (?, ?)", reconId, sha).rowsWritten > 0) {
      this.sql.exec("UPDATE blobs SET refcount = refcount + 1 WHERE sha = ?", sha);
    }
  }

  private releaseReconBlobIfUnused(reconId: string, sha: string): void {
    const used =
      this.sql.exec("SELECT 1 FROM snapshot_files WHERE recon_id = ? AND sha = ? LIMIT 1", reconId, sha).toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM recon_files WHERE recon_id = ? AND sha = ? LIMIT 1", reconId, sha).toArray().length > 0;
    if (used) return;
    this.sql.exec("DELETE FROM recon_blobs WHERE recon_id = ? AND sha = ?", reconId, sha);
    this.releaseBlob(sha);
  }

  /**
   * Records an artifact and holds its blobs; null when the owner already recorded it (the same
   * task output, or the same snapshot root or component, recorded again).
   */
  private insertArtifact(a: {
    job_id: string;
    task_id: string;
    ord: number | null;
    scope: ArtifactScope;
    descriptor: TaskOutputs["artifacts"][number];
    snapshot?: { seq: number; component: number };
  }): string | null {
    const artifactId = ulid();
    const written = this.sql.exec(
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
    if (written === 0) return null;
    for (const sha of new Set(a.descriptor.files.map((f) => f.blob_sha))) {
      this.sql.exec("INSERT INTO artifact_blobs (artifact_id, sha) VALUES (?, ?)", artifactId, sha);
      this.sql.exec("UPDATE blobs SET refcount = refcount + 1 WHERE sha = ?", sha);
    }
    return artifactId;
  }

  private dropArtifact(artifactId: string): void {
    for (const b of this.sql.exec<{ sha: string }>("SELECT sha FROM artifact_blobs WHERE artifact_id = ?", artifactId).toArray()) this.releaseBlob(b.sha);
    this.sql.exec("DELETE FROM artifact_blobs WHERE artifact_id = ?", artifactId);
    this.sql.exec("DELETE FROM artifacts WHERE artifact_id = ?", artifactId);
  }

  /**
   * The artifacts of a sealed snapshot (2.11): its root (the largest model, 2.8 rule 2) as a
   * `reconstruction.snapshot`, each component as a `reconstruction.submodel`, owned by the map
   * task that sealed it. Idempotent.
   */
  private registerSnapshotArtifacts(reconId: string, seq: number, manifestHash: string | null): void {
    const recon = this.getReconstruction(reconId)!;
    const snap = this.sql
      .exec<{ job_id: string; task_id: string; summary_json: string }>("SELECT job_id, task_id, summary_json FROM snapshots WHERE recon_id = ? AND seq = ?", reconId, seq)
      .one();
    const names = this.sql
      .exec<{ name: string }>("SELECT DISTINCT name FROM snapshot_files WHERE recon_id = ? AND seq = ? ORDER BY name", reconId, seq)
      .toArray()
      .map((r) => r.name);
    const scope: ArtifactScope = { project_id: recon.project_id, dataset_id: recon.dataset_id, manifest_hash: manifestHash, recon_id: reconId };
    const models: { component: number; idx: number | null; summary: Record<string, unknown> }[] = [
      { component: -1, idx: null, summary: JSON.parse(snap.summary_json) },
      ...this.sql
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
        const f = this.snapshotFile(reconId, seq, m.idx, name);
        return f ? [{ path: name, blob_sha: f.sha, byte_size: f.size, media_type: name.endsWith(".bin") ? POINTS_MEDIA_TYPE : "application/json" }] : [];
      });
      if (files.length === 0) continue;
      const kind = m.idx === null ? "reconstruction.snapshot" : "reconstruction.submodel";
      this.insertArtifact({
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

  /** Forgets a reconstruction: its snapshots, sub-models and files, and its blob references. */
  private dropReconstruction(reconId: string): void {
    for (const b of this.sql.exec<{ sha: string }>("SELECT sha FROM recon_blobs WHERE recon_id = ?", reconId).toArray()) this.releaseBlob(b.sha);
    for (const table of ["recon_blobs", "recon_files", "submodels", "snapshot_components", "snapshot_files", "snapshots", "reconstructions"]) {
      this.sql.exec(`DELETE FROM ${table} WHERE recon_id = ?`, reconId);
    }
  }

  /** Forgets a job: its blob references, its cache entries (their outputs go with it) and its index row. */
  private dropJob(jobId: string): void {
    for (const b of this.sql.exec<{ sha: string }>("SELECT sha FROM job_blobs WHERE job_id = ?", jobId).toArray()) this.releaseBlob(b.sha);
    this.sql.exec("DELETE FROM job_blobs WHERE job_id = ?", jobId);
    this.sql.exec("DELETE FROM task_cache WHERE job_id = ?", jobId);
    this.sql.exec("DELETE FROM jobs WHERE job_id = ?", jobId);
  }

  private dropDataset(datasetId: string): void {
    for (const img of this.sql.exec<{ content_sha: string }>("SELECT content_sha FROM images WHERE dataset_id = ?", datasetId)) {
      this.releaseBlob(img.content_sha);
    }
    this.sql.exec("DELETE FROM images WHERE dataset_id = ?", datasetId);
    this.sql.exec("DELETE FROM datasets WHERE dataset_id = ?", datasetId);
  }

  /** SHA-256 of the sorted (name, content_sha) pairs (2.4). */
  private refreshManifest(datasetId: string): void {
    const pairs = this.sql
      .exec<{ name: string; content_sha: string }>("SELECT name, content_sha FROM images WHERE dataset_id = ?", datasetId)
      .toArray();
    this.sql.exec("UPDATE datasets SET manifest_hash = ? WHERE dataset_id = ?", manifestHash(pairs), datasetId);
  }

  private unknownBlobs(shas: string[], path: (i: number) => string) {
    const errors = shas.flatMap((sha, i) =>
      this.getBlob(sha) ? [] : [{ path: path(i), message: `no finalized upload with blob_sha ${sha}`, code: "unknown_blob" }],
    );
    return errors.length ? invalid("unknown blob_sha: finalize an upload of these bytes first", errors) : null;
  }

  private retainBlob(b: BlobFacts): void {
    this.sql.exec(
      `INSERT INTO blobs (sha, r2_key, size, media_type, width, height, refcount, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)
       ON CONFLICT (sha) DO UPDATE SET refcount = refcount + 1`,
      b.sha,
      b.r2_key,
      b.size,
      b.media_type,
      b.width,
      b.height,
      nowIso(),
    );
    this.sql.exec("DELETE FROM r2_garbage WHERE r2_key IN (?, ?)", b.r2_key, `${b.r2_key}/`);
  }

  /** Drops one reference; the last one queues the bytes for deletion. */
  private releaseBlob(sha: string): void {
    this.sql.exec("UPDATE blobs SET refcount = refcount - 1 WHERE sha = ?", sha);
    const gone = this.sql.exec<{ r2_key: string }>("SELECT r2_key FROM blobs WHERE sha = ? AND refcount <= 0", sha).toArray()[0];
    if (gone) {
      this.sql.exec("DELETE FROM blobs WHERE sha = ?", sha);
      this.queueGarbage(gone.r2_key);
      this.queueGarbage(`${gone.r2_key}/`);
    }
  }

  private discardChunks(uploadId: string): void {
    for (const c of this.sql.exec<{ r2_key: string }>("SELECT r2_key FROM upload_chunks WHERE upload_id = ?", uploadId)) {
      this.queueGarbage(c.r2_key);
    }
    this.sql.exec("DELETE FROM upload_chunks WHERE upload_id = ?", uploadId);
  }

  private queueGarbage(r2Key: string): void {
    this.sql.exec("INSERT OR IGNORE INTO r2_garbage (r2_key, queued_at) VALUES (?, ?)", r2Key, nowIso());
  }

  /** Uploads past `expires_at` are removed with their chunks; a finalized one drops its blob reference. */
  private expireUploads(): void {
    const now = nowIso();
    const expired = this.sql.exec<{ upload_id: string; blob_sha: string | null }>(
      "SELECT upload_id, blob_sha FROM uploads WHERE expires_at <= ?",
      now,
    );
    this.ctx.storage.transactionSync(() => {
      for (const u of expired.toArray()) {
        this.discardChunks(u.upload_id);
        if (u.blob_sha) this.releaseBlob(u.blob_sha);
        this.sql.exec("DELETE FROM uploads WHERE upload_id = ?", u.upload_id);
      }
    });
  }

  /** Wakes at once when garbage waits, else at the next upload expiry. */
  private scheduleGc(): void {
    const garbage = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM r2_garbage").one().n;
    const next = this.sql.exec<{ t: string | null }>("SELECT MIN(expires_at) AS t FROM uploads").one().t;
    const at = garbage > 0 ? Date.now() : next ? Date.parse(next) : null;
    if (at !== null) void this.ctx.storage.setAlarm(at);
  }
}

function manifestHash(pairs: { name: string; content_sha: string }[]): string {
  const lines = pairs
    .map((p) => `${p.name}\t${p.content_sha}\n`)
    .sort()
    .join("");
  return bytesToHex(sha256(utf8ToBytes(lines)));
}

function duplicateNames(names: string[], path: (i: number) => string) {
  const seen = new Set<string>();
  const errors = names.flatMap((n, i) => {
    if (!seen.has(n)) {
      seen.add(n);
      return [];
    }
    return [{ path: path(i), message: `duplicate name '${n}'`, code: "duplicate" }];
  });
  return errors.length ? invalid("image names must be unique within a dataset", errors) : null;
}

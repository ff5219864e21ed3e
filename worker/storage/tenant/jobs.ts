/**
 * @module The tenant's job index (spec 2.9; each JobStore is the truth, `version` its event
 * cursor), the task cache (3.2.1), and the blobs each job holds: its inputs, its cache hits'
 * outputs and its runners' uploads. A job's succeeded tasks are recorded here as cache entries
 * and StageArtifacts (2.11).
 */
import type { JobStatus, TaskOutputs } from "../../../protocol";
import type { AdoptedSnapshot, JobRow } from "../job-rows";
import { type Outcome, missing, ok } from "../outcome";
import { type PageRequest, type PageResult, exists, first, nowIso, paginate } from "../sql";
import type { ArtifactScope, BlobFacts, JobCompletions, JobRegistration } from "../tenant-rows";
import * as artifacts from "./artifacts";
import * as blobs from "./blobs";
import * as garbage from "./garbage";
import * as projects from "./projects";
import * as reconstructions from "./reconstructions";
import * as snapshots from "./snapshots";

/**
 * Indexes a new job of the project, which holds its input blobs, and answers its cache hits:
 * for each key that already succeeded in this tenant, the cached outputs, whose blobs the new
 * job now also holds. A pipeline's reconstruction is the one identified by (dataset snapshot,
 * params, runtime) (2.7), created on first use; its status mirrors its latest driving job. When
 * the task that seals it (the pipeline's last, `map`) is a cache hit, no runner will seal
 * anything for it, so it adopts the cached task's last snapshot (answered as `adopted`). Work on
 * an existing reconstruction (an export) names it (`{recon_id}`) without driving it.
 */
export function register(
  db: DurableObjectStorage,
  input: JobRegistration,
): Outcome<{
  hits: Record<string, TaskOutputs>;
  item_hits: Record<string, TaskOutputs>;
  recon_id: string | null;
  adopted: AdoptedSnapshot | null;
}> {
  const { job, recon } = input;
  if (!projects.get(db, job.project_id)) return missing("project");
  if (recon && "recon_id" in recon && !reconstructions.get(db, recon.recon_id)) return missing("reconstruction");
  return ok(
    db.transactionSync(() => {
      const driven = recon && "dataset_snapshot_hash" in recon ? recon : null;
      const reconId = driven ? reconstructions.drive(db, job, driven) : recon && "recon_id" in recon ? recon.recon_id : null;
      const indexed = { ...job, recon_id: reconId };
      db.sql.exec(
        "INSERT INTO jobs (job_id, project_id, status, job_json) VALUES (?, ?, ?, ?)",
        job.job_id,
        job.project_id,
        job.status,
        JSON.stringify(indexed),
      );
      // The job's inputs stay readable even if their dataset is deleted while it runs.
      for (const sha of input.input_shas) blobs.hold(db, "job", job.job_id, sha);
      for (const facts of input.made_blobs ?? []) blobs.holdNew(db, "job", job.job_id, facts);
      const hits: Record<string, TaskOutputs> = {};
      let sealer: string | null = null;
      for (const key of input.cache_keys) {
        const row = first<{ outputs_json: string; task_id: string }>(
          db.sql,
          "SELECT outputs_json, task_id FROM task_cache WHERE cache_key = ?",
          key,
        );
        if (!row) continue;
        const outputs = JSON.parse(row.outputs_json) as TaskOutputs;
        for (const f of outputs.artifacts.flatMap((a) => a.files)) blobs.hold(db, "job", job.job_id, f.blob_sha);
        hits[key] = outputs;
        if (key === input.cache_keys.at(-1)) sealer = row.task_id;
      }
      const adopted = driven && reconId && sealer ? snapshots.adopt(db, reconId, sealer) : null;
      return { hits, item_hits: holdItemHits(db, job.job_id, input.item_keys ?? []), recon_id: reconId, adopted };
    }),
  );
}

/** The cached outputs of the items among `keys` that succeeded in this tenant, whose blobs the job now holds. */
function holdItemHits(db: DurableObjectStorage, jobId: string, keys: readonly string[]): Record<string, TaskOutputs> {
  const hits: Record<string, TaskOutputs> = {};
  for (const key of keys) {
    const row = first<{ outputs_json: string }>(db.sql, "SELECT outputs_json FROM task_cache WHERE cache_key = ?", key);
    if (!row) continue;
    const outputs = JSON.parse(row.outputs_json) as TaskOutputs;
    for (const f of outputs.artifacts.flatMap((a) => a.files)) blobs.hold(db, "job", jobId, f.blob_sha);
    hits[key] = outputs;
  }
  return hits;
}

/** Items planned after submission (a chosen list's blocks, storage/job/pair-list.ts): their cache hits, held by the job as at registration. */
export function itemHits(db: DurableObjectStorage, jobId: string, keys: readonly string[]): Record<string, TaskOutputs> {
  if (!exists(db.sql, "SELECT 1 FROM jobs WHERE job_id = ?", jobId)) return {};
  return db.transactionSync(() => holdItemHits(db, jobId, keys));
}

/** Undoes `register` when the job's own object could not be created. */
export function forget(db: DurableObjectStorage, jobId: string): void {
  db.transactionSync(() => {
    db.sql.exec("UPDATE reconstructions SET status = 'failed' WHERE job_id = ?", jobId);
    drop(db, jobId);
  });
  garbage.schedule(db);
}

/**
 * Follows a JobStore's change; `version` (its event cursor) orders concurrent updates. Records
 * the outputs of tasks that succeeded since the last call: the cache entry (3.2.1; the first
 * one stays) and a StageArtifact per output artifact, holding its blobs. Recording the same task
 * again changes nothing, so the JobStore may repeat a call that seemed lost. A job no longer
 * indexed (its project was deleted) records nothing.
 */
export function sync(db: DurableObjectStorage, job: JobRow, version: number, completed: JobCompletions): void {
  if (!exists(db.sql, "SELECT 1 FROM jobs WHERE job_id = ?", job.job_id)) return;
  db.transactionSync(() => {
    const written = db.sql.exec(
      "UPDATE jobs SET status = ?, job_json = ?, version = ? WHERE job_id = ? AND version < ?",
      job.status,
      JSON.stringify(job),
      version,
      job.job_id,
      version,
    ).rowsWritten;
    if (written > 0) {
      const mirrored = ["pending", "running", "succeeded"].includes(job.status) ? job.status : "failed";
      db.sql.exec("UPDATE reconstructions SET status = ? WHERE job_id = ?", mirrored, job.job_id);
    }
    const scope: ArtifactScope = {
      project_id: job.project_id,
      dataset_id: completed.dataset?.dataset_id ?? null,
      manifest_hash: completed.dataset?.manifest_hash ?? null,
      recon_id: job.recon_id,
    };
    for (const t of completed.tasks) {
      if (t.cacheable) {
        db.sql.exec(
          "INSERT OR IGNORE INTO task_cache (cache_key, outputs_json, job_id, task_id, created_at) VALUES (?, ?, ?, ?, ?)",
          t.cache_key,
          t.outputs_json,
          job.job_id,
          t.task_id,
          nowIso(),
        );
      }
      (JSON.parse(t.outputs_json) as TaskOutputs).artifacts.forEach((a, ord) => {
        artifacts.insert(db, { job_id: job.job_id, task_id: t.task_id, ord, scope, descriptor: a });
      });
    }
    // An item's entry lives as long as the job that computed it, as a task's does.
    for (const it of completed.items ?? []) {
      db.sql.exec(
        "INSERT OR IGNORE INTO task_cache (cache_key, outputs_json, job_id, task_id, created_at) VALUES (?, ?, ?, ?, ?)",
        it.cache_key,
        it.outputs_json,
        job.job_id,
        it.task_id,
        nowIso(),
      );
    }
  });
}

/** The task whose outputs are the cache entry of `cacheKey` (3.2.1), if one succeeded. */
export function cachedTask(db: DurableObjectStorage, cacheKey: string): { job_id: string; task_id: string } | null {
  return first<{ job_id: string; task_id: string }>(db.sql, "SELECT job_id, task_id FROM task_cache WHERE cache_key = ?", cacheKey);
}

/** Forgets the cache entry of `cacheKey` (the job and its outputs stay): the next task with that key computes again and its result becomes the entry. */
export function forgetCacheEntry(db: DurableObjectStorage, cacheKey: string): void {
  db.sql.exec("DELETE FROM task_cache WHERE cache_key = ?", cacheKey);
}

/** Whether the tenant has the job (its index row is written before the job's own object is created). */
export function has(db: DurableObjectStorage, jobId: string): boolean {
  return exists(db.sql, "SELECT 1 FROM jobs WHERE job_id = ?", jobId);
}

export function list(db: DurableObjectStorage, page: PageRequest, status: JobStatus | undefined): PageResult<JobRow> {
  const where = status ? { where: "status = ?", params: [status] } : { where: "1=1", params: [] };
  return paginate(db.sql, { table: "jobs", key: "job_id", ...where }, page, (r) => JSON.parse(r.job_json as string) as JobRow);
}

/** A blob a runner uploaded for the job: stored once per tenant, referenced once per job. */
export function retainBlob(db: DurableObjectStorage, jobId: string, facts: BlobFacts): void {
  db.transactionSync(() => blobs.holdNew(db, "job", jobId, facts));
}

/** Forgets a job: its blob references, its cache entries (their outputs go with it) and its index row (inside the caller's transaction). */
export function drop(db: DurableObjectStorage, jobId: string): void {
  blobs.letGoAll(db, "job", jobId);
  db.sql.exec("DELETE FROM task_cache WHERE job_id = ?", jobId);
  db.sql.exec("DELETE FROM jobs WHERE job_id = ?", jobId);
}

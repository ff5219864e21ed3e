/**
 * @module TenantStore: one SQLite-backed Durable Object per tenant, named by the tenant id, so
 * a request can only ever reach its own tenant's rows (spec 5.3 isolation is structural).
 * Holds projects, datasets, images and their pose priors, uploads, the job index, reconstructions and their sealed
 * snapshots, stage artifacts (2.11), and the reference counts of the tenant's blobs.
 * Bytes live in R2; this object decides when they may be deleted and deletes them in its alarm.
 *
 * The class is the object's RPC surface only: each method hands the object's storage to the
 * feature module under tenant/ that does the work.
 */
import { DurableObject } from "cloudflare:workers";
import type { DatasetPatch, JobStatus, ProjectPatch } from "../../protocol";
import type { JobRow } from "./job-rows";
import { type PageRequest, migrate } from "./sql";
import * as artifacts from "./tenant/artifacts";
import * as blobs from "./tenant/blobs";
import * as cascade from "./tenant/cascade";
import * as datasets from "./tenant/datasets";
import * as garbage from "./tenant/garbage";
import * as images from "./tenant/images";
import * as jobs from "./tenant/jobs";
import * as posePriors from "./tenant/pose-priors";
import * as projects from "./tenant/projects";
import * as reconstructions from "./tenant/reconstructions";
import * as snapshots from "./tenant/snapshots";
import * as uploads from "./tenant/uploads";
import { TENANT_MIGRATIONS } from "./tenant-migrations";
import type {
  ArtifactFilter,
  BlobFacts,
  ChunkRecord,
  DatasetInput,
  JobCompletions,
  JobRegistration,
  SealInput,
  UploadInput,
} from "./tenant-rows";

export class TenantStore extends DurableObject<Env> {
  /** The object's SQLite database, transactions and alarm: what every feature module works on. */
  private readonly db: DurableObjectStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = ctx.storage;
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage, TENANT_MIGRATIONS));
  }

  /** Readiness probe (4.1): a real read of this object's database. */
  ping(): number {
    return this.db.sql.exec<{ v: number }>("SELECT MAX(version) AS v FROM _migrations").one().v;
  }

  // ---- projects (2.2, 4.2) ----

  createProject(input: { name: string; description?: string | null; pool_opt_in?: boolean }) {
    return projects.create(this.db, input);
  }
  listProjects(page: PageRequest) {
    return projects.list(this.db, page);
  }
  getProject(projectId: string) {
    return projects.get(this.db, projectId);
  }
  patchProject(projectId: string, patch: ProjectPatch) {
    return projects.patch(this.db, projectId, patch);
  }
  deleteProject(projectId: string) {
    return cascade.deleteProject(this.db, projectId);
  }

  // ---- datasets (2.3, 2.4, 4.4) ----

  createDataset(projectId: string, input: DatasetInput) {
    return datasets.create(this.db, projectId, input);
  }
  createDerivedDataset(projectId: string, taskId: string, input: DatasetInput) {
    return datasets.createDerived(this.db, projectId, taskId, input);
  }
  createImportedDataset(projectId: string, input: DatasetInput, made: BlobFacts[], priorsByName: Record<string, string>) {
    return datasets.createImported(this.db, projectId, input, made, priorsByName);
  }
  listDatasets(projectId: string, page: PageRequest) {
    return datasets.list(this.db, projectId, page);
  }
  getDataset(datasetId: string) {
    return datasets.get(this.db, datasetId);
  }
  patchDataset(datasetId: string, patch: DatasetPatch) {
    return datasets.patch(this.db, datasetId, patch);
  }
  deleteDataset(datasetId: string) {
    return datasets.remove(this.db, datasetId);
  }

  // ---- images (2.5, 4.5) ----

  createImages(datasetId: string, items: { name: string; blob_sha: string }[], listField: string | null) {
    return images.create(this.db, datasetId, items, listField);
  }
  listImages(datasetId: string, page: PageRequest) {
    return images.list(this.db, datasetId, page);
  }
  allImages(datasetId: string) {
    return images.all(this.db, datasetId);
  }
  getImage(imageId: string) {
    return images.get(this.db, imageId);
  }
  deleteImage(imageId: string) {
    return images.remove(this.db, imageId);
  }
  deleteImageByName(datasetId: string, name: string) {
    return images.removeByName(this.db, datasetId, name);
  }

  // ---- pose priors (4.12) ----

  getPosePrior(imageId: string) {
    return posePriors.get(this.db, imageId);
  }
  putPosePrior(imageId: string, priorJson: string) {
    return posePriors.put(this.db, imageId, priorJson);
  }
  deletePosePrior(imageId: string) {
    return posePriors.remove(this.db, imageId);
  }
  datasetPosePriors(datasetId: string) {
    return posePriors.ofDataset(this.db, datasetId);
  }
  putPosePriors(datasetId: string, priors: Record<string, string>) {
    return posePriors.putMany(this.db, datasetId, priors);
  }

  // ---- blobs ----

  getBlob(sha: string) {
    return blobs.get(this.db, sha);
  }

  // ---- uploads (2.6, 3.3, 4.3) ----

  createUpload(input: UploadInput, lifetimeMs: number) {
    return uploads.create(this.db, input, lifetimeMs);
  }
  getUpload(uploadId: string) {
    return uploads.get(this.db, uploadId);
  }
  recordChunk(uploadId: string, chunk: ChunkRecord, total: number | null) {
    return uploads.recordChunk(this.db, uploadId, chunk, total);
  }
  chunksToFinalize(uploadId: string) {
    return uploads.chunksToFinalize(this.db, uploadId);
  }
  reserveBlob(uploadId: string, blob: BlobFacts) {
    return uploads.reserveBlob(this.db, uploadId, blob);
  }
  completeFinalize(uploadId: string) {
    return uploads.completeFinalize(this.db, uploadId);
  }

  // ---- jobs (2.7, 2.9, 3.2.1): the index, reconstructions, the task cache ----

  registerJob(input: JobRegistration) {
    return jobs.register(this.db, input);
  }
  forgetJob(jobId: string) {
    return jobs.forget(this.db, jobId);
  }
  itemHits(jobId: string, keys: string[]) {
    return jobs.itemHits(this.db, jobId, keys);
  }
  syncJob(job: JobRow, version: number, completed: JobCompletions) {
    return jobs.sync(this.db, job, version, completed);
  }
  cachedTask(cacheKey: string) {
    return jobs.cachedTask(this.db, cacheKey);
  }
  forgetCacheEntry(cacheKey: string) {
    return jobs.forgetCacheEntry(this.db, cacheKey);
  }
  hasJob(jobId: string) {
    return jobs.has(this.db, jobId);
  }
  listJobs(page: PageRequest, status: JobStatus | undefined) {
    return jobs.list(this.db, page, status);
  }
  retainJobBlob(jobId: string, facts: BlobFacts) {
    return jobs.retainBlob(this.db, jobId, facts);
  }

  // ---- reconstructions, sub-models and sealed snapshots (2.7, 2.8, 2.10, 3.5) ----

  getReconstruction(reconId: string) {
    return reconstructions.get(this.db, reconId);
  }
  sealSnapshot(input: SealInput) {
    return snapshots.seal(this.db, input);
  }
  snapshotSeqs(reconId: string) {
    return snapshots.seqs(this.db, reconId);
  }
  largestSnapshot(reconId: string) {
    return snapshots.largest(this.db, reconId);
  }
  snapshotsSealedBy(reconId: string, jobId: string) {
    return snapshots.sealedBy(this.db, reconId, jobId);
  }
  snapshotFile(reconId: string, seq: number, idx: number | null, name: string) {
    return snapshots.file(this.db, reconId, seq, idx, name);
  }
  hasSnapshot(reconId: string, seq: number, idx: number | null) {
    return snapshots.has(this.db, reconId, seq, idx);
  }
  listSubmodels(reconId: string, page: PageRequest) {
    return snapshots.listSubmodels(this.db, reconId, page);
  }
  getSubmodel(submodelId: string) {
    return snapshots.getSubmodel(this.db, submodelId);
  }
  putReconFile(reconId: string, name: string, blob: { sha: string; size: number }) {
    return reconstructions.putFile(this.db, reconId, name, blob);
  }
  reconFile(reconId: string, name: string) {
    return reconstructions.file(this.db, reconId, name);
  }

  // ---- stage artifacts (2.11, 4.8, 4.9, 4.10) ----

  getArtifact(artifactId: string) {
    return artifacts.get(this.db, artifactId);
  }
  listArtifacts(owner: { job_id: string } | { recon_id: string }, filter: ArtifactFilter, page: PageRequest) {
    return artifacts.list(this.db, owner, filter, page);
  }
  latestArtifact(kind: string, owner: { dataset_id: string } | { job_id: string }) {
    return artifacts.latest(this.db, kind, owner);
  }
  snapshotArtifact(reconId: string, seq: number, idx: number | null) {
    return snapshots.artifact(this.db, reconId, seq, idx);
  }

  // ---- alarm: upload expiry and R2 garbage ----

  override async alarm(): Promise<void> {
    this.expireUploads();
    await garbage.collect(this.ctx, this.env.BLOBS);
  }

  private expireUploads(): void {
    uploads.expire(this.db);
  }
}

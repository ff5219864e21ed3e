/**
 * @module Localizing an image against a reconstruction (spec 4.13 localize, capability
 * `localize.from_memory`; 2.13 LocalizationRequest / LocalizationResult): checked before anything
 * is created (404 unknown reconstruction, 422 a blob_sha the tenant does not store or that is not
 * an image, 409 nothing sealed yet or the snapshot's features gone), then a job on the
 * reconstruction with one `relocalize` task (2.9) that a runner computes
 * (browser-runtime/runner/executors/relocalize.ts). Its input artifacts are the largest sealed
 * snapshot (`snapshot`) and the features its mapper read (`features`), from which the runner gives
 * each 3D point a descriptor; the query is a blob the job holds and may read.
 */
import { FEATURES_KIND } from "../../protocol/wire/features";
import { POINT_DESCRIPTORS_FILE } from "../../protocol/wire/point-descriptors";
import type { JobAccepted, LocalizationQuery, LocalizationRequest, RelocalizeTaskParams, StageArtifact } from "../../protocol";
import { conflict, notFound, validation } from "../errors";
import { artifactResource } from "./artifacts";
import { requireCapability } from "./capabilities";
import { producerDataset } from "./exports";
import { submitJob } from "./jobs";
import { reconstructionOf } from "./snapshots";
import { jobStore, tenantStore } from "./stores";

/** The query image as the tenant stores it: 422 `unknown_blob` when it does not, `not_an_image` when no image header was read. */
export async function queryBlob(env: Env, tenantId: string, sha: string): Promise<LocalizationQuery> {
  const blob = await tenantStore(env, tenantId).getBlob(sha);
  if (!blob) {
    throw validation("unknown blob_sha: finalize an upload of the query image first (4.3)", [
      { path: "blob_sha", message: `no finalized upload with blob_sha ${sha}`, code: "unknown_blob" },
    ]);
  }
  if (blob.width === null || blob.height === null) {
    throw validation("the blob is not an image this service reads (no JPEG, PNG, WebP, ... header)", [
      { path: "blob_sha", message: `blob ${sha} is not an image`, code: "not_an_image" },
    ]);
  }
  return { blob_sha: sha, byte_size: blob.size, width: blob.width, height: blob.height, focal_length_35mm: blob.focal_length_35mm };
}

/**
 * The reconstruction's largest sealed snapshot (most registered images) as a localization's input
 * artifacts: `snapshot`, and when it was sealed without its points' descriptors, `features`, those
 * its images were mapped from: the mapping job's own extraction, else the features it was given,
 * else the dataset's latest.
 */
export async function localizationInputs(
  env: Env,
  tenantId: string,
  reconId: string,
): Promise<{ seq: number; snapshot: StageArtifact; input_artifacts: Record<string, StageArtifact> }> {
  const tenant = tenantStore(env, tenantId);
  const seq = await tenant.largestSnapshot(reconId);
  if (seq === null)
    throw conflict(`reconstruction ${reconId} has no sealed snapshot yet: localize against it once snapshot_available was announced`);
  const root = await tenant.snapshotArtifact(reconId, seq, null);
  if (!root) throw notFound(`snapshot ${seq}`);
  const snapshot = artifactResource(root);
  if (snapshot.files.some((f) => f.path === POINT_DESCRIPTORS_FILE)) return { seq, snapshot, input_artifacts: { snapshot } };
  const given = async () => {
    const id = await jobStore(env, tenantId, root.job_id).inputArtifactId("features");
    return id ? tenant.getArtifact(id) : null;
  };
  // The dataset's latest features are the last resort: the runner uses an image's only when its keypoints are the mapper's (same count).
  const ofDataset = async () => (root.dataset_id ? tenant.latestArtifact(FEATURES_KIND, { dataset_id: root.dataset_id }) : null);
  const features = (await tenant.latestArtifact(FEATURES_KIND, { job_id: root.job_id })) ?? (await given()) ?? (await ofDataset());
  if (!features)
    throw conflict(
      `the features snapshot ${seq} was mapped from are no longer stored, so its points have no descriptors to match: reconstruct again`,
    );
  return { seq, snapshot, input_artifacts: { snapshot, features: artifactResource(features) } };
}

export async function submitLocalize(env: Env, tenantId: string, reconId: string, body: LocalizationRequest): Promise<JobAccepted> {
  requireCapability(env, "localize.from_memory");
  const recon = await reconstructionOf(env, tenantId, reconId);
  const query = await queryBlob(env, tenantId, body.blob_sha);
  const { seq, snapshot, input_artifacts } = await localizationInputs(env, tenantId, reconId);
  const params: RelocalizeTaskParams = { relocalize: { query, sift: body.sift ?? {}, recon_id: reconId, seq } };
  return submitJob(env, {
    tenantId,
    projectId: recon.project_id,
    dataset: await producerDataset(env, tenantId, snapshot),
    recipe: "localize",
    stages: [{ kind: "relocalize", params }],
    input_artifacts,
    input_blobs: [{ blob_sha: query.blob_sha, byte_size: query.byte_size }],
    recon: { recon_id: reconId },
  });
}

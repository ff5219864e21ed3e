/**
 * @module One-shot requests (spec 4.15): image bytes in, the answer in the same response, no row
 * created. The Worker cannot run SIFT on a photo within its memory, so a runner computes the
 * answer while the request waits: the bytes are written to R2 beside a one-shot job (the
 * "temporary file", `t/<tenant>/oneshot/<job>/<sha>`), and the job, a JobStore never indexed in
 * the tenant (no job, blob, cache or artifact row), offers its one task to the tenant's runners
 * through the dispatcher like any other. The request polls that job; once the task is done it
 * reads the answer, then purges the job object and deletes every R2 object of the job, whatever
 * the outcome; should the Worker die before that, the job object does so itself once no request
 * can still wait for it (its alarm, SVC_ONESHOT_TIMEOUT_SECONDS + 10 s after creation). When no live runner computes the task kind (none asked for work within the last
 * minute), none leases it within SVC_ONESHOT_LEASE_WAIT_SECONDS, or it is not done within
 * SVC_ONESHOT_TIMEOUT_SECONDS, the answer is 503 with Retry-After.
 */
import { ulid } from "../storage/ids";
import { type JobPlan, ONESHOT_RECIPE, type TaskRow, oneshotKey } from "../storage/job-rows";
import type { DatasetSnapshot, StageArtifact, TaskKind, TaskOutputs } from "../../protocol";
import { readConfig } from "../config";
import { ApiError, validation } from "../errors";
import { SNIFF_BYTES, blobFacts, sha256Hex } from "./blobs";
import { STAGE_PHASE, taskPlan } from "./jobs";
import { hashJson, runtimeVersions, rvIdOf } from "./runtime";
import { liveRunnerServes } from "./runners";
import { jobStore } from "./stores";
import type { LocalizationQuery } from "../../protocol";

/** How often the request looks at its job. */
const POLL_MS = 200;
/** What Retry-After says when no runner answered. */
const RETRY_AFTER_SECONDS = 10;

const unavailable = (detail: string) => new ApiError(503, "engine_unavailable", detail, {}, { "Retry-After": String(RETRY_AFTER_SECONDS) });

/** The request's image: its SHA-256 and what its header says; 422 `not_an_image` when no image header is read. */
export async function oneshotImage(
  bytes: Uint8Array,
  contentType: string | null,
): Promise<LocalizationQuery & { media_type: string | null }> {
  const sha = await sha256Hex(bytes);
  const facts = await blobFacts(bytes.subarray(0, SNIFF_BYTES), "", sha, bytes.byteLength, contentType);
  if (facts.width === null || facts.height === null) {
    throw validation("the body is not an image this service reads (JPEG, PNG, WebP, ...)", [
      { path: "body", message: "no image header", code: "not_an_image" },
    ]);
  }
  return {
    blob_sha: sha,
    byte_size: bytes.byteLength,
    width: facts.width,
    height: facts.height,
    focal_length_35mm: facts.focal_length_35mm,
    media_type: facts.media_type,
  };
}

export interface OneshotWork {
  tenantId: string;
  projectId: string;
  kind: TaskKind;
  params: Record<string, unknown>;
  image: LocalizationQuery & { media_type: string | null };
  bytes: Uint8Array;
  dataset: DatasetSnapshot | null;
  input_artifacts: Record<string, StageArtifact>;
}

/**
 * Runs one task on a runner within the request and answers its outputs with `read`, which may
 * fetch the job's own blobs (`oneshotKey`) before they are deleted.
 */
export async function runOneshot<T>(env: Env, w: OneshotWork, read: (outputs: TaskOutputs, jobId: string) => Promise<T>): Promise<T> {
  const config = readConfig(env);
  const rvId = rvIdOf(runtimeVersions(env));
  if (!(await liveRunnerServes(env, w.tenantId, w.kind, rvId)))
    throw unavailable(
      `no runner that computes '${w.kind}' for this service's build is connected: start one (npm run runner, or open the site) and retry`,
    );

  const jobId = ulid();
  const store = jobStore(env, w.tenantId, jobId);
  await env.BLOBS.put(oneshotKey(w.tenantId, jobId, w.image.blob_sha), w.bytes, {
    httpMetadata: w.image.media_type ? { contentType: w.image.media_type } : undefined,
  });
  try {
    const task = taskPlan({ kind: w.kind, phase: STAGE_PHASE[w.kind]!, params: w.params, inputs_hash: hashJson({ oneshot: jobId }), rvId });
    const plan: JobPlan = {
      job_id: jobId,
      tenant_id: w.tenantId,
      project_id: w.projectId,
      recipe: ONESHOT_RECIPE,
      recon_id: null,
      pool_opt_in: false,
      created_at: new Date().toISOString(),
      dataset: w.dataset,
      input_artifacts: w.input_artifacts,
      input_blobs: [{ blob_sha: w.image.blob_sha, byte_size: w.image.byte_size }],
      tasks: [task],
      adopted_snapshot: null,
    };
    await store.create(plan);
    const start = Date.now();
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      // (Cast: RPC typing cannot express the free-form members of TaskOutputs.)
      const t = ((await store.detail()) as { tasks: TaskRow[] } | null)?.tasks[0];
      // Discarded by its own alarm (past its deadline, as for a request whose Worker died): nothing will answer.
      if (!t) throw unavailable("the one-shot job is gone: it outlived its deadline; retry");
      if (t?.status === "succeeded" && t.outputs_ref) return await read(t.outputs_ref, jobId);
      if (t?.status === "failed") {
        throw validation(`the runner could not compute the answer: ${t.error_class ?? "error"}: ${t.error_message ?? ""}`.trim(), [
          { path: "body", message: t.error_message ?? "the task failed", code: t.error_class ?? "task_failed" },
        ]);
      }
      const waited = Date.now() - start;
      if (t?.status === "pending" && waited > config.oneshotLeaseWaitMs)
        throw unavailable(`no runner took the request within ${config.oneshotLeaseWaitMs / 1000} s: the runners are busy; retry`);
      if (waited > config.oneshotTimeoutMs)
        throw unavailable(`the runner did not answer within ${config.oneshotTimeoutMs / 1000} s; retry`);
    }
  } finally {
    // Nothing stays: the job object is emptied (a late runner request finds no job) and its bytes deleted.
    await store.discardOneshot();
  }
}

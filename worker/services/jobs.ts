/**
 * @module Job submission (spec 4.6, 4.7, 3.2.1) and the Job/Task resources (2.9). A submission
 * freezes the dataset as it is now, plans the task chain with each task's cache key, asks the
 * tenant for cache hits and then creates the job's JobStore.
 */
import { ulid } from "ulid";
import type { DatasetSnapshot, InputArtifacts, Job, JobAccepted, JobDetail, Phase, PipelineKind, PipelineSpec, TaskKind, TaskOutputs } from "../../protocol";
import { validation } from "../errors";
import type { JobPlan, JobRow, TaskPlan, TaskRow } from "../storage/job-store";
import type { Outcome } from "../storage/outcome";
import type { AdoptedSnapshot, DatasetRow } from "../storage/tenant-rows";
import { requireCapability } from "./capabilities";
import { cacheKeyOf, hashJson, runtimeVersions, rvIdOf } from "./runtime";
import { jobStore, tenantStore, unwrap } from "./stores";
import type { z } from "zod";

/** The phase the service reports started and completed for each core task (6.3). */
const STAGE_PHASE: Partial<Record<TaskKind, Phase>> = {
  extract: "feature_extraction",
  match: "matching",
  verify: "geometric_verification",
};
/** A map task's phase follows its pipeline kind; its sub-phases (init, ba, ...) come from the runner. */
const MAP_PHASE: Record<PipelineKind, Phase> = {
  incremental: "incremental_register",
  global: "global_positioning",
  hierarchical: "hierarchical_merge",
  spherical: "spherical",
};

/** One stage of a job: its kind, its service-owned phase and the normalised specs it runs with. */
export interface Stage {
  kind: TaskKind;
  params: Record<string, unknown>;
  /** For a map stage: the pipeline kind, which names its phase. */
  map_kind?: PipelineKind;
}

export interface Submission {
  tenantId: string;
  dataset: DatasetRow;
  recipe: string;
  /** The stages in order; each depends on the one before (4.7 chains them). */
  stages: Stage[];
  /** Capabilities the submission needs (1.2); checked once the inputs are known to be valid. */
  capabilities: string[];
  input_artifacts: z.infer<typeof InputArtifacts>;
  /**
   * Roles a single-stage job cannot run without (4.6 rule 4): a `matches` job reads an earlier
   * job's features, a `verify` job its features and matches.
   */
  required_roles?: string[];
  /** A pipeline's spec: pipelines create (or reuse) a Reconstruction (2.7). */
  pipeline: PipelineSpec | null;
}

export async function submitJob(env: Env, s: Submission): Promise<JobAccepted> {
  const tenant = tenantStore(env, s.tenantId);
  const [images, project] = await Promise.all([tenant.allImages(s.dataset.dataset_id), tenant.getProject(s.dataset.project_id)]);
  if (images.length === 0) {
    throw validation("the dataset has no registered images: register images before submitting a stage (7)", [
      { path: "dataset_id", message: "no registered images", code: "empty_dataset" },
    ]);
  }
  for (const name of s.capabilities) requireCapability(env, name);
  const roles = Object.keys(s.input_artifacts);
  const absent = (s.required_roles ?? []).filter((r) => !roles.includes(r));
  if (absent.length > 0) {
    throw validation(`this stage reads earlier outputs: name them in input_artifacts (${absent.join(", ")}), or run the pipeline`, absent.map((r) => ({ path: `input_artifacts.${r}`, message: `required: the '${r}' artifact of an earlier job`, code: "required" })));
  }
  if (roles.length > 0) {
    // Stage artifacts are not stored by this deployment yet, so no reference can resolve (2.11).
    throw validation("input_artifacts do not resolve: no such artifact in this tenant", roles.map((r) => ({ path: `input_artifacts.${r}`, message: "unknown artifact", code: "unknown_artifact" })));
  }

  const dataset: DatasetSnapshot = {
    dataset_id: s.dataset.dataset_id,
    manifest_hash: s.dataset.manifest_hash,
    camera_model: s.dataset.camera_model,
    intrinsics_mode: s.dataset.intrinsics_mode,
    is_spherical: s.dataset.is_spherical,
    respect_exif_orientation: s.dataset.respect_exif_orientation,
    rig_config: s.dataset.rig_config_text ? JSON.parse(s.dataset.rig_config_text) : null,
    images: images.map((i) => ({
      image_id: i.image_id,
      name: i.name,
      content_sha: i.content_sha,
      byte_size: i.byte_size,
      width: i.width,
      height: i.height,
      media_type: i.media_type,
    })),
  };
  // The dataset as a stage input: its manifest and camera settings, not its ids (2.4).
  const { dataset_id: _id, images: _images, ...settings } = dataset;
  const datasetHash = hashJson(settings);
  const rvId = rvIdOf(runtimeVersions(env));

  const tasks: TaskPlan[] = [];
  for (const stage of s.stages) {
    const upstream = tasks.at(-1);
    const inputs_hash = hashJson({ dataset: datasetHash, upstream: upstream?.cache_key ?? null });
    const params_hash = hashJson(stage.params);
    const phase = stage.kind === "map" ? MAP_PHASE[stage.map_kind!] : STAGE_PHASE[stage.kind]!;
    tasks.push({
      task_id: ulid(),
      kind: stage.kind,
      phase,
      depends_on: upstream ? [upstream.task_id] : [],
      params: stage.params,
      inputs_hash,
      params_hash,
      rv_id: rvId,
      cache_key: cacheKeyOf({ kind: stage.kind, inputs_hash, params_hash, rv_id: rvId }),
      cached: null,
    });
  }

  const job: JobRow = {
    job_id: ulid(),
    tenant_id: s.tenantId,
    project_id: s.dataset.project_id,
    recipe: s.recipe,
    status: "pending",
    cancel_requested: false,
    cancel_force: false,
    created_at: new Date().toISOString(),
    started_at: null,
    finished_at: null,
    error_class: null,
    error_message: null,
    recon_id: null,
  };
  const paramsHash = hashJson(s.stages.map((st) => st.params));
  // (Cast: RPC typing cannot express the free-form members of TaskOutputs.)
  const { hits, recon_id, adopted } = unwrap<{ hits: Record<string, TaskOutputs>; recon_id: string | null; adopted: AdoptedSnapshot | null }>(
    (await tenant.registerJob({
      job,
      input_shas: [...new Set(images.map((i) => i.content_sha))],
      cache_keys: tasks.map((t) => t.cache_key),
      recon: s.pipeline
        ? { dataset_id: dataset.dataset_id, dataset_snapshot_hash: datasetHash, params_hash: paramsHash, rv_id: rvId, spec_json: JSON.stringify(s.pipeline) }
        : null,
    })) as Outcome<{ hits: Record<string, TaskOutputs>; recon_id: string | null; adopted: AdoptedSnapshot | null }>,
  );
  const plan: JobPlan = {
    ...job,
    recon_id,
    pool_opt_in: project?.pool_opt_in ?? false,
    dataset,
    input_artifacts: {},
    tasks: tasks.map((t) => ({ ...t, cached: hits[t.cache_key] ?? null })),
    adopted_snapshot: adopted,
  };
  try {
    await jobStore(env, s.tenantId, job.job_id).create(plan);
  } catch (err) {
    await tenant.forgetJob(job.job_id);
    throw err;
  }
  return { job_id: job.job_id, task_ids: tasks.map((t) => t.task_id), recon_id };
}

// ---- resources (2.9) ----

export function jobLinks(jobId: string, reconId: string | null) {
  const self = `/v1/jobs/${jobId}`;
  return {
    self: { href: self },
    events: { href: `${self}/events` },
    ws: { href: `/ws/v1/jobs/${jobId}` },
    progress: { href: `${self}/progress` },
    ...(reconId ? { reconstruction: { href: `/v1/reconstructions/${reconId}` } } : {}),
  };
}

export const jobResource = (r: JobRow): Job => ({ ...r, _links: jobLinks(r.job_id, r.recon_id) });

export const jobDetailResource = (d: { job: JobRow; tasks: TaskRow[] }): JobDetail => ({ ...jobResource(d.job), tasks: d.tasks });

/**
 * @module Job submission (spec 4.6, 4.7, 3.2.1) and the Job/Task resources (2.9). A stage or
 * pipeline submission checks its dataset, capabilities and input artifacts (2.11) and freezes the
 * dataset as it is now; every submission then plans its task chain with each task's cache key,
 * asks the tenant for cache hits and creates the job's JobStore.
 */
import { ulid } from "../storage/ids";
import type {
  DatasetSnapshot,
  InputArtifacts,
  Job,
  JobAccepted,
  JobDetail,
  Phase,
  PipelineKind,
  PipelineSpec,
  StageArtifact,
  TaskKind,
  TaskOutputs,
} from "../../protocol";
import { notFound, validation } from "../errors";
import type { AdoptedSnapshot, JobPlan, JobRow, TaskPlan, TaskRow } from "../storage/job-rows";
import type { Outcome } from "../storage/outcome";
import type { BlobFacts, DatasetRow, ImageRow } from "../storage/tenant-rows";
import { type RoleNeeds, resolveInputArtifacts, withDatasetOutputs } from "./input-artifacts";
import { requireCapability } from "./capabilities";
import { applyBackendRules, routedSpecsOf } from "./backend";
import { explicitPairList } from "./explicit-pairs";
import { planItems, plannedItems, reusable } from "./shards";
import { cacheKeyOf, hashJson, runtimeVersions, rvIdOf } from "./runtime";
import { jobStore, tenantStore, unwrap } from "./stores";
import type { z } from "zod";

/** The phase the service reports started and completed for each core task (6.3). */
export const STAGE_PHASE: Partial<Record<TaskKind, Phase>> = {
  extract: "feature_extraction",
  match: "matching",
  verify: "geometric_verification",
  export: "export",
  convert_artifact: "artifact_conversion",
  artifact_import: "artifact_import",
  projection: "panorama",
  to_cubemap: "panorama",
  vlad: "vlad_index",
  relocalize: "relocalize",
  georegister: "georegister",
  merge: "hierarchical_merge",
  oneshot_features: "feature_extraction",
  import_kapture: "artifact_import",
  frame_extract: "artifact_import",
};
/** A map task's phase follows its pipeline kind; its sub-phases (init, ba, ...) come from the runner. */
const MAP_PHASE: Record<PipelineKind, Phase> = {
  incremental: "incremental_register",
  global: "global_positioning",
  // Its shards map clusters (the service counts them); the merge shard reports `hierarchical_merge`.
  hierarchical: "hierarchical_cluster",
  spherical: "spherical",
};

/** One stage of a job: its kind, its service-owned phase and the normalised specs it runs with. */
export interface Stage {
  kind: TaskKind;
  params: Record<string, unknown>;
  /** For a map stage: the pipeline kind, which names its phase. */
  map_kind?: PipelineKind;
  /**
   * Outputs that belong to this job (a dataset it registers): the job's id enters the task's
   * inputs, so its cache key is its own and no other job's result is reused for it (3.2.1).
   */
  own_outputs?: boolean;
  /**
   * The stage reads the dataset's images and nothing upstream (a similarity index, 4.11): its cache
   * key depends on the dataset alone, wherever it sits in a chain (`datasetStageCacheKey`).
   */
  dataset_only?: boolean;
  /** For a match stage of explicit pairs: the list, checked at submission (indices into the dataset's images, i < j). */
  pair_list?: [number, number][];
}

/** A job to create, its inputs already checked and frozen. */
export interface Submission {
  tenantId: string;
  projectId: string;
  /** The dataset as the job reads it; null for work on an artifact that belongs to no dataset. */
  dataset: DatasetSnapshot | null;
  recipe: string;
  /** The stages in order; each depends on the one before (4.7 chains them). */
  stages: Stage[];
  /** Resolved input artifacts by role (2.11): in every lease, and part of the first task's inputs. */
  input_artifacts: Record<string, StageArtifact>;
  /** Blobs of the tenant the job reads besides its dataset and input artifacts (a query image): held by the job, readable by its leases. */
  input_blobs?: { blob_sha: string; byte_size: number }[];
  /** A pipeline creates (or reuses) its Reconstruction (2.7); work on a reconstruction (an export) names it. */
  recon: { pipeline: PipelineSpec } | { recon_id: string } | null;
  /** Outputs of a job done at submission (an artifact import, 4.10): its one task is born succeeded. */
  imported?: TaskOutputs;
  /** Blobs the service itself wrote for `imported` (bytes already in R2): stored and held by the job. */
  made_blobs?: BlobFacts[];
  /** The backend action whose `:run` submits the job (4.16): its tasks are reported with kind `backend_action`. */
  action_id?: string;
}

/** A stage or pipeline on a dataset (4.6, 4.7), as its route read it. */
export interface DatasetSubmission {
  tenantId: string;
  dataset: DatasetRow;
  recipe: string;
  stages: Stage[];
  /** Capabilities the submission needs (1.2); checked once the dataset is known to have images. */
  capabilities: string[];
  input_artifacts: z.infer<typeof InputArtifacts>;
  /** The roles the stages read and those they cannot run without (4.6 rule 4). */
  roles: RoleNeeds;
  /** A pipeline's spec: pipelines create (or reuse) a Reconstruction (2.7). */
  pipeline: PipelineSpec | null;
  /** Artifacts the service chose for the job by role (the similarity index of retrieval pairs), beside `input_artifacts`. */
  service_artifacts?: Record<string, StageArtifact>;
  /** Where a stage's params key sits in the request body when it is not the key itself (a stage route's `spec`). */
  spec_paths?: Record<string, string>;
  /** Blobs of the tenant the job reads besides its dataset and artifacts (an uploaded vocabulary tree). */
  input_blobs?: Submission["input_blobs"];
  action_id?: Submission["action_id"];
}

/**
 * Checks a stage submission before anything is created: the dataset has images (7: 422), the
 * capabilities are advertised (501), the input artifacts resolve (2.11: 422); then freezes the
 * dataset and submits.
 */
export async function submitOnDataset(env: Env, s: DatasetSubmission): Promise<JobAccepted> {
  const tenant = tenantStore(env, s.tenantId);
  const images = await tenant.allImages(s.dataset.dataset_id);
  if (images.length === 0) {
    throw validation("the dataset has no registered images: register images before submitting a stage (7)", [
      { path: "dataset_id", message: "no registered images", code: "empty_dataset" },
    ]);
  }
  for (const name of s.capabilities) requireCapability(env, name);
  // Explicit pairs are read and checked now, against the images the job will read (4.6 rule 5): a bad list never creates a job.
  const names = images.map((im) => im.name);
  const lists = await Promise.all(s.stages.map((st) => (st.kind === "match" ? explicitPairList(env, s.tenantId, names, st.params) : null)));
  await applyBackendRules(env, s.dataset.project_id, routedSpecsOf(s.stages, s.spec_paths));
  const refs = await withDatasetOutputs(env, s.tenantId, s.input_artifacts, s.roles, s.dataset);
  const input_artifacts = { ...(await resolveInputArtifacts(env, s.tenantId, refs, s.roles, s.dataset)), ...s.service_artifacts };
  const dataset = frozenDataset(s.dataset, images, unwrap(await tenant.datasetPosePriors(s.dataset.dataset_id)));
  checkPairPositions(dataset, s.stages);
  return submitJob(env, {
    tenantId: s.tenantId,
    projectId: s.dataset.project_id,
    dataset,
    recipe: s.recipe,
    stages: s.stages.map((st, i) => (lists[i] ? { ...st, pair_list: lists[i].pairs } : st)),
    input_artifacts,
    input_blobs: [...(s.input_blobs ?? []), ...lists.flatMap((l) => (l?.blob ? [l.blob] : []))],
    recon: s.pipeline ? { pipeline: s.pipeline } : null,
    action_id: s.action_id,
  });
}

/**
 * The dataset as a job reads it: its settings and manifest now, every image with its content (2.4),
 * its EXIF GPS and its pose prior (4.12; JSON text by image id).
 */
export function frozenDataset(row: DatasetRow, images: ImageRow[], priors: Record<string, string> = {}): DatasetSnapshot {
  return {
    dataset_id: row.dataset_id,
    manifest_hash: row.manifest_hash,
    camera_model: row.camera_model,
    intrinsics_mode: row.intrinsics_mode,
    is_spherical: row.is_spherical,
    respect_exif_orientation: row.respect_exif_orientation,
    rig_config: row.rig_config_text ? JSON.parse(row.rig_config_text) : null,
    images: images.map((i) => ({
      image_id: i.image_id,
      name: i.name,
      content_sha: i.content_sha,
      byte_size: i.byte_size,
      width: i.width,
      height: i.height,
      media_type: i.media_type,
      focal_length_35mm: i.focal_length_35mm,
      gps: i.gps_json ? JSON.parse(i.gps_json) : null,
      pose_prior: priors[i.image_id] ? JSON.parse(priors[i.image_id]!) : null,
    })),
  };
}

/**
 * The pose priors and GPS positions of the dataset's images (4.12, EXIF GPS), as a digest; null when
 * no image has either. They enter the cache key of the tasks they influence (3.2 rule 1) and the
 * identity of a pipeline's reconstruction (2.7), so changing them never reuses a stale result.
 */
function priorsDigest(dataset: DatasetSnapshot | null): string | null {
  const known = (dataset?.images ?? []).filter((i) => i.gps || i.pose_prior).map((i) => [i.name, i.gps, i.pose_prior]);
  return known.length > 0 ? hashJson(known) : null;
}

/** Mapping uses priors (soft constraints, 4.12); pairs by position use them, sequential pairs follow their timestamps. */
function readsPriors(stage: Stage): boolean {
  if (stage.kind === "map") return true;
  const strategy = (stage.params.pairs as { strategy?: string } | undefined)?.strategy;
  return stage.kind === "match" && ["spatial", "from_poses", "sequential"].includes(strategy ?? "");
}

/**
 * Spatial pairs need at least two images placed by pose priors or GPS, from-poses pairs two with
 * pose priors (2.12): else 422 before any job is created, rather than a match of no pairs.
 */
function checkPairPositions(dataset: DatasetSnapshot, stages: Stage[]): void {
  for (const stage of stages) {
    const strategy = stage.kind === "match" ? (stage.params.pairs as { strategy?: string } | undefined)?.strategy : undefined;
    if (strategy !== "spatial" && strategy !== "from_poses") continue;
    const priors = dataset.images.filter((i) => i.pose_prior).length;
    const gps = dataset.images.filter((i) => i.pose_prior?.gps ?? i.gps).length;
    if (priors >= 2 || (strategy === "spatial" && gps >= 2)) continue;
    const needs = strategy === "spatial" ? "GPS positions (EXIF or a pose prior's gps) or pose priors" : "pose priors";
    throw validation(`${strategy} pairs need ${needs} for at least two images of the dataset (2.12)`, [
      { path: "pairs.strategy", message: `${priors} images have a pose prior, ${gps} a GPS position`, code: "positions_missing" },
    ]);
  }
}

/** What identifies an artifact as a task input: its kind, format and files' contents. */
const artifactDigest = (a: StageArtifact) =>
  hashJson({ kind: a.kind, artifact_format: a.artifact_format, files: a.files.map((f) => [f.path, f.blob_sha]) });

/** The dataset as a stage input: its manifest and camera settings, not its ids (2.4). */
const datasetHashOf = (dataset: DatasetSnapshot | null) =>
  hashJson(dataset && (({ dataset_id: _id, images: _images, ...rest }) => rest)(dataset));

/** The inputs of a stage that reads the dataset alone (`Stage.dataset_only`). */
const datasetOnlyInputs = (datasetHash: string) => hashJson({ dataset: datasetHash, upstream: null });

/**
 * The cache key a `dataset_only` stage has on this dataset in any job (3.2.1): how the service
 * finds the result such a stage computed (the similarity index of a manifest, 4.11 rule 4).
 */
export function datasetStageCacheKey(env: Env, dataset: DatasetSnapshot, stage: Stage): string {
  return cacheKeyOf({
    kind: stage.kind,
    inputs_hash: datasetOnlyInputs(datasetHashOf(dataset)),
    params_hash: hashJson(stage.params),
    rv_id: rvIdOf(runtimeVersions(env)),
  });
}

/** A task of a job's plan: its cache key from what it reads, its parameters and the runtime that computes it (3.2 rule 1). */
export function taskPlan(t: {
  kind: TaskKind;
  phase: TaskPlan["phase"];
  params: TaskPlan["params"];
  inputs_hash: string;
  rvId: string;
  depends_on?: string[];
}): TaskPlan {
  const params_hash = hashJson(t.params);
  return {
    task_id: ulid(),
    kind: t.kind,
    phase: t.phase,
    depends_on: t.depends_on ?? [],
    params: t.params,
    inputs_hash: t.inputs_hash,
    params_hash,
    rv_id: t.rvId,
    cache_key: cacheKeyOf({ kind: t.kind, inputs_hash: t.inputs_hash, params_hash, rv_id: t.rvId }),
    cached: null,
  };
}

/**
 * The task plans of a chain of stages, each depending on the one before, with the cache keys
 * their inputs give them (3.2 rule 1).
 */
function chainPlan(
  stages: Stage[],
  c: { datasetHash: string; artifactsHash: string | null; priors: string | null; jobId: string; rvId: string },
): TaskPlan[] {
  const tasks: TaskPlan[] = [];
  let artifactsFed = false;
  for (const stage of stages) {
    const upstream = tasks.at(-1);
    // The input artifacts feed the first task that reads more than the dataset; later ones inherit them through its cache key.
    const inputs_hash = stage.dataset_only
      ? datasetOnlyInputs(c.datasetHash)
      : hashJson({
          dataset: c.datasetHash,
          upstream: upstream?.cache_key ?? null,
          ...(c.artifactsHash && !artifactsFed ? { artifacts: c.artifactsHash } : {}),
          ...(c.priors && readsPriors(stage) ? { priors: c.priors } : {}),
          ...(stage.own_outputs ? { job: c.jobId } : {}),
        });
    artifactsFed ||= !stage.dataset_only;
    const phase = stage.kind === "map" ? MAP_PHASE[stage.map_kind!] : STAGE_PHASE[stage.kind]!;
    tasks.push(
      taskPlan({
        kind: stage.kind,
        phase,
        params: stage.params,
        inputs_hash,
        rvId: c.rvId,
        depends_on: upstream ? [upstream.task_id] : [],
      }),
    );
  }
  return tasks;
}

/**
 * The cache key the last of `stages` has when they run as a job on this dataset with no input
 * artifacts (3.2.1), stages that read priors left aside: how the service finds the result of a
 * chain it submits itself (the VLAD index after the default extraction, 4.11 rule 4).
 */
export function datasetChainCacheKey(env: Env, dataset: DatasetSnapshot, stages: Stage[]): string {
  const plan = chainPlan(stages, {
    datasetHash: datasetHashOf(dataset),
    artifactsHash: null,
    priors: null,
    jobId: "",
    rvId: rvIdOf(runtimeVersions(env)),
  });
  return plan.at(-1)!.cache_key;
}

export async function submitJob(env: Env, s: Submission): Promise<JobAccepted> {
  const tenant = tenantStore(env, s.tenantId);
  const datasetHash = datasetHashOf(s.dataset);
  const priors = priorsDigest(s.dataset);
  const inputs = Object.entries(s.input_artifacts);
  const artifactsHash = inputs.length > 0 ? hashJson(Object.fromEntries(inputs.map(([role, a]) => [role, artifactDigest(a)]))) : null;
  const rvId = rvIdOf(runtimeVersions(env));
  const jobId = ulid();

  const tasks = chainPlan(s.stages, { datasetHash, artifactsHash, priors, jobId, rvId });

  const job: JobRow = {
    job_id: jobId,
    tenant_id: s.tenantId,
    project_id: s.projectId,
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
  // A pipeline fed other input artifacts is another reconstruction (2.7).
  const stageParams = s.stages.map((st) => st.params);
  const paramsHash = hashJson(artifactsHash ? { stages: stageParams, artifacts: artifactsHash } : stageParams);
  // The job holds its inputs (and an import's files) until the artifacts that need them are recorded.
  const inputShas = [
    ...(s.dataset?.images.map((i) => i.content_sha) ?? []),
    ...[...Object.values(s.input_artifacts), ...(s.imported?.artifacts ?? [])].flatMap((a) => a.files.map((f) => f.blob_sha)),
    ...(s.input_blobs ?? []).map((b) => b.blob_sha),
  ];
  // Sharded stages (extract, match, verify): their content-keyed items, each reusable on its own.
  const chain = tasks.map((t, i) => ({ ...t, pair_list: s.stages[i]!.pair_list ?? null }));
  let items = s.imported ? tasks.map(() => null) : planItems(s.dataset, chain);
  type Registered = {
    hits: Record<string, TaskOutputs>;
    item_hits: Record<string, TaskOutputs>;
    recon_id: string | null;
    adopted: AdoptedSnapshot | null;
  };
  // (Cast: RPC typing cannot express the free-form members of TaskOutputs.)
  const { hits, item_hits, recon_id, adopted } = unwrap<Registered>(
    (await tenant.registerJob({
      job,
      input_shas: [...new Set(inputShas)].filter((sha) => !s.made_blobs?.some((b) => b.sha === sha)),
      made_blobs: s.made_blobs ?? [],
      // A job done at submission has nothing to reuse.
      cache_keys: s.imported ? [] : tasks.map((t) => t.cache_key),
      // A hierarchical map's items are its own work units, never reused (their shards grow with the job), as is a chosen pair list.
      item_keys: items.flatMap((list, i) => (tasks[i]!.kind === "map" ? [] : (list?.filter(reusable).map((it) => it.key) ?? []))),
      recon:
        s.recon && "pipeline" in s.recon
          ? {
              dataset_id: s.dataset!.dataset_id,
              dataset_snapshot_hash: priors ? hashJson({ dataset: datasetHash, priors }) : datasetHash,
              params_hash: paramsHash,
              rv_id: rvId,
              spec_json: JSON.stringify(s.recon.pipeline),
            }
          : s.recon,
    })) as Outcome<Registered>,
  );
  // A match task of pairs chosen on a runner reused whole never chooses its list again: the verify task after it covers every block.
  if (tasks.some((t, i) => hits[t.cache_key] && items[i]?.some((it) => !reusable(it))))
    items = planItems(
      s.dataset,
      chain.map((t) => ({ ...t, reused: Boolean(hits[t.cache_key]) })),
    );
  const project = await tenant.getProject(s.projectId);
  const plan: JobPlan = {
    ...job,
    recon_id,
    pool_opt_in: project?.pool_opt_in ?? false,
    dataset: s.dataset,
    input_artifacts: s.input_artifacts,
    input_blobs: s.input_blobs,
    tasks: tasks.map((t, i) => ({
      ...t,
      cached: hits[t.cache_key] ?? null,
      imported: s.imported ?? null,
      items: plannedItems(
        t.kind,
        items[i] ?? null,
        item_hits,
        t.kind === "verify" && items.slice(0, i).some((list) => list?.some((it) => !reusable(it))),
      ),
    })),
    adopted_snapshot: adopted,
    max_runtime_seconds: s.recon && "pipeline" in s.recon ? s.recon.pipeline.max_runtime_seconds : null,
    action_id: s.action_id ?? null,
  };
  try {
    await jobStore(env, s.tenantId, job.job_id).create(plan);
  } catch (err) {
    await tenant.forgetJob(job.job_id);
    throw err;
  }
  return { job_id: job.job_id, task_ids: tasks.map((t) => t.task_id), recon_id };
}

/**
 * The object of one of the tenant's jobs, or 404. Asking the tenant's index first means a request
 * for an absent job never reaches (and so never creates) a Durable Object of that name.
 */
export async function ownJob(env: Env, tenantId: string, jobId: string) {
  if (!(await tenantStore(env, tenantId).hasJob(jobId))) throw notFound("job");
  return jobStore(env, tenantId, jobId);
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

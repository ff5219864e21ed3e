/** @module The job store's records, as they cross the RPC boundary (spec 2.9, 3.2), and what it plans and tells the queues. */
import type { DatasetSnapshot, JobStatus, Phase, ShardItem, StageArtifact, TaskKind, TaskOutputs, TaskShards } from "../../protocol";

export interface JobRow {
  job_id: string;
  tenant_id: string;
  project_id: string;
  recipe: string;
  status: JobStatus;
  cancel_requested: boolean;
  cancel_force: boolean;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error_class: string | null;
  error_message: string | null;
  recon_id: string | null;
}

export interface TaskRow {
  task_id: string;
  job_id: string;
  kind: TaskKind;
  status: JobStatus;
  depends_on: string[];
  cache_key: string;
  inputs_hash: string;
  params_hash: string;
  rv_id: string;
  outputs_ref: TaskOutputs | null;
  cache_hit: boolean;
  attempts: number;
  started_at: string | null;
  finished_at: string | null;
  error_class: string | null;
  error_message: string | null;
  "x-shards"?: TaskShards | null;
  /** A backend action's task (kind `backend_action`, 4.16): the stage it runs. */
  "x-stage_kind"?: TaskKind;
}

/**
 * One content-keyed unit of a sharded task's work (runners.md "Shards"): reused from the
 * tenant's cache when its key already succeeded, else computed in the shard numbered `shard`.
 */
export interface PlannedItem {
  item: ShardItem;
  cached: TaskOutputs | null;
  shard: number | null;
  /** A listed match or verify block's pairs by image name (null: every pair of its groups), what weighs it. */
  pairs?: [string, string][] | null;
}

/** A task as planned by the submission service, with its cached outputs when its key already succeeded. */
export interface TaskPlan {
  task_id: string;
  kind: TaskKind;
  phase: Phase;
  depends_on: string[];
  params: Record<string, unknown>;
  inputs_hash: string;
  params_hash: string;
  rv_id: string;
  cache_key: string;
  cached: TaskOutputs | null;
  /** Outputs the service itself made at submission (an artifact import, 4.10): the task is born succeeded. */
  imported?: TaskOutputs | null;
  /** A sharded task's items, in order; absent for a task leased whole. */
  items?: PlannedItem[] | null;
}

/**
 * The recipe of a one-shot job (4.15): never indexed in the tenant, its blobs kept beside it in R2
 * (`oneshotKey`) rather than in the tenant's store, and purged once answered, or by its own alarm
 * once no request can still wait for it (a request whose Worker died).
 */
export const ONESHOT_RECIPE = "oneshot";
/** A one-shot job's bytes (4.15): the request's image and what its runner wrote, deleted with the answer. */
export const oneshotPrefix = (tenantId: string, jobId: string) => `t/${tenantId}/oneshot/${jobId}/`;
export const oneshotKey = (tenantId: string, jobId: string, sha: string) => `${oneshotPrefix(tenantId, jobId)}${sha}`;
/** How long past the longest a request waits (SVC_ONESHOT_TIMEOUT_SECONDS) a one-shot job left behind discards itself: time enough for its request to end it first. */
export const ONESHOT_ABANDONED_AFTER_MS = 10_000;

export interface JobPlan {
  job_id: string;
  tenant_id: string;
  project_id: string;
  recipe: string;
  recon_id: string | null;
  pool_opt_in: boolean;
  created_at: string;
  /** The dataset frozen at submission; null for work on an artifact that belongs to no dataset. */
  dataset: DatasetSnapshot | null;
  /** Resolved `input_artifacts` by role (2.11); every lease carries them, and their files are readable inputs. */
  input_artifacts: Record<string, StageArtifact>;
  /** Blobs of the tenant the job reads besides its dataset and input artifacts (a query image, 4.13 localize). */
  input_blobs?: { blob_sha: string; byte_size: number }[];
  tasks: TaskPlan[];
  /** The snapshot the reconstruction took from the cached last task, announced as that task's (TenantStore.registerJob). */
  adopted_snapshot: AdoptedSnapshot | null;
  /** A pipeline's `max_runtime_seconds` (2.12): counted from the job's start; null for no limit. */
  max_runtime_seconds?: number | null;
  /** The backend action whose `:run` submitted the job (4.16); null for any other job. */
  action_id?: string | null;
}

/** A snapshot a reconstruction took from a cached map task (TenantStore.registerJob). */
export interface AdoptedSnapshot {
  seq: number;
  summary: Record<string, unknown>;
}

/** Who is asking about a lease: a lease granted to a pool runner is usable only by pool runners, and vice versa. */
export interface LeaseScope {
  pool: boolean;
}

export interface LeaseHolder extends LeaseScope {
  runner_id: string;
  /** Who answers for the runner's results: its runner token in the pool, else the runner (runners.md "Trust"). */
  principal?: string;
}

/** A shard's result as the validation service sees it (runners.md "Trust"). */
export interface ShardResult {
  result_id: number;
  runner_id: string;
  principal: string;
  trusted: boolean;
  outputs: TaskOutputs;
}

/**
 * What completing a lease did: the result was recorded (`done`), the shard holds it until a
 * replica confirms it (`held`), it must first be compared with the shard's earlier results
 * (`compare`: the lease stays held until `judge`), or an untrusted result broke the shard's
 * structure and was discarded (`rejected`: the shard is queued again).
 */
export type Completion =
  | { state: "done" | "held"; task_id: string; runner_id: string }
  | { state: "compare"; task_id: string; runner_id: string; shard_id: string; result: ShardResult; others: ShardResult[] }
  | {
      state: "rejected";
      task_id: string;
      runner_id: string;
      /** Who answers for the result: the pool runner's token. */
      principal: string;
      shard_id: string;
      errors: { path: string; message: string; code: string }[];
    };

/** The validation service's decision on a compared shard result (services/validation.ts decides, judge applies). */
export interface Judgement {
  /** The verdict of each result compared: the one used (validated), those confirming it (agreed), wrong ones (rejected), or still open (candidate). */
  verdicts: { result_id: number; verdict: "validated" | "agreed" | "rejected" | "candidate" }[];
  /** The result whose outputs the shard takes; null: the shard waits for another result. */
  use: number | null;
  /** What the next result of a waiting shard must come from. */
  need: ShardNeed;
  /** Why, for the job's events (warnings). */
  warnings: string[];
}

/** What a shard lease's result is checked against (JobStore.shardContext). */
export interface ShardContext {
  kind: TaskKind;
  items: ShardItem[];
  images: { name: string; width: number | null; height: number | null }[];
  /** The `features/<name>` file of each image in the features input. */
  features: { name: string; blob_sha: string }[];
}

/** Who may compute a shard next: anyone; a runner of another principal than its candidates' (a replica); a trusted runner. */
export type ShardNeed = "any" | "replica" | "trusted";

/** Which of the job's tasks a dispatch queue should offer, and which to withdraw. */
export interface QueueEntry {
  tenant_id: string;
  job_id: string;
  task_id: string;
  project_id: string;
  kind: TaskKind;
  rv_id: string;
  /** Leases the entry can still give: a sharded task's pending shards, else 1. */
  units: number;
  /** Memory a runner needs for it (a map task's model), or 0. */
  min_memory: number;
  /** Routed to the WGSL provider (4.16): only a runner with a WebGPU adapter takes it. */
  needs_webgpu: boolean;
}

/** @module Job, Task, progress and the long-running-operation answer (spec 2.9, 3.1, 3.2, 4.8). */
import { z } from "zod";
import { ArtifactDescriptor, ArtifactFile } from "../artifacts";
import { JobStatus, Phase } from "../events";
import { Id, Links, Sha256, Timestamp } from "./common";
import { TaskKind } from "./task-kind";

export { TASK_KINDS, TaskKind } from "./task-kind";

/**
 * A task's result (`outputs_ref`, 2.9): the artifacts it produced, each file a blob the runner
 * uploaded under its lease, plus a small free-form `result` (e.g. a LocalizationResult, 2.13).
 */
export const TaskOutputs = z
  .object({
    artifacts: z.array(ArtifactDescriptor).max(64),
    result: z.record(z.string(), z.unknown()).nullable().default(null),
  })
  .meta({ id: "TaskOutputs" });
export type TaskOutputs = z.infer<typeof TaskOutputs>;

/** How a sharded task's work was spread (our extension, 2.0): shards done over total, and by which runner. */
export const TaskShards = z
  .object({
    total: z.number().int(),
    done: z.number().int(),
    items: z.number().int().describe("cacheable units: images to extract, pair blocks to match or verify"),
    items_cached: z.number().int(),
    by_runner: z.record(z.string(), z.number().int()).describe("shards completed by each runner (the runner whose result the task uses)"),
    validated: z
      .number()
      .int()
      .describe('shards whose result was confirmed by a second runner\'s, or decided by a trusted runner (runners.md "Trust")'),
    awaiting_validation: z.number().int().describe("shards holding an untrusted runner's result until another runner's confirms it"),
    checked_by: z.record(z.string(), z.number().int()).describe("results that confirmed another runner's, by runner"),
    rejected_by: z.record(z.string(), z.number().int()).describe("results discarded as wrong, by runner (its token is quarantined)"),
  })
  .meta({ id: "TaskShards" });
export type TaskShards = z.infer<typeof TaskShards>;

/**
 * One result a runner answered for a shard, with the digests of its files (our extension, 2.0): the
 * audit trail of runners.md "Trust", every result the service weighed, used or not.
 */
export const ShardResultRecord = z
  .object({
    result_id: z.number().int().describe("the job's results in the order they arrived"),
    task_id: Id,
    shard_index: z.number().int(),
    runner_id: z.string(),
    trusted: z.boolean().describe("a runner of the tenant's own key or the operator's token; false for a pool volunteer"),
    verdict: z
      .enum(["accepted", "unchecked", "candidate", "comparing", "validated", "agreed", "rejected", "refused"])
      .describe(
        "used by the task: `accepted` (a trusted runner's), `unchecked` (a volunteer's the sampling did not replicate), `validated` (confirmed by another principal, or a trusted runner's that decided); not used: `agreed` (confirmed a used one), `candidate` (held for a replica), `comparing` (being compared), `rejected` (disagreed with the decision, or its token was quarantined), `refused` (broke the shard's structure, or named files not uploaded: discarded)",
      ),
    created_at: Timestamp,
    files: z
      .array(ArtifactFile)
      .describe(
        "the result's files in its artifacts' order, each named by the SHA-256 of its bytes (checked at upload; a refused result may name blobs never uploaded)",
      ),
  })
  .meta({ id: "ShardResultRecord" });
export type ShardResultRecord = z.infer<typeof ShardResultRecord>;

export const Task = z
  .object({
    task_id: Id,
    job_id: Id,
    kind: TaskKind,
    "x-stage_kind": TaskKind.optional().describe(
      "a backend action's task (kind backend_action, 4.16 :run): the kind of the stage it runs, as the same route's job would name it",
    ),
    status: JobStatus,
    depends_on: z.array(Id).describe("tasks that must succeed before this one can be leased"),
    cache_key: Sha256,
    inputs_hash: Sha256,
    params_hash: Sha256,
    rv_id: Sha256,
    // A union, not `.nullable()`: the OpenAPI generator would make the TaskOutputs component itself nullable.
    outputs_ref: z.union([TaskOutputs, z.null()]),
    cache_hit: z.boolean().describe("true when the outputs were reused from an earlier task with the same cache_key (3.2.1)"),
    attempts: z.number().int().describe("how many times the task was leased"),
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable(),
    error_class: z.string().nullable(),
    error_message: z.string().nullable(),
    "x-shards": TaskShards.nullable().optional().describe("a sharded task: how its work was spread over runners"),
    "x-waiting_for": z
      .string()
      .optional()
      .describe("a task ready to be leased that no connected runner can compute: the runner it waits for"),
  })
  .meta({ id: "Task" });
export type Task = z.infer<typeof Task>;

const JobFields = {
  job_id: Id,
  tenant_id: z.string(),
  project_id: Id,
  recipe: z.string(),
  status: JobStatus,
  cancel_requested: z.boolean(),
  cancel_force: z.boolean(),
  created_at: Timestamp,
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
  error_class: z.string().nullable(),
  error_message: z.string().nullable(),
  recon_id: Id.nullable(),
  _links: Links,
};

export const Job = z.object(JobFields).meta({ id: "Job" });
export type Job = z.infer<typeof Job>;

export const JobDetail = z
  .object({
    ...JobFields,
    tasks: z.array(Task),
    "x-waiting_for": z
      .string()
      .nullable()
      .optional()
      .describe("what the job waits for when no connected runner can compute a task it is ready to run; null otherwise"),
  })
  .meta({ id: "JobDetail" });
export type JobDetail = z.infer<typeof JobDetail>;

export const JobAccepted = z.object({ job_id: Id, task_ids: z.array(Id), recon_id: Id.nullable() }).meta({ id: "JobAcceptedResponse" });
export type JobAccepted = z.infer<typeof JobAccepted>;

export const TaskProgress = z.object({
  task_id: Id,
  kind: TaskKind,
  "x-stage_kind": TaskKind.optional().describe("a backend action's task (kind backend_action): the kind of the stage it runs"),
  status: JobStatus,
  progress: z.number().min(0).max(1),
  latest_event_kind: z.string().nullable(),
  elapsed_seconds: z.number().nullable(),
  current: z.number().int().nullable(),
  total: z.number().int().nullable(),
});

export const JobProgress = z
  .object({
    job_id: Id,
    recipe: z.string(),
    status: JobStatus,
    progress: z.number().min(0).max(1),
    total_tasks: z.number().int(),
    completed_tasks: z.number().int(),
    task_counts: z.record(JobStatus, z.number().int()),
    current_task_id: Id.nullable(),
    current_task_kind: TaskKind.nullable(),
    current_phase: Phase.nullable(),
    latest_event_id: z.number().int().describe("the durable cursor shared with the SSE stream (Last-Event-ID)"),
    tasks: z.array(TaskProgress),
  })
  .meta({ id: "JobProgressOut" });
export type JobProgress = z.infer<typeof JobProgress>;

export const JobListQuery = z.object({ status: JobStatus.optional() });
export const CancelQuery = z.object({
  force: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
});

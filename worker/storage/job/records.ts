/** @module Reads of the job's row and its tasks' rows, as the records of job-rows.ts (spec 2.9). */
import {
  type DatasetSnapshot,
  type JobStatus,
  type StageArtifact,
  type TaskKind,
  type TaskOutputs,
  type TaskShards,
  TERMINAL_STATUSES,
} from "../../../protocol";
import { readConfig } from "../../config";
import { type JobRow, ONESHOT_ABANDONED_AFTER_MS, ONESHOT_RECIPE, type TaskRow } from "../job-rows";
import { first } from "../sql";
import type { Frozen, JobContext } from "./context";

export type Row = Record<string, SqlStorageValue>;

type Cell = SqlStorageValue | undefined;
export const bool = (v: Cell) => v === 1;
export const str = (v: Cell) => (v as string | null | undefined) ?? null;
export const parse = <T>(v: Cell): T | null => (v === null || v === undefined ? null : (JSON.parse(v as string) as T));

/** The job row's columns but the frozen JSON (`frozen`): read on every call, and the dataset is large. */
const JOB_COLUMNS =
  "job_id, tenant_id, project_id, recipe, status, cancel_requested, cancel_force, created_at, started_at, finished_at, error_class, error_message, recon_id";

export function jobRow(cx: JobContext): JobRow | null {
  const r = first(cx.sql, `SELECT ${JOB_COLUMNS} FROM job WHERE id = 1`);
  if (!r) return null;
  return {
    job_id: r.job_id as string,
    tenant_id: r.tenant_id as string,
    project_id: r.project_id as string,
    recipe: r.recipe as string,
    status: r.status as JobStatus,
    cancel_requested: bool(r.cancel_requested),
    cancel_force: bool(r.cancel_force),
    created_at: r.created_at as string,
    started_at: str(r.started_at),
    finished_at: str(r.finished_at),
    error_class: str(r.error_class),
    error_message: str(r.error_message),
    recon_id: str(r.recon_id),
  };
}

/**
 * The job's dataset and input artifacts, frozen at submission: parsed once per instance (every
 * lease carries them, and a completion looks its files up among the images).
 */
export function frozen(cx: JobContext): Frozen {
  if (cx.frozen) return cx.frozen;
  const row = cx.sql.exec<{ d: string; a: string }>("SELECT dataset_json AS d, artifacts_json AS a FROM job WHERE id = 1").one();
  const dataset = JSON.parse(row.d) as DatasetSnapshot | null;
  cx.frozen = {
    dataset,
    artifacts: JSON.parse(row.a) as Record<string, StageArtifact>,
    datasetJson: row.d,
    artifactsJson: row.a,
    imageSizes: new Map((dataset?.images ?? []).map((i) => [i.content_sha, i.byte_size ?? undefined])),
  };
  return cx.frozen;
}

/** When a running job with a `max_runtime_seconds` (2.12) must have ended, in ms since the epoch; null without a limit. */
export function runtimeDeadline(cx: JobContext): number | null {
  const r = cx.sql
    .exec<{ started: string | null; limit: number | null; status: JobStatus }>(
      'SELECT started_at AS started, max_runtime_seconds AS "limit", status FROM job WHERE id = 1',
    )
    .toArray()[0];
  if (!r || r.limit === null || r.started === null || TERMINAL_STATUSES.has(r.status)) return null;
  return Date.parse(r.started) + r.limit * 1000;
}

/** When a one-shot job (4.15) no request can still wait for discards itself, in ms since the epoch; null for other jobs. */
export function oneshotDeadline(cx: JobContext): number | null {
  const r = cx.sql.exec<{ recipe: string; created_at: string }>("SELECT recipe, created_at FROM job WHERE id = 1").toArray()[0];
  if (!r || r.recipe !== ONESHOT_RECIPE) return null;
  return Date.parse(r.created_at) + readConfig(cx.env).oneshotTimeoutMs + ONESHOT_ABANDONED_AFTER_MS;
}

/** Whether this is a one-shot job past its deadline: its request is gone (the Worker died mid-request). */
export const oneshotAbandoned = (cx: JobContext) => {
  const deadline = oneshotDeadline(cx);
  return deadline !== null && Date.now() >= deadline;
};

/** The job's dataset as frozen at submission, or null when it has none. */
export function jobDataset(cx: JobContext): DatasetSnapshot | null {
  return frozen(cx).dataset;
}

/** The job's dataset as frozen at submission, or null when it has none (undefined when there is no job). */
export function frozenDataset(cx: JobContext): DatasetSnapshot | null | undefined {
  return jobRow(cx) ? jobDataset(cx) : undefined;
}

/** The resolved `input_artifacts` by role (2.11), as given to every lease. */
export function inputArtifacts(cx: JobContext): Record<string, StageArtifact> {
  return frozen(cx).artifacts;
}

/** Whether the project opted in to the volunteer pool when the job was submitted. */
export function poolOptIn(cx: JobContext): boolean {
  return cx.sql.exec<{ p: number }>("SELECT pool_opt_in AS p FROM job WHERE id = 1").one().p === 1;
}

export function taskRows(cx: JobContext): Row[] {
  return cx.sql.exec("SELECT * FROM tasks ORDER BY ord").toArray();
}

export function taskRow(cx: JobContext, taskId: string): Row | null {
  return first(cx.sql, "SELECT * FROM tasks WHERE task_id = ?", taskId);
}

/** The ids of the tasks a task directly depends on. */
export const dependsOn = (r: Row) => JSON.parse(r.depends_json as string) as string[];

/** The backend action whose `:run` submitted the job (4.16), or null. */
export function backendAction(cx: JobContext): string | null {
  return str(first(cx.sql, "SELECT action_id FROM job WHERE id = 1")?.action_id);
}

/**
 * A task's kind as clients see it: a backend action's tasks are `backend_action` (4.16: `:run`
 * submits "a normal job with task kind backend_action"), with the stage each runs as
 * `x-stage_kind`; runners and the dispatcher keep the stage's kind, which says what to compute.
 */
export function reportedKind(r: Row, actionId: string | null): Pick<TaskRow, "kind" | "x-stage_kind"> {
  return actionId ? { kind: "backend_action", "x-stage_kind": r.kind as TaskKind } : { kind: r.kind as TaskKind };
}

export function taskOf(r: Row, jobId: string, actionId: string | null = null): TaskRow {
  return {
    task_id: r.task_id as string,
    job_id: jobId,
    ...reportedKind(r, actionId),
    status: r.status as JobStatus,
    depends_on: dependsOn(r),
    cache_key: r.cache_key as string,
    inputs_hash: r.inputs_hash as string,
    params_hash: r.params_hash as string,
    rv_id: r.rv_id as string,
    outputs_ref: parse<TaskOutputs>(r.outputs_json),
    cache_hit: bool(r.cache_hit),
    attempts: r.attempts as number,
    started_at: str(r.started_at),
    finished_at: str(r.finished_at),
    error_class: str(r.error_class),
    error_message: str(r.error_message),
  };
}

export function detail(cx: JobContext): { job: JobRow; tasks: TaskRow[] } | null {
  const job = jobRow(cx);
  if (!job) return null;
  const actionId = backendAction(cx);
  return {
    job,
    tasks: taskRows(cx).map((r) => ({
      ...taskOf(r, job.job_id, actionId),
      ...(r.sharded === 1 ? { "x-shards": shardStats(cx, r.task_id as string) } : {}),
    })),
  };
}

/**
 * Every task `taskId` depends on, directly or through others, in chain order: a stage reads
 * the outputs of any earlier stage (verify and map need extract's features, not only their
 * direct predecessor's output).
 */
export function ancestors(cx: JobContext, taskId: string): string[] {
  const seen = new Set<string>();
  const visit = (id: string) => {
    for (const d of dependsOn(taskRow(cx, id)!)) {
      if (seen.has(d)) continue;
      visit(d);
      seen.add(d);
    }
  };
  visit(taskId);
  return [...seen];
}

/**
 * The `features/<name>` files a task reads: its input features artifact, else the output of the
 * extraction it follows (once succeeded); by image name.
 */
export function featureFiles(cx: JobContext, taskId: string): Map<string, { blob_sha: string; byte_size: number }> {
  const given = inputArtifacts(cx).features;
  const upstream = ancestors(cx, taskId)
    .map((d) => taskRow(cx, d)!)
    .filter((t) => t.kind === "extract" && t.outputs_json)
    .flatMap((t) => (JSON.parse(t.outputs_json as string) as TaskOutputs).artifacts)
    .find((a) => a.kind === "features.local.v1");
  const files = given?.files ?? upstream?.files ?? [];
  return new Map(files.filter((f) => f.path.startsWith("features/")).map((f) => [f.path.slice("features/".length), f]));
}

/** `x-shards` of a task: shards done over total, items reused from the cache, shards by runner. */
export function shardStats(cx: JobContext, taskId: string): TaskShards | null {
  const items = cx.sql
    .exec<{ n: number; cached: number }>("SELECT COUNT(*) AS n, COALESCE(SUM(cache_hit), 0) AS cached FROM items WHERE task_id = ?", taskId)
    .one();
  if (items.n === 0) return null;
  const shards = cx.sql
    .exec<{ status: string; runner_id: string | null }>("SELECT status, runner_id FROM shards WHERE task_id = ?", taskId)
    .toArray();
  const byRunner: Record<string, number> = {};
  for (const s of shards) if (s.status === "succeeded" && s.runner_id) byRunner[s.runner_id] = (byRunner[s.runner_id] ?? 0) + 1;
  const results = cx.sql
    .exec<{ runner_id: string; verdict: string; shard_id: string; shard_status: string }>(
      `SELECT r.runner_id, r.verdict, r.shard_id, s.status AS shard_status FROM shard_results r JOIN shards s ON s.shard_id = r.shard_id
       WHERE s.task_id = ? AND r.verdict IN ('validated', 'agreed', 'rejected', 'candidate')`,
      taskId,
    )
    .toArray();
  const count = (verdict: string) => {
    const by: Record<string, number> = {};
    for (const r of results) if (r.verdict === verdict) by[r.runner_id] = (by[r.runner_id] ?? 0) + 1;
    return by;
  };
  return {
    total: shards.length,
    done: shards.filter((s) => s.status === "succeeded").length,
    items: items.n,
    items_cached: items.cached,
    by_runner: byRunner,
    validated: results.filter((r) => r.verdict === "validated").length,
    awaiting_validation: new Set(results.filter((r) => r.verdict === "candidate" && r.shard_status !== "succeeded").map((r) => r.shard_id))
      .size,
    checked_by: count("agreed"),
    rejected_by: count("rejected"),
  };
}

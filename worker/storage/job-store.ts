/**
 * @module JobStore: one SQLite-backed Durable Object per job, named `<tenant>/<job_id>` so a
 * request reaches only its own tenant's jobs. It holds the job, its tasks with their
 * dependencies, the leases runners hold on them, and the append-only event log (spec 2.9, 3.1,
 * 3.2, 6), and it fans events out live to SSE streams and hibernatable WebSockets.
 *
 * Every state change is a synchronous check-and-set on this object's database, so concurrent
 * runners can never both lease a task: the object serialises them. Side effects on other
 * objects (the tenant's job index and task cache, the dispatch queues) follow each change and
 * are idempotent, so a late or repeated one does no harm.
 */
import { DurableObject } from "cloudflare:workers";
import type {
  Checkpoint,
  DatasetSnapshot,
  EventBody,
  JobStatus,
  Lease,
  LeaseDirective,
  LeaseState,
  Phase,
  RunnerEvent,
  StageArtifact,
  TaskKind,
  TaskOutputs,
} from "../../protocol";
import { TERMINAL_STATUSES } from "../../protocol";
import { readConfig } from "../config";
import { dispatcher, tenantStore } from "../services/stores";
import { secret } from "./key-registry";
import { type Outcome, clash, invalid, missing, ok } from "./outcome";
import { migrate, nowIso } from "./sql";
import type { AdoptedSnapshot } from "./tenant-rows";

const MIGRATIONS = [
  [
    `CREATE TABLE job (
      id INTEGER PRIMARY KEY CHECK (id = 1), job_id TEXT NOT NULL, tenant_id TEXT NOT NULL, project_id TEXT NOT NULL,
      recipe TEXT NOT NULL, status TEXT NOT NULL, cancel_requested INTEGER NOT NULL DEFAULT 0,
      cancel_force INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,
      error_class TEXT, error_message TEXT, recon_id TEXT, pool_opt_in INTEGER NOT NULL, dataset_json TEXT NOT NULL)`,
    `CREATE TABLE tasks (
      task_id TEXT PRIMARY KEY, ord INTEGER NOT NULL, kind TEXT NOT NULL, phase TEXT NOT NULL, status TEXT NOT NULL,
      depends_json TEXT NOT NULL, params_json TEXT NOT NULL, inputs_hash TEXT NOT NULL, params_hash TEXT NOT NULL,
      rv_id TEXT NOT NULL, cache_key TEXT NOT NULL, outputs_json TEXT, cache_hit INTEGER NOT NULL DEFAULT 0,
      attempts INTEGER NOT NULL DEFAULT 0, started_at TEXT, finished_at TEXT, error_class TEXT, error_message TEXT,
      checkpoint_json TEXT, latest_event_kind TEXT, progress_current INTEGER, progress_total INTEGER)`,
    `CREATE TABLE leases (
      lease_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, runner_id TEXT NOT NULL, pool INTEGER NOT NULL,
      granted_at TEXT NOT NULL, expires_at INTEGER NOT NULL, state TEXT NOT NULL)`,
    `CREATE INDEX leases_active ON leases(state, expires_at)`,
    `CREATE TABLE events (event_id INTEGER PRIMARY KEY, task_id TEXT, kind TEXT NOT NULL, body TEXT NOT NULL)`,
    `CREATE TABLE blobs (sha TEXT PRIMARY KEY, byte_size INTEGER NOT NULL)`,
  ],
  // Set while the tenant index or a queue missed a change; the alarm retries until they have it.
  [`ALTER TABLE job ADD COLUMN sync_pending INTEGER NOT NULL DEFAULT 0`],
  // The resolved `input_artifacts` by role (2.11), given to every lease; and whether the tenant has
  // recorded a succeeded task's outputs (its cache entry and its artifacts).
  [`ALTER TABLE job ADD COLUMN artifacts_json TEXT NOT NULL DEFAULT '{}'`, `ALTER TABLE tasks ADD COLUMN recorded INTEGER NOT NULL DEFAULT 0`],
];

/** How soon a missed propagation to the tenant index and the queues is retried. */
const PROPAGATE_RETRY_MS = 2_000;

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
}

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
  tasks: TaskPlan[];
  /** The snapshot the reconstruction took from the cached last task, announced as that task's (TenantStore.registerJob). */
  adopted_snapshot: AdoptedSnapshot | null;
}

/** Who is asking about a lease: a lease granted to a pool runner is usable only by pool runners, and vice versa. */
export interface LeaseScope {
  pool: boolean;
}

export interface LeaseHolder extends LeaseScope {
  runner_id: string;
}

/** Which of the job's tasks a dispatch queue should offer, and which to withdraw. */
export interface QueueEntry {
  tenant_id: string;
  job_id: string;
  task_id: string;
  project_id: string;
  kind: TaskKind;
  rv_id: string;
}

type Row = Record<string, SqlStorageValue>;

type Cell = SqlStorageValue | undefined;
const bool = (v: Cell) => v === 1;
const str = (v: Cell) => (v as string | null | undefined) ?? null;
const parse = <T>(v: Cell): T | null => (v === null || v === undefined ? null : (JSON.parse(v as string) as T));

/** A lease id names its job so any route can find the object: `<tenant>.<job>.<task>.<secret>`. */
export function parseLeaseId(leaseId: string): { tenant: string; job: string } | null {
  const parts = leaseId.split(".");
  return parts.length === 4 && parts.every((p) => /^[A-Za-z0-9_-]+$/.test(p)) ? { tenant: parts[0]!, job: parts[1]! } : null;
}

const encoder = new TextEncoder();
const sseFrame = (eventId: number, body: string) => encoder.encode(`id: ${eventId}\ndata: ${body}\n\n`);

interface SseSubscriber {
  controller: ReadableStreamDefaultController<Uint8Array>;
  keepAlive: ReturnType<typeof setInterval>;
}

export class JobStore extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly streams = new Set<SseSubscriber>();
  /** What this instance last told the tenant index and the queues, to skip repeating it (lost on eviction: then sent again). */
  private told = { job: "", offer: "" };

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage, MIGRATIONS));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  // ---- creation and reads ----

  /** Persists the job and its tasks; cached tasks are `succeeded` at once and never enqueued (3.2.1). */
  async create(plan: JobPlan): Promise<JobRow> {
    if (this.jobRow()) throw new Error(`job ${plan.job_id} exists`);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO job (id, job_id, tenant_id, project_id, recipe, status, created_at, recon_id, pool_opt_in, dataset_json, artifacts_json)
         VALUES (1, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)`,
        plan.job_id,
        plan.tenant_id,
        plan.project_id,
        plan.recipe,
        plan.created_at,
        plan.recon_id,
        plan.pool_opt_in ? 1 : 0,
        JSON.stringify(plan.dataset),
        JSON.stringify(plan.input_artifacts),
      );
      this.recordFiles(Object.values(plan.input_artifacts));
      plan.tasks.forEach((t, ord) => {
        const done = t.cached ?? t.imported ?? null;
        this.sql.exec(
          `INSERT INTO tasks (task_id, ord, kind, phase, status, depends_json, params_json, inputs_hash, params_hash, rv_id,
             cache_key, outputs_json, cache_hit, started_at, finished_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          t.task_id,
          ord,
          t.kind,
          t.phase,
          done ? "succeeded" : "pending",
          JSON.stringify(t.depends_on),
          JSON.stringify(t.params),
          t.inputs_hash,
          t.params_hash,
          t.rv_id,
          t.cache_key,
          done ? JSON.stringify(done) : null,
          t.cached ? 1 : 0,
          done ? plan.created_at : null,
          done ? plan.created_at : null,
        );
        if (done) this.recordFiles(done.artifacts);
      });
      this.append(null, { kind: "job_status", status: "pending", error_class: null });
      for (const t of plan.tasks.filter((t) => t.cached || t.imported)) {
        const how = t.cached
          ? `cache hit: reused the outputs of cache_key ${t.cache_key}`
          : `registered ${t.imported!.artifacts.map((a) => `'${a.name}'`).join(", ")} without copying bytes`;
        this.append(t.task_id, { kind: "phase_started", phase: t.phase });
        this.append(t.task_id, { kind: "log_line", level: "INFO", message: how });
        if (plan.adopted_snapshot && t === plan.tasks.at(-1)) {
          this.append(t.task_id, { kind: "snapshot_available", snapshot_seq: plan.adopted_snapshot.seq, summary: plan.adopted_snapshot.summary });
        }
        this.append(t.task_id, { kind: "phase_completed", phase: t.phase });
      }
      if (plan.tasks.every((t) => t.cached || t.imported)) {
        // Nothing to admit: the job runs and finishes in the same instant.
        this.sql.exec("UPDATE job SET started_at = created_at WHERE id = 1");
        this.setStatus("running");
        this.settle();
      }
    });
    await this.propagate();
    return this.jobRow()!;
  }

  detail(): { job: JobRow; tasks: TaskRow[] } | null {
    const job = this.jobRow();
    return job ? { job, tasks: this.taskRows().map((r) => this.taskOf(r, job.job_id)) } : null;
  }

  /** JobProgressOut (4.8): terminal tasks 1.0, running `current/total` when both are known, else 0. */
  progress() {
    const job = this.jobRow();
    if (!job) return null;
    const now = Date.now();
    const rows = this.taskRows();
    const counts = Object.fromEntries(["pending", "running", "succeeded", "failed", "cancelled", "cancelled_dirty"].map((s) => [s, 0])) as Record<JobStatus, number>;
    const tasks = rows.map((r) => {
      const status = r.status as JobStatus;
      counts[status] += 1;
      const current = r.progress_current as number | null;
      const total = r.progress_total as number | null;
      const fraction = TERMINAL_STATUSES.has(status)
        ? 1
        : status === "running" && current !== null && total !== null && total > 0
          ? Math.min(1, current / total)
          : 0;
      const started = str(r.started_at);
      const finished = str(r.finished_at);
      return {
        task_id: r.task_id as string,
        kind: r.kind as TaskKind,
        status,
        progress: fraction,
        latest_event_kind: str(r.latest_event_kind),
        elapsed_seconds: started ? ((finished ? Date.parse(finished) : now) - Date.parse(started)) / 1000 : null,
        current: status === "running" ? current : null,
        total: status === "running" ? total : null,
      };
    });
    const current = tasks.find((t) => t.status === "running") ?? tasks.find((t) => t.status === "pending") ?? null;
    const phase = this.sql
      .exec<{ body: string }>("SELECT body FROM events WHERE kind IN ('phase_started', 'phase_progress', 'phase_completed') ORDER BY event_id DESC LIMIT 1")
      .toArray()[0];
    return {
      job_id: job.job_id,
      recipe: job.recipe,
      status: job.status,
      progress: tasks.length ? tasks.reduce((s, t) => s + t.progress, 0) / tasks.length : 1,
      total_tasks: tasks.length,
      completed_tasks: tasks.filter((t) => TERMINAL_STATUSES.has(t.status)).length,
      task_counts: counts,
      current_task_id: current?.task_id ?? null,
      current_task_kind: current?.kind ?? null,
      current_phase: phase ? ((JSON.parse(phase.body) as { phase: Phase }).phase ?? null) : null,
      latest_event_id: this.latestEventId(),
      tasks,
    };
  }

  // ---- cancel and resume (3.1) ----

  /** Cooperative: pending tasks stop now, running ones at their next phase boundary. Force: everything stops now. */
  async cancel(force: boolean): Promise<Outcome<JobRow>> {
    const job = this.jobRow();
    if (!job) return missing("job");
    if (job.status === "succeeded" || job.status === "failed") return clash(`the job already ${job.status}`);
    if (job.status === "cancelled" || job.status === "cancelled_dirty") return ok(job);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE job SET cancel_requested = 1, cancel_force = cancel_force OR ? WHERE id = 1", force ? 1 : 0);
      this.sql.exec("UPDATE tasks SET status = 'cancelled', finished_at = ? WHERE status = 'pending'", nowIso());
      if (force) {
        const finished = nowIso();
        for (const l of this.sql.exec<{ lease_id: string; task_id: string }>("SELECT lease_id, task_id FROM leases WHERE state = 'active'").toArray()) {
          this.sql.exec("UPDATE leases SET state = 'revoked' WHERE lease_id = ?", l.lease_id);
          this.sql.exec("UPDATE tasks SET status = 'cancelled_dirty', finished_at = ? WHERE task_id = ?", finished, l.task_id);
        }
        this.setStatus("cancelled_dirty");
      } else {
        this.append(null, { kind: "log_line", level: "INFO", message: "cancel requested: running tasks stop at their next phase boundary" });
        this.settle();
      }
    });
    await this.propagate();
    return ok(this.jobRow()!);
  }

  /** Resets failed and cancelled tasks and re-enqueues them; a map task keeps its checkpoint (3.1). */
  async resume(): Promise<Outcome<JobRow>> {
    const job = this.jobRow();
    if (!job) return missing("job");
    if (!["failed", "cancelled", "cancelled_dirty"].includes(job.status)) return clash(`a ${job.status} job cannot be resumed`);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `UPDATE tasks SET status = 'pending', started_at = NULL, finished_at = NULL, error_class = NULL, error_message = NULL,
           progress_current = NULL, progress_total = NULL WHERE status IN ('failed', 'cancelled', 'cancelled_dirty')`,
      );
      this.sql.exec(
        `UPDATE job SET cancel_requested = 0, cancel_force = 0, started_at = NULL, finished_at = NULL, error_class = NULL,
           error_message = NULL WHERE id = 1`,
      );
      this.setStatus("pending");
    });
    await this.propagate();
    return ok(this.jobRow()!);
  }

  // ---- leases (3.2.3) ----

  /**
   * Leases the task to a runner when it is still leasable: the job is live and not being
   * cancelled, the task is pending and every dependency succeeded. Null otherwise (the caller
   * drops its stale queue entry).
   */
  async lease(taskId: string, holder: LeaseHolder): Promise<Lease | null> {
    const job = this.jobRow();
    const task = this.taskRow(taskId);
    if (!job || !task || !["pending", "running"].includes(job.status) || job.cancel_requested || task.status !== "pending") return null;
    const deps = JSON.parse(task.depends_json as string) as string[];
    if (!deps.every((d) => this.taskRow(d)?.status === "succeeded")) return null;
    const ttl = readConfig(this.env).leaseTtlMs;
    const leaseId = `${job.tenant_id}.${job.job_id}.${taskId}.${secret()}`;
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "INSERT INTO leases (lease_id, task_id, runner_id, pool, granted_at, expires_at, state) VALUES (?, ?, ?, ?, ?, ?, 'active')",
        leaseId,
        taskId,
        holder.runner_id,
        holder.pool ? 1 : 0,
        new Date(now).toISOString(),
        now + ttl,
      );
      this.sql.exec(
        "UPDATE tasks SET status = 'running', attempts = attempts + 1, started_at = COALESCE(started_at, ?), progress_current = NULL, progress_total = NULL WHERE task_id = ?",
        new Date(now).toISOString(),
        taskId,
      );
      if (job.status === "pending") {
        this.sql.exec("UPDATE job SET started_at = ? WHERE id = 1", new Date(now).toISOString());
        this.setStatus("running");
      }
      this.append(taskId, { kind: "phase_started", phase: task.phase as Phase });
    });
    await this.scheduleAlarm();
    await this.propagate();
    const leased = this.taskRow(taskId)!;
    return {
      lease_id: leaseId,
      runner_id: holder.runner_id,
      expires_at: new Date(now + ttl).toISOString(),
      ttl_seconds: Math.round(ttl / 1000),
      task: {
        task_id: taskId,
        job_id: job.job_id,
        kind: leased.kind as TaskKind,
        phase: leased.phase as Phase,
        attempt: leased.attempts as number,
        params: JSON.parse(leased.params_json as string),
      },
      inputs: {
        dataset: this.jobDataset(),
        upstream: this.ancestors(taskId).map((d) => {
          const dep = this.taskRow(d)!;
          return { task_id: d, kind: dep.kind as TaskKind, outputs_ref: JSON.parse(dep.outputs_json as string) as TaskOutputs };
        }),
        artifacts: JSON.parse(this.sql.exec<{ a: string }>("SELECT artifacts_json AS a FROM job WHERE id = 1").one().a),
      },
      checkpoint: parse<Checkpoint>(leased.checkpoint_json),
      _links: leaseLinks(leaseId),
    };
  }

  /**
   * Every task `taskId` depends on, directly or through others, in chain order: a stage reads
   * the outputs of any earlier stage (verify and map need extract's features, not only their
   * direct predecessor's output).
   */
  private ancestors(taskId: string): string[] {
    const seen = new Set<string>();
    const visit = (id: string) => {
      for (const d of JSON.parse(this.taskRow(id)!.depends_json as string) as string[]) {
        if (seen.has(d)) continue;
        visit(d);
        seen.add(d);
      }
    };
    visit(taskId);
    return [...seen];
  }

  /** Whether the lease is still held (a runner holds at most one lease; see Dispatcher). */
  leaseActive(leaseId: string): boolean {
    return this.activeLease(leaseId) !== null;
  }

  /** Holds the lease for another TTL and tells the runner whether to go on. */
  heartbeat(leaseId: string, scope: LeaseScope): Outcome<LeaseState> {
    const lease = this.leaseRow(leaseId, scope);
    if (!lease) return missing("lease");
    if (lease.state === "active") this.extend(leaseId);
    return ok(this.leaseState(leaseId));
  }

  /** Appends the runner's events (6.3), stamped with the common fields. */
  postEvents(leaseId: string, scope: LeaseScope, events: RunnerEvent[]): Outcome<LeaseState> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    const own = this.taskRow(lease.value.task_id)!.phase as Phase;
    const mine = events.find((e) => (e.kind === "phase_started" || e.kind === "phase_completed") && e.phase === own);
    if (mine) {
      return invalid(`the service emits ${mine.kind} of the task's own phase '${own}'`, [
        { path: "events", message: "post sub-phases only", code: "reserved_phase" },
      ]);
    }
    this.ctx.storage.transactionSync(() => {
      for (const e of events) this.append(lease.value.task_id, e);
    });
    this.extend(leaseId);
    return ok(this.leaseState(leaseId));
  }

  /** A blob the runner uploaded under its lease: readable by the job's later tasks, citable in outputs. */
  recordBlob(leaseId: string, scope: LeaseScope, sha: string, byteSize: number): Outcome<null> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    this.sql.exec("INSERT OR IGNORE INTO blobs (sha, byte_size) VALUES (?, ?)", sha, byteSize);
    return ok(null);
  }

  /** Whether the holder of the lease may read the blob: the dataset's images, the input artifacts' files, the job's outputs, its checkpoint. */
  mayRead(leaseId: string, scope: LeaseScope, sha: string): boolean {
    if (!this.heldLease(leaseId, scope).ok) return false;
    return this.inputSize(sha) !== undefined;
  }

  /** The job's dataset as frozen at submission, or null when it has none (undefined when there is no job). */
  frozenDataset(): DatasetSnapshot | null | undefined {
    return this.jobRow() ? this.jobDataset() : undefined;
  }

  /** The held lease's task and the job's reconstruction (what a snapshot seal is checked against). */
  leaseTask(
    leaseId: string,
    scope: LeaseScope,
  ): Outcome<{ job_id: string; task_id: string; kind: TaskKind; recon_id: string | null; manifest_hash: string | null }> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    const job = this.jobRow()!;
    const kind = this.taskRow(lease.value.task_id)!.kind as TaskKind;
    return ok({ job_id: job.job_id, task_id: lease.value.task_id, kind, recon_id: job.recon_id, manifest_hash: this.jobDataset()?.manifest_hash ?? null });
  }

  /** `snapshot_available` (6 rule 5) once per sealed seq, after the snapshot is readable; a retried seal announces nothing new. */
  announceSnapshot(leaseId: string, scope: LeaseScope, snapshotSeq: number, summary: Record<string, unknown>): Outcome<null> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    const announced = this.sql
      .exec("SELECT 1 FROM events WHERE kind = 'snapshot_available' AND json_extract(body, '$.snapshot_seq') = ?", snapshotSeq)
      .toArray().length > 0;
    if (!announced) this.append(lease.value.task_id, { kind: "snapshot_available", snapshot_seq: snapshotSeq, summary });
    this.extend(leaseId);
    return ok(null);
  }

  /** The latest mapping checkpoint (3.1 resume); its blob must have been uploaded under the lease. */
  putCheckpoint(leaseId: string, scope: LeaseScope, checkpoint: Checkpoint): Outcome<LeaseState> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    const stored = this.sql.exec<{ byte_size: number }>("SELECT byte_size FROM blobs WHERE sha = ?", checkpoint.blob_sha).toArray()[0];
    if (!stored || stored.byte_size !== checkpoint.byte_size) {
      return invalid("the checkpoint's blob was not uploaded under this job with that size", [
        { path: "blob_sha", message: "upload the blob first", code: "unknown_blob" },
      ]);
    }
    this.sql.exec("UPDATE tasks SET checkpoint_json = ? WHERE task_id = ?", JSON.stringify(checkpoint), lease.value.task_id);
    this.extend(leaseId);
    return ok(this.leaseState(leaseId));
  }

  /**
   * Completes the task with validated outputs. Every file must be a blob uploaded under this job,
   * or one of its inputs (a dataset image, an input artifact's file: an export lists the photos
   * it references), with the declared size; otherwise the task fails with a validation error
   * (2.11 rule 3) and nothing else is lost. The outputs are then recorded by the tenant
   * (propagate): the cache entry and the artifacts.
   */
  async complete(leaseId: string, scope: LeaseScope, outputs: TaskOutputs): Promise<Outcome<{ task_id: string; runner_id: string }>> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    const errors = outputs.artifacts.flatMap((a, i) =>
      a.files.flatMap((f, j) => {
        const size = this.inputSize(f.blob_sha);
        const path = `outputs_ref.artifacts.${i}.files.${j}`;
        if (size === undefined) return [{ path: `${path}.blob_sha`, message: "no blob with this sha was uploaded under this job, nor is it an input of the job", code: "unknown_blob" }];
        if (size !== f.byte_size) return [{ path: `${path}.byte_size`, message: `the blob has ${size} bytes`, code: "size_mismatch" }];
        return [];
      }),
    );
    if (errors.length > 0) {
      await this.fail(leaseId, scope, { error_class: "ValidationError", message: "the task's outputs_ref is invalid", detail: { errors } });
      return invalid("outputs_ref rejected; the task failed with a validation error", errors);
    }
    const taskId = lease.value.task_id;
    const task = this.taskRow(taskId)!;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE leases SET state = 'completed' WHERE lease_id = ?", leaseId);
      this.sql.exec("UPDATE tasks SET status = 'succeeded', outputs_json = ?, finished_at = ? WHERE task_id = ?", JSON.stringify(outputs), nowIso(), taskId);
      this.append(taskId, { kind: "phase_completed", phase: task.phase as Phase });
      this.settle();
    });
    await this.propagate();
    return ok({ task_id: taskId, runner_id: lease.value.runner_id });
  }

  /** The runner reports failure: the task fails, the job fails with its error class (3.1, 7). */
  async fail(leaseId: string, scope: LeaseScope, error: { error_class: string; message: string; detail: Record<string, unknown> | null }): Promise<Outcome<{ runner_id: string }>> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    const taskId = lease.value.task_id;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE leases SET state = 'failed' WHERE lease_id = ?", leaseId);
      this.sql.exec(
        "UPDATE tasks SET status = 'failed', error_class = ?, error_message = ?, finished_at = ? WHERE task_id = ?",
        error.error_class,
        error.message,
        nowIso(),
        taskId,
      );
      this.append(taskId, { kind: "error", error_class: error.error_class, message: error.message, detail: error.detail });
      this.settle();
    });
    await this.propagate();
    return ok({ runner_id: lease.value.runner_id });
  }

  /** The runner gives the task back unfinished: it is re-queued, or cancelled when a cancel is pending. */
  async release(leaseId: string, scope: LeaseScope, reason: string): Promise<Outcome<{ runner_id: string }>> {
    const lease = this.heldLease(leaseId, scope);
    if (!lease.ok) return lease;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE leases SET state = 'released' WHERE lease_id = ?", leaseId);
      this.returnTask(lease.value.task_id, `released by runner ${lease.value.runner_id}: ${reason}`);
      this.settle();
    });
    await this.propagate();
    return ok({ runner_id: lease.value.runner_id });
  }

  /**
   * Lease expiry: a vanished runner loses its lease and the task goes back to the queue (3.2.3).
   * Also retries a propagation that failed.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const expired = this.sql
      .exec<{ lease_id: string; task_id: string; runner_id: string }>(
        "SELECT lease_id, task_id, runner_id FROM leases WHERE state = 'active' AND expires_at <= ?",
        now,
      )
      .toArray();
    if (expired.length > 0) {
      this.ctx.storage.transactionSync(() => {
        for (const l of expired) {
          this.sql.exec("UPDATE leases SET state = 'expired' WHERE lease_id = ?", l.lease_id);
          this.returnTask(l.task_id, `the lease of runner ${l.runner_id} expired`);
        }
        this.settle();
      });
    }
    if (!this.jobRow()) return;
    await this.propagate();
    await this.scheduleAlarm();
  }

  /** Project deletion (4.2 cascade): drops everything and closes the streams. */
  async purge(): Promise<void> {
    for (const s of this.streams) this.closeStream(s);
    for (const ws of this.ctx.getWebSockets()) ws.close(1000, "job deleted");
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    // An empty schema again, so a late request finds no job (404) rather than no table.
    migrate(this.ctx.storage, MIGRATIONS);
  }

  // ---- live streams (6): SSE and hibernatable WebSockets ----

  override async fetch(request: Request): Promise<Response> {
    const job = this.jobRow();
    if (!job) return new Response(null, { status: 404 });
    const url = new URL(request.url);
    const raw = request.headers.get("Last-Event-ID") ?? url.searchParams.get("last_event_id") ?? "0";
    const cursor = /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : 0;
    const terminal = TERMINAL_STATUSES.has(job.status);
    const backlog = this.sql.exec<{ event_id: number; body: string }>("SELECT event_id, body FROM events WHERE event_id > ? ORDER BY event_id", cursor).toArray();

    if (request.headers.get("Upgrade")?.toLowerCase() === "websocket") {
      const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
      this.ctx.acceptWebSocket(server);
      for (const e of backlog) server.send(e.body);
      if (terminal) server.close(1000, `job ${job.status}`);
      return new Response(null, { status: 101, webSocket: client });
    }

    // Replay and subscription happen in one synchronous turn, so no event falls between them.
    let subscriber: SseSubscriber | null = null;
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        controller.enqueue(encoder.encode(`retry: 2000\n: job ${job.job_id}\n\n`));
        for (const e of backlog) controller.enqueue(sseFrame(e.event_id, e.body));
        if (terminal) return controller.close();
        const keepAlive = setInterval(() => {
          try {
            controller.enqueue(encoder.encode(": keep-alive\n\n"));
          } catch {
            if (subscriber) this.closeStream(subscriber);
          }
        }, readConfig(this.env).sseKeepAliveMs);
        subscriber = { controller, keepAlive };
        this.streams.add(subscriber);
      },
      cancel: () => {
        if (subscriber) this.closeStream(subscriber);
      },
    });
    return new Response(stream, {
      headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no" },
    });
  }

  override async webSocketMessage(): Promise<void> {
    // The stream is server-to-client; "ping" is answered without waking the object (constructor).
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    ws.close(code === 1005 ? 1000 : code, "closing");
  }

  // ---- internals ----

  private jobRow(): JobRow | null {
    const r = this.sql.exec("SELECT * FROM job WHERE id = 1").toArray()[0];
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

  private jobDataset(): DatasetSnapshot | null {
    return JSON.parse(this.sql.exec<{ dataset_json: string }>("SELECT dataset_json FROM job WHERE id = 1").one().dataset_json) as DatasetSnapshot | null;
  }

  /**
   * The byte size of a blob the job may read and cite: uploaded under it, an output of its
   * tasks, a file of its input artifacts or a dataset image; undefined for any other blob.
   */
  private inputSize(sha: string): number | undefined {
    const stored = this.sql.exec<{ byte_size: number }>("SELECT byte_size FROM blobs WHERE sha = ?", sha).toArray()[0];
    if (stored) return stored.byte_size;
    const image = this.jobDataset()?.images.find((i) => i.content_sha === sha);
    return image ? (image.byte_size ?? undefined) : undefined;
  }

  private taskRows(): Row[] {
    return this.sql.exec("SELECT * FROM tasks ORDER BY ord").toArray();
  }

  private taskRow(taskId: string): Row | null {
    return this.sql.exec("SELECT * FROM tasks WHERE task_id = ?", taskId).toArray()[0] ?? null;
  }

  private taskOf(r: Row, jobId: string): TaskRow {
    return {
      task_id: r.task_id as string,
      job_id: jobId,
      kind: r.kind as TaskKind,
      status: r.status as JobStatus,
      depends_on: JSON.parse(r.depends_json as string),
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

  private latestEventId(): number {
    return this.sql.exec<{ n: number | null }>("SELECT MAX(event_id) AS n FROM events").one().n ?? 0;
  }

  /** Appends one event with its common fields (6), updates the task's progress view, and fans it out. */
  private append(taskId: string | null, body: EventBody | RunnerEvent): void {
    const job = this.jobRow()!;
    const eventId = this.latestEventId() + 1;
    const event = { schema_version: 1, event_id: eventId, ts: nowIso(), job_id: job.job_id, task_id: taskId, seq: eventId, ...body };
    const text = JSON.stringify(event);
    this.sql.exec("INSERT INTO events (event_id, task_id, kind, body) VALUES (?, ?, ?, ?)", eventId, taskId, body.kind, text);
    if (taskId) {
      this.sql.exec("UPDATE tasks SET latest_event_kind = ? WHERE task_id = ?", body.kind, taskId);
      if (body.kind === "phase_progress") {
        this.sql.exec("UPDATE tasks SET progress_current = ?, progress_total = ? WHERE task_id = ?", body.current, body.total, taskId);
      }
    }
    const terminal = body.kind === "job_status" && TERMINAL_STATUSES.has(body.status);
    for (const s of this.streams) {
      try {
        s.controller.enqueue(sseFrame(eventId, text));
        if (terminal) this.closeStream(s);
      } catch {
        this.closeStream(s);
      }
    }
    for (const ws of this.ctx.getWebSockets()) {
      try {
        ws.send(text);
        if (terminal) ws.close(1000, `job ${body.status}`);
      } catch {
        // A socket closing concurrently: its close handler cleans up.
      }
    }
  }

  private closeStream(s: SseSubscriber): void {
    clearInterval(s.keepAlive);
    this.streams.delete(s);
    try {
      s.controller.close();
    } catch {
      // Already closed or cancelled by the client.
    }
  }

  /** Sets the job status with its timestamps and error, and logs a `job_status` event (our additive kind). */
  private setStatus(status: JobStatus, error?: { error_class: string; error_message: string }): void {
    const finished = TERMINAL_STATUSES.has(status) ? nowIso() : null;
    this.sql.exec(
      "UPDATE job SET status = ?, finished_at = ?, error_class = ?, error_message = ? WHERE id = 1",
      status,
      finished,
      error?.error_class ?? null,
      error?.error_message ?? null,
    );
    this.append(null, { kind: "job_status", status, error_class: error?.error_class ?? null });
  }

  /** Rolls the task states up into the job (3.1): done, failed, or cancelled once nothing runs. */
  private settle(): void {
    const job = this.jobRow()!;
    if (TERMINAL_STATUSES.has(job.status)) return;
    const tasks = this.taskRows();
    if (tasks.every((t) => t.status === "succeeded")) return this.setStatus("succeeded");
    if (tasks.some((t) => t.status === "running")) return;
    if (job.cancel_requested) {
      this.sql.exec("UPDATE tasks SET status = 'cancelled', finished_at = ? WHERE status = 'pending'", nowIso());
      return this.setStatus("cancelled");
    }
    const failed = tasks.find((t) => t.status === "failed");
    if (failed) return this.setStatus("failed", { error_class: failed.error_class as string, error_message: failed.error_message as string });
  }

  /** An unfinished task goes back to pending, or to cancelled when a cancel is pending. */
  private returnTask(taskId: string, why: string): void {
    const cancelling = this.jobRow()!.cancel_requested;
    this.sql.exec(
      "UPDATE tasks SET status = ?, finished_at = ?, progress_current = NULL, progress_total = NULL WHERE task_id = ?",
      cancelling ? "cancelled" : "pending",
      cancelling ? nowIso() : null,
      taskId,
    );
    this.append(taskId, { kind: "warning", message: cancelling ? `${why}; the task is cancelled` : `${why}; the task is queued again` });
  }

  /** The artifacts' files become readable (and citable) by the job's tasks. */
  private recordFiles(artifacts: readonly { files: readonly { blob_sha: string; byte_size: number }[] }[]): void {
    for (const f of artifacts.flatMap((a) => a.files)) {
      this.sql.exec("INSERT OR IGNORE INTO blobs (sha, byte_size) VALUES (?, ?)", f.blob_sha, f.byte_size);
    }
  }

  private leaseRow(leaseId: string, scope: LeaseScope) {
    return (
      this.sql
        .exec<{ lease_id: string; task_id: string; runner_id: string; state: string; expires_at: number }>(
          "SELECT lease_id, task_id, runner_id, state, expires_at FROM leases WHERE lease_id = ? AND pool = ?",
          leaseId,
          scope.pool ? 1 : 0,
        )
        .toArray()[0] ?? null
    );
  }

  private activeLease(leaseId: string) {
    return (
      this.sql
        .exec<{ task_id: string; runner_id: string }>("SELECT task_id, runner_id FROM leases WHERE lease_id = ? AND state = 'active'", leaseId)
        .toArray()[0] ?? null
    );
  }

  /** The lease when the holder still holds it: 404 for an unknown one, 409 for one no longer held. */
  private heldLease(leaseId: string, scope: LeaseScope): Outcome<{ task_id: string; runner_id: string }> {
    const lease = this.leaseRow(leaseId, scope);
    if (!lease) return missing("lease");
    if (lease.state !== "active") return clash(`the lease is no longer held (${lease.state})`);
    return ok(lease);
  }

  private extend(leaseId: string): void {
    this.sql.exec("UPDATE leases SET expires_at = ? WHERE lease_id = ?", Date.now() + readConfig(this.env).leaseTtlMs, leaseId);
  }

  private leaseState(leaseId: string): LeaseState {
    const lease = this.sql.exec<{ state: string; expires_at: number }>("SELECT state, expires_at FROM leases WHERE lease_id = ?", leaseId).one();
    const job = this.jobRow()!;
    const directive: LeaseDirective = lease.state !== "active" ? "teardown" : job.cancel_requested ? "stop" : "continue";
    return { lease_id: leaseId, expires_at: new Date(lease.expires_at).toISOString(), directive, latest_event_id: this.latestEventId() };
  }

  /** The alarm wakes at the earliest lease expiry, or sooner when a propagation must be retried. */
  private async scheduleAlarm(): Promise<void> {
    const expiry = this.sql.exec<{ t: number | null }>("SELECT MIN(expires_at) AS t FROM leases WHERE state = 'active'").one().t;
    const retry = this.sql.exec<{ p: number }>("SELECT sync_pending AS p FROM job WHERE id = 1").toArray()[0]?.p ? Date.now() + PROPAGATE_RETRY_MS : null;
    const next = [expiry, retry].filter((t): t is number => t !== null);
    if (next.length === 0) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.min(...next));
  }

  /**
   * After a change: the tenant's job index follows the job (guarded by the event cursor, so a
   * late update never overwrites a newer one) and records the outputs of newly succeeded tasks
   * (cache entries, artifacts), ready tasks are offered to the dispatch queues and tasks no
   * longer leasable are withdrawn. A failure is retried from the alarm.
   */
  private async propagate(): Promise<void> {
    const job = this.jobRow()!;
    const live = ["pending", "running"].includes(job.status) && !job.cancel_requested;
    const rows = this.taskRows();
    const succeeded = new Set(rows.filter((r) => r.status === "succeeded").map((r) => r.task_id as string));
    const entry = (r: Row): QueueEntry => ({
      tenant_id: job.tenant_id,
      job_id: job.job_id,
      task_id: r.task_id as string,
      project_id: job.project_id,
      kind: r.kind as TaskKind,
      rv_id: r.rv_id as string,
    });
    const ready = live
      ? rows.filter((r) => r.status === "pending" && (JSON.parse(r.depends_json as string) as string[]).every((d) => succeeded.has(d))).map(entry)
      : [];
    const withdrawn = rows.filter((r) => r.status !== "pending" || !live).map((r) => r.task_id as string);
    const pool = this.sql.exec<{ p: number }>("SELECT pool_opt_in AS p FROM job WHERE id = 1").one().p === 1;
    const queues = [dispatcher(this.env, { tenant: job.tenant_id }), ...(pool ? [dispatcher(this.env, "pool")] : [])];
    const told = { job: JSON.stringify(job), offer: JSON.stringify([ready.map((e) => e.task_id), withdrawn]) };
    // Succeeded tasks whose outputs the tenant has not recorded (its cache and artifact registry).
    const completed = rows
      .filter((r) => r.status === "succeeded" && r.recorded === 0)
      .map((r) => ({
        task_id: r.task_id as string,
        cache_key: r.cache_key as string,
        cacheable: !bool(r.cache_hit) && r.kind !== "artifact_import",
        outputs_json: r.outputs_json as string,
      }));
    const dataset = this.jobDataset();
    try {
      await Promise.all([
        told.job !== this.told.job || completed.length > 0
          ? tenantStore(this.env, job.tenant_id).syncJob(job, this.latestEventId(), {
              dataset: dataset && { dataset_id: dataset.dataset_id, manifest_hash: dataset.manifest_hash },
              tasks: completed,
            })
          : null,
        ...(told.offer !== this.told.offer ? queues.map((q) => q.offer(job.tenant_id, job.job_id, ready, withdrawn)) : []),
      ]);
      this.told = told;
      for (const t of completed) this.sql.exec("UPDATE tasks SET recorded = 1 WHERE task_id = ?", t.task_id);
      this.sql.exec("UPDATE job SET sync_pending = 0 WHERE id = 1 AND sync_pending = 1");
    } catch (err) {
      // The change itself is durable here; the index and the queues catch up from the alarm.
      console.warn(`job ${job.job_id}: propagation failed, retrying`, err);
      this.told = { job: "", offer: "" };
      this.sql.exec("UPDATE job SET sync_pending = 1 WHERE id = 1");
      await this.scheduleAlarm();
    }
  }
}

export function leaseLinks(leaseId: string) {
  const base = `/v1/leases/${leaseId}`;
  return {
    self: { href: base },
    heartbeat: { href: `${base}:heartbeat` },
    events: { href: `${base}/events` },
    blobs: { href: `${base}/blobs/{sha}` },
    checkpoint: { href: `${base}/checkpoint` },
    complete: { href: `${base}:complete` },
    fail: { href: `${base}:fail` },
    release: { href: `${base}:release` },
  };
}

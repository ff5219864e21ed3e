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
 *
 * The class is the object's RPC surface only: each method hands the object's context (its
 * storage, bindings and live streams) to the feature module under job/ that does the work.
 */
import { DurableObject } from "cloudflare:workers";
import type { Checkpoint, RunnerEvent, TaskOutputs } from "../../protocol";
import type { FieldError } from "../errors";
import { mayRead, recordBlob } from "./job/blobs";
import { complete, completeMany, fail, judge, release } from "./job/completion";
import type { JobContext } from "./job/context";
import { openStream } from "./job/events";
import { Fanout } from "./job/fanout";
import { expireLeases, grantLease, heartbeat, leaseActive, leaseTask, shardContext } from "./job/leases";
import { type ListedBlocks, pairListContext } from "./job/pair-list";
import { createJob } from "./job/plan";
import { progress } from "./job/progress";
import { propagate, scheduleAlarm } from "./job/propagate";
import { detail, frozenDataset, inputArtifacts, jobRow, oneshotAbandoned } from "./job/records";
import { announceSnapshots, postEvents, putCheckpoint } from "./job/reports";
import { shardResultPage } from "./job/shards";
import { cancel, enforceRuntime, resume } from "./job/status";
import { JOB_MIGRATIONS } from "./job-migrations";
import { type JobPlan, type Judgement, type LeaseHolder, type LeaseScope, ONESHOT_RECIPE, oneshotPrefix } from "./job-rows";
import { type PageRequest, migrate } from "./sql";

export class JobStore extends DurableObject<Env> {
  private readonly cx: JobContext;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.cx = {
      storage: ctx.storage,
      sql: ctx.storage.sql,
      env,
      fanout: new Fanout(ctx),
      told: { job: "", offer: "" },
      sync: { running: null, next: null },
      frozen: null,
    };
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage, JOB_MIGRATIONS));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  // ---- creation and reads (2.9, 4.8) ----

  async create(plan: JobPlan) {
    const row = await createJob(this.cx, plan);
    // A one-shot job's alarm discards it should its request never come back for it.
    if (plan.recipe === ONESHOT_RECIPE) await scheduleAlarm(this.cx);
    return row;
  }
  detail() {
    return detail(this.cx);
  }
  progress() {
    return progress(this.cx);
  }
  /** A page of the job's shard results with their files' digests (runners.md "Trust"). */
  shardResults(taskId: string | null, page: PageRequest) {
    return shardResultPage(this.cx, taskId, page);
  }
  frozenDataset() {
    return frozenDataset(this.cx);
  }
  /** A one-shot job (4.15): its blobs live beside it, not in the tenant's store. */
  ephemeral(): boolean {
    return jobRow(this.cx)?.recipe === ONESHOT_RECIPE;
  }
  /** The id of the artifact the job was given for `role` (2.11), or null. */
  inputArtifactId(role: string): string | null {
    return (jobRow(this.cx) && inputArtifacts(this.cx)[role]?.artifact_id) || null;
  }

  // ---- cancel and resume (3.1) ----

  async cancel(force: boolean) {
    return cancel(this.cx, force);
  }
  async resume() {
    return resume(this.cx);
  }

  // ---- leases (3.2.3) and what their holders report ----

  /** Up to `count` shards of the task (one for a task that is not sharded, none with `onlyShards`), each its own lease; `inputsByRef`: see grantLease. */
  async lease(taskId: string, holder: LeaseHolder, count = 1, onlyShards = false, inputsByRef = false) {
    return grantLease(this.cx, taskId, holder, count, onlyShards, inputsByRef);
  }
  leaseActive(leaseId: string) {
    return leaseActive(this.cx, leaseId);
  }
  heartbeat(leaseId: string, scope: LeaseScope) {
    return heartbeat(this.cx, leaseId, scope);
  }
  leaseTask(leaseId: string, scope: LeaseScope) {
    return leaseTask(this.cx, leaseId, scope);
  }
  shardContext(leaseId: string, scope: LeaseScope) {
    return shardContext(this.cx, leaseId, scope);
  }
  /** Each lease's ShardContext, null for a whole-task lease or one not held (its completion refuses it): one call for a batch. */
  shardContexts(leaseIds: string[], scope: LeaseScope) {
    return leaseIds.map((id) => {
      const context = shardContext(this.cx, id, scope);
      return context.ok ? context.value : null;
    });
  }
  pairListContext(leaseId: string, scope: LeaseScope) {
    return pairListContext(this.cx, leaseId, scope);
  }
  postEvents(leaseId: string, scope: LeaseScope, events: RunnerEvent[]) {
    return postEvents(this.cx, leaseId, scope, events);
  }
  recordBlob(leaseId: string, scope: LeaseScope, sha: string, byteSize: number) {
    return recordBlob(this.cx, leaseId, scope, sha, byteSize);
  }
  mayRead(leaseId: string, scope: LeaseScope, sha: string) {
    return mayRead(this.cx, leaseId, scope, sha);
  }
  announceSnapshots(leaseId: string, scope: LeaseScope, sealed: { seq: number; summary: Record<string, unknown> }[]) {
    return announceSnapshots(this.cx, leaseId, scope, sealed);
  }
  putCheckpoint(leaseId: string, scope: LeaseScope, checkpoint: Checkpoint) {
    return putCheckpoint(this.cx, leaseId, scope, checkpoint);
  }

  // ---- how a leased task ends (3.1, 3.2) ----

  async complete(
    leaseId: string,
    scope: LeaseScope,
    outputs: TaskOutputs,
    policy?: { replicate: boolean; refused?: FieldError[]; blocks?: ListedBlocks },
  ) {
    return complete(this.cx, leaseId, scope, outputs, policy);
  }
  /** Several leases of one runner completed in one call (runners.md "Batching"; trusted leases). */
  async completeMany(runnerId: string, scope: LeaseScope, entries: { lease_id: string; outputs: TaskOutputs; refused?: FieldError[] }[]) {
    return completeMany(this.cx, runnerId, scope, entries);
  }
  /** The validation service's decision on a result `complete` answered `compare` for (runners.md "Trust"). */
  async judge(leaseId: string, scope: LeaseScope, resultId: number, judgement: Judgement) {
    return judge(this.cx, leaseId, scope, resultId, judgement);
  }
  async fail(leaseId: string, scope: LeaseScope, error: { error_class: string; message: string; detail: Record<string, unknown> | null }) {
    return fail(this.cx, leaseId, scope, error);
  }
  async release(leaseId: string, scope: LeaseScope, reason: string) {
    return release(this.cx, leaseId, scope, reason);
  }

  /**
   * Lease expiry (3.2.3): a vanished runner's task goes back to the queue. Also retries a
   * propagation that failed, and fails a job past its `max_runtime_seconds`.
   */
  override async alarm(): Promise<void> {
    if (oneshotAbandoned(this.cx)) return this.discardOneshot();
    expireLeases(this.cx);
    if (!jobRow(this.cx)) return;
    enforceRuntime(this.cx);
    await propagate(this.cx);
    await scheduleAlarm(this.cx);
  }

  /**
   * A one-shot job gone (4.15): cancelled (its offer withdrawn, a lease revoked), every R2 object
   * under its prefix deleted, then the object emptied. What its request does once answered, and
   * what the job's alarm does for a request whose Worker died before it could.
   */
  async discardOneshot(): Promise<void> {
    const job = jobRow(this.cx);
    if (!job || job.recipe !== ONESHOT_RECIPE) return;
    await cancel(this.cx, true).catch(() => {});
    const prefix = oneshotPrefix(job.tenant_id, job.job_id);
    for (;;) {
      const listed = await this.env.BLOBS.list({ prefix });
      if (listed.objects.length > 0) await this.env.BLOBS.delete(listed.objects.map((o) => o.key));
      if (!listed.truncated) break;
    }
    await this.purge();
  }

  /** Project deletion (4.2 cascade): drops everything and closes the streams. */
  async purge(): Promise<void> {
    this.cx.fanout.closeAll("job deleted");
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.cx.frozen = null;
    // An empty schema again, so a late request finds no job (404) rather than no table.
    migrate(this.ctx.storage, JOB_MIGRATIONS);
  }

  // ---- live streams (6): SSE and hibernatable WebSockets ----

  override async fetch(request: Request): Promise<Response> {
    return openStream(this.cx, request);
  }

  override async webSocketMessage(): Promise<void> {
    // The stream is server-to-client; "ping" is answered without waking the object (constructor).
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    ws.close(code === 1005 ? 1000 : code, "closing");
  }
}

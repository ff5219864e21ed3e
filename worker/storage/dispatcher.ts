/**
 * @module Dispatcher: where runners find work. One SQLite-backed Durable Object per dispatch
 * scope: `tenant/<id>` for a tenant's own runners (its API key, or any runner in `none` mode)
 * and `pool` for volunteer runners, which lease only tasks of projects that opted in. Each holds
 * the runners registered in its scope and a queue of the tasks that are ready to lease (every
 * dependency met), offered by the jobs' JobStores. The pool object also keeps the runner tokens.
 *
 * A queue entry is only a hint: the JobStore decides whether the task is still leasable, so an
 * entry made stale by a cancel or by a lease through the other queue is simply dropped.
 */
import { DurableObject } from "cloudflare:workers";
import { MAX_LEASES, type RunnerAbilities, type TaskKind } from "../../protocol";
import type { QueueEntry } from "./job-rows";
import { type Grant, parseLeaseId } from "./job/leases";
import { type Outcome, clash, missing, ok } from "./outcome";
import { migrate, nowIso } from "./sql";
import { jobStore, tenantStore } from "./stubs";

export const MIGRATIONS = [
  [
    `CREATE TABLE runners (
      runner_id TEXT PRIMARY KEY, name TEXT NOT NULL, stages_json TEXT NOT NULL, runtime_json TEXT NOT NULL,
      rv_id TEXT NOT NULL, abilities_json TEXT NOT NULL, registered_at TEXT NOT NULL, last_seen_at TEXT NOT NULL,
      current_lease_id TEXT, claiming_until INTEGER NOT NULL DEFAULT 0)`,
    `CREATE TABLE queue (
      tenant_id TEXT NOT NULL, task_id TEXT NOT NULL, job_id TEXT NOT NULL, project_id TEXT NOT NULL, kind TEXT NOT NULL,
      rv_id TEXT NOT NULL, enqueued_at INTEGER NOT NULL, held_until INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant_id, task_id))`,
    `CREATE INDEX queue_by_need ON queue(kind, rv_id, enqueued_at)`,
    `CREATE TABLE runner_tokens (
      token_id TEXT PRIMARY KEY, name TEXT, digest TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT)`,
  ],
  // Entries say how many leases they can still give (a sharded task's pending shards) and the
  // memory a runner needs for them (a map task's model).
  [`ALTER TABLE queue ADD COLUMN units INTEGER NOT NULL DEFAULT 1`, `ALTER TABLE queue ADD COLUMN min_memory INTEGER NOT NULL DEFAULT 0`],
  // Untrusted results (runners.md "Trust"): a pool runner belongs to the token it registered with,
  // and a token whose runner returned a wrong result is quarantined (refused from then on).
  [
    `ALTER TABLE runners ADD COLUMN token_id TEXT`,
    `ALTER TABLE runner_tokens ADD COLUMN quarantined_at TEXT`,
    `ALTER TABLE runner_tokens ADD COLUMN quarantine_reason TEXT`,
  ],
  // How many of a token's results other runners confirmed: below SVC_POOL_VALIDATION_TRUST_AFTER, all are replicated.
  [`ALTER TABLE runner_tokens ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 0`],
  // A task routed to the WGSL provider (4.16) is leased only to runners with a WebGPU adapter.
  [`ALTER TABLE queue ADD COLUMN needs_webgpu INTEGER NOT NULL DEFAULT 0`],
  // Keyless volunteers (browsers without a key, when the operator allows them): one token per
  // client address (its digest), so an address is one principal however many tabs it opens.
  [
    `ALTER TABLE runner_tokens ADD COLUMN keyless_address TEXT`,
    `CREATE UNIQUE INDEX runner_tokens_by_address ON runner_tokens(keyless_address)`,
  ],
  // A runner may hold several leases (runners.md "Batching": a multi-shard lease); the leases it
  // holds move here from runners.current_lease_id, which is no longer read.
  [
    `CREATE TABLE held_leases (runner_id TEXT NOT NULL, lease_id TEXT NOT NULL, PRIMARY KEY (runner_id, lease_id))`,
    `INSERT INTO held_leases (runner_id, lease_id) SELECT runner_id, current_lease_id FROM runners WHERE current_lease_id IS NOT NULL`,
  ],
];

/** Kinds a real GPU computes faster (SIFT, descriptor matching): runners with one get them first. */
const GPU_KINDS = ["extract", "match"];

/** A runner whose adapter is real hardware, not a software fallback (SwiftShader, llvmpipe). */
export const hasRealGpu = (a: RunnerAbilities) =>
  a.webgpu !== null &&
  !a.webgpu.adapter.is_fallback_adapter &&
  !/swiftshader|llvmpipe|software/i.test(`${a.webgpu.adapter.description} ${a.webgpu.adapter.architecture} ${a.webgpu.adapter.device}`);

/** A lease request waiting for work (long poll), woken by the next offer it could take. */
interface Waiter {
  kinds: string[];
  rv_id: string;
  gpu: boolean;
  webgpu: boolean;
  wake: () => void;
}

/**
 * How long a claimed entry (and the claiming runner) is held while its JobStore is asked for the
 * lease. Only a request that dies in between makes this matter; the entry is then offered again.
 */
const CLAIM_HOLD_MS = 10_000;

/** How many stale queue entries one lease request skips before answering "nothing to do". */
const MAX_CLAIMS = 16;

export interface RunnerRow {
  runner_id: string;
  name: string;
  stages: TaskKind[];
  runtime_versions: Record<string, string>;
  rv_id: string;
  abilities: RunnerAbilities;
  registered_at: string;
  last_seen_at: string;
}

export interface RunnerTokenRow {
  token_id: string;
  name: string | null;
  created_at: string;
  revoked_at: string | null;
  quarantined_at: string | null;
  quarantine_reason: string | null;
  /** Results of the token's runners that another runner's confirmed (runners.md "Trust"). */
  confirmed: number;
}

export type KeylessTokenRow = RunnerTokenRow & { digest: string; issued: boolean };

/** A live token: its id, its confirmed results, and why it is quarantined when it is. */
export interface TokenState {
  token_id: string;
  confirmed: number;
  quarantined_at: string | null;
  quarantine_reason: string | null;
}

/**
 * What a claim found: a task to lease, nothing, or the lease the runner already holds. `principal`
 * is who answers for the runner's results: its token in the pool (one volunteer may run many
 * runners), else the runner itself.
 */
export type Claim = { entry: QueueEntry | null; held: null; principal: string } | { entry: null; held: string; principal: string };

const TOKEN_COLUMNS = "token_id, name, created_at, revoked_at, quarantined_at, quarantine_reason, confirmed";

type Row = Record<string, SqlStorageValue>;

const runnerOf = (r: Row): RunnerRow => ({
  runner_id: r.runner_id as string,
  name: r.name as string,
  stages: JSON.parse(r.stages_json as string),
  runtime_versions: JSON.parse(r.runtime_json as string),
  rv_id: r.rv_id as string,
  abilities: JSON.parse(r.abilities_json as string),
  registered_at: r.registered_at as string,
  last_seen_at: r.last_seen_at as string,
});

export class Dispatcher extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** Lease requests held open until work is offered (in memory: a restart answers them, and runners ask again). */
  private readonly waiters = new Set<Waiter>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage, MIGRATIONS));
  }

  // ---- runners ----

  /**
   * Registers a runner (its id chosen by the caller, which picked this shard by it); a pool runner
   * with the id of the token it presented (`tokenId`). A pool token's registrations are limited to `limit.max` per `limit.windowMs`
   * (sliding window over its runners' registered_at), answered with the wait before the next one.
   */
  registerRunner(
    input: Omit<RunnerRow, "registered_at" | "last_seen_at">,
    tokenId: string | null = null,
    limit: { max: number; windowMs: number } | null = null,
  ): RunnerRow | { retryAfterMs: number } {
    if (tokenId !== null && limit) {
      const recent = this.sql
        .exec<{ registered_at: string }>(
          "SELECT registered_at FROM runners WHERE token_id = ? AND registered_at > ? ORDER BY registered_at DESC LIMIT ?",
          tokenId,
          new Date(Date.now() - limit.windowMs).toISOString(),
          limit.max,
        )
        .toArray();
      if (recent.length >= limit.max) {
        // The oldest of the last `max` registrations leaves the window first.
        return { retryAfterMs: Date.parse(recent.at(-1)!.registered_at) + limit.windowMs - Date.now() };
      }
    }
    const now = nowIso();
    const row: RunnerRow = { ...input, registered_at: now, last_seen_at: now };
    this.sql.exec(
      `INSERT INTO runners (runner_id, name, stages_json, runtime_json, rv_id, abilities_json, registered_at, last_seen_at, token_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.runner_id,
      row.name,
      JSON.stringify(row.stages),
      JSON.stringify(row.runtime_versions),
      row.rv_id,
      JSON.stringify(row.abilities),
      now,
      now,
      tokenId,
    );
    return row;
  }

  /** The runners of this scope seen since `sinceMs` (operators' diagnostics, 4.17 doctor). */
  liveRunners(sinceMs: number): RunnerRow[] {
    return this.sql
      .exec("SELECT * FROM runners WHERE last_seen_at >= ? ORDER BY last_seen_at DESC LIMIT 100", new Date(sinceMs).toISOString())
      .toArray()
      .map(runnerOf);
  }

  getRunner(runnerId: string): RunnerRow | null {
    const r = this.sql.exec("SELECT * FROM runners WHERE runner_id = ?", runnerId).toArray()[0];
    return r ? runnerOf(r) : null;
  }

  /** Whether a runner of this scope that computes `kind` under `rvId` asked for work since `sinceMs` (a live runner that could answer a one-shot request). */
  hasLiveRunner(kind: TaskKind, rvId: string, sinceMs: number): boolean {
    const since = new Date(sinceMs).toISOString();
    return (
      this.sql
        .exec(
          "SELECT 1 FROM runners WHERE rv_id = ? AND last_seen_at >= ? AND ? IN (SELECT value FROM json_each(stages_json)) LIMIT 1",
          rvId,
          since,
          kind,
        )
        .toArray().length > 0
    );
  }

  /**
   * Leases work for the runner (runners.md "Lease semantics"), holding the request open up to
   * `waitMs` (long poll) until some is offered. The queue only proposes; the job's JobStore grants
   * (or refuses a stale proposal), so a task or shard is never leased twice whatever the race.
   * One call from the Worker per lease request: claiming, granting and settling happen here.
   * Answers the Leases as JSON texts (at most `max`, runners.md "Batching"; empty when nothing came
   * within `waitMs`); 404 for an unknown runner, 409 while it still holds a live lease. `ended`: the
   * leases the runner just completed (`:complete` with `x-lease_next`), forgotten first in the same call.
   * `inputsByRef`: a task's further leases name its first's inputs (runners.md "Inputs by reference").
   */
  async lease(
    runnerId: string,
    tokenId: string | null,
    waitMs: number,
    ended: string[] = [],
    max = 1,
    inputsByRef = false,
  ): Promise<Outcome<string[]>> {
    if (ended.length > 0) this.forgetLeases(runnerId, ended);
    const deadline = Date.now() + waitMs;
    for (;;) {
      const leased = await this.leaseNext(runnerId, tokenId, Math.max(1, Math.min(MAX_LEASES, max)), inputsByRef);
      if (!leased.ok || leased.value.length > 0) return leased;
      const left = deadline - Date.now();
      if (left <= 0) return leased;
      await this.waitForWork(runnerId, left);
    }
  }

  /** One attempt: up to `max` of the oldest ready tasks (or shards) the runner can compute, leased; none when there is none. */
  private async leaseNext(runnerId: string, tokenId: string | null, max: number, inputsByRef: boolean): Promise<Outcome<string[]>> {
    // Entries whose job had no shard for this runner (only replicas of its own results): skipped for the rest of this request.
    const skip: string[] = [];
    const leases: string[] = [];
    const own: string[] = [];
    for (let i = 0; i < MAX_CLAIMS && leases.length < max; i++) {
      const claimed = this.claim(runnerId, tokenId, skip, max - leases.length, own);
      if (!claimed.ok) return claimed;
      const claim = claimed.value;
      if (claim.held !== null) {
        const where = parseLeaseId(claim.held);
        if (where && (await jobStore(this.env, where.tenant, where.job).leaseActive(claim.held))) {
          return clash(`runner ${runnerId} already holds lease ${claim.held}: complete, fail or release it first`);
        }
        this.forgetLeases(runnerId, [claim.held]);
        continue;
      }
      const entry = claim.entry;
      if (!entry) break;
      const pool = tokenId !== null;
      let granted: Grant = { leases: [], left: 0 };
      try {
        const allowed = !pool || (await tenantStore(this.env, entry.tenant_id).getProject(entry.project_id))?.pool_opt_in === true;
        if (allowed)
          granted = await jobStore(this.env, entry.tenant_id, entry.job_id).lease(
            entry.task_id,
            { runner_id: runnerId, pool, principal: claim.principal },
            max - leases.length,
            leases.length > 0,
            inputsByRef,
          );
      } finally {
        // Settled whatever happened (an object that failed to answer: the entry is offered again).
        this.settleClaim(runnerId, entry, granted);
      }
      leases.push(...granted.leases.map((g) => g.lease));
      own.push(...granted.leases.map((g) => g.lease_id));
      if (granted.whole && granted.leases.length > 0) break;
      if (granted.leases.length === 0 && granted.left > 0) skip.push(`${entry.tenant_id}/${entry.task_id}`);
    }
    return ok(leases);
  }

  /** A runner of this scope as `tokenId` may use it: a pool runner only with the token it registered with (its results are that token's). */
  private usableRunner(runnerId: string, tokenId: string | null): Row | null {
    const runner = this.sql.exec("SELECT * FROM runners WHERE runner_id = ?", runnerId).toArray()[0];
    return runner && (runner.token_id === null || runner.token_id === tokenId) ? runner : null;
  }

  /** Whether the caller may act as this runner (a batch completion names it): 404 as a lease request would answer. */
  checkRunner(runnerId: string, tokenId: string | null): Outcome<null> {
    return this.usableRunner(runnerId, tokenId) ? ok(null) : missing("runner");
  }

  /**
   * The oldest ready task this runner can compute (its stages, its runtime's rv_id), up to `want`
   * of its units taken for the runner while the lease is made (the last one held). A runner holds
   * the leases of one request at a time (one, unless it asks for more: runners.md "Batching"), so a
   * crashed runner loses at most those (3.2.3): when it already holds one, the claim names it instead.
   */
  private claim(runnerId: string, tokenId: string | null, skip: string[], want: number, own: string[]): Outcome<Claim> {
    const runner = this.usableRunner(runnerId, tokenId);
    if (!runner) return missing("runner");
    const principal = (runner.token_id as string | null) ?? runnerId;
    const now = Date.now();
    if ((runner.claiming_until as number) > now) return clash("this runner already has a lease request in flight");
    // Leases granted earlier in this request (`own`) do not count: it goes on taking up to its `max`.
    const held = this.sql
      .exec<{ lease_id: string }>(
        "SELECT lease_id FROM held_leases WHERE runner_id = ? AND lease_id NOT IN (SELECT value FROM json_each(?)) LIMIT 1",
        runnerId,
        JSON.stringify(own),
      )
      .toArray()[0];
    if (held) {
      this.sql.exec("UPDATE runners SET last_seen_at = ? WHERE runner_id = ?", nowIso(), runnerId);
      return ok({ entry: null, held: held.lease_id, principal });
    }
    const abilities = JSON.parse(runner.abilities_json as string) as RunnerAbilities;
    // Scheduling by ability: a real GPU takes SIFT and matching first, other runners the rest
    // first; a map task only where its model fits in the runner's memory (when the runner says).
    const entry = this.sql
      .exec<QueueEntry & Row>(
        `SELECT tenant_id, job_id, task_id, project_id, kind, rv_id, units, min_memory, needs_webgpu FROM queue
         WHERE kind IN (SELECT value FROM json_each(?)) AND rv_id = ? AND held_until <= ? AND min_memory <= ? AND needs_webgpu <= ?
           AND tenant_id || '/' || task_id NOT IN (SELECT value FROM json_each(?))
         ORDER BY (kind IN (SELECT value FROM json_each(?))) = ? DESC, enqueued_at, task_id LIMIT 1`,
        runner.stages_json,
        runner.rv_id,
        now,
        abilities.memory_bytes ?? Number.MAX_SAFE_INTEGER,
        abilities.webgpu !== null ? 1 : 0,
        JSON.stringify(skip),
        JSON.stringify(GPU_KINDS),
        hasRealGpu(abilities) ? 1 : 0,
      )
      .toArray()[0];
    this.sql.exec(
      "UPDATE runners SET last_seen_at = ?, claiming_until = ? WHERE runner_id = ?",
      nowIso(),
      entry ? now + CLAIM_HOLD_MS : 0,
      runnerId,
    );
    if (!entry) return ok({ entry: null, held: null, principal });
    // An entry with more leases to give than wanted stays offered to others; the last ones are held while they are leased.
    if (entry.units > want)
      this.sql.exec("UPDATE queue SET units = units - ? WHERE tenant_id = ? AND task_id = ?", want, entry.tenant_id, entry.task_id);
    else
      this.sql.exec(
        "UPDATE queue SET held_until = ? WHERE tenant_id = ? AND task_id = ?",
        now + CLAIM_HOLD_MS,
        entry.tenant_id,
        entry.task_id,
      );
    return ok({ entry: { ...entry, needs_webgpu: Number(entry.needs_webgpu) === 1 }, held: null, principal });
  }

  /**
   * Ends a claim: the runner records its lease, and the entry takes the JobStore's count of what
   * is left to lease (its units; the queue's own count is only a guess between grants), leaving
   * the queue when nothing is. Waiting requests are woken for what is left.
   */
  private settleClaim(runnerId: string, entry: QueueEntry, granted: Grant): void {
    if (granted.left > 0)
      this.sql.exec(
        "UPDATE queue SET held_until = 0, units = ? WHERE tenant_id = ? AND task_id = ?",
        granted.left,
        entry.tenant_id,
        entry.task_id,
      );
    else this.sql.exec("DELETE FROM queue WHERE tenant_id = ? AND task_id = ?", entry.tenant_id, entry.task_id);
    this.sql.exec("UPDATE runners SET claiming_until = 0 WHERE runner_id = ?", runnerId);
    for (const g of granted.leases)
      this.sql.exec("INSERT OR IGNORE INTO held_leases (runner_id, lease_id) VALUES (?, ?)", runnerId, g.lease_id);
    if (granted.left > 0 && this.waiters.size > 0) this.wakeFor([{ ...entry, units: granted.left }]);
  }

  /**
   * Holds a lease request open (long poll) until work this runner could take is offered, or
   * `ms` pass. Answers whether it was woken; the caller then claims again.
   */
  private async waitForWork(runnerId: string, ms: number): Promise<boolean> {
    const runner = this.getRunner(runnerId);
    if (!runner) return false;
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        kinds: runner.stages,
        rv_id: runner.rv_id,
        gpu: hasRealGpu(runner.abilities),
        webgpu: runner.abilities.webgpu !== null,
        wake: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve(false);
      }, ms);
      this.waiters.add(waiter);
    });
  }

  /** Wakes as many waiting lease requests as the offered entries can give leases, GPU runners first for GPU kinds. */
  private wakeFor(entries: QueueEntry[]): void {
    for (const e of entries) {
      const fit = [...this.waiters].filter((w) => w.kinds.includes(e.kind) && w.rv_id === e.rv_id && (w.webgpu || !e.needs_webgpu));
      if (GPU_KINDS.includes(e.kind)) fit.sort((a, b) => Number(b.gpu) - Number(a.gpu));
      for (const w of fit.slice(0, Math.max(1, e.units))) w.wake();
    }
  }

  /** The runner no longer holds these leases (they ended, or expired). */
  forgetLeases(runnerId: string, leaseIds: string[]): void {
    this.sql.exec(
      "DELETE FROM held_leases WHERE runner_id = ? AND lease_id IN (SELECT value FROM json_each(?))",
      runnerId,
      JSON.stringify(leaseIds),
    );
  }

  // ---- the queue ----

  /** A JobStore offers its ready tasks and withdraws those no longer leasable. Idempotent. */
  offer(tenantId: string, jobId: string, ready: QueueEntry[], withdrawn: string[]): void {
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      for (const taskId of withdrawn)
        this.sql.exec("DELETE FROM queue WHERE tenant_id = ? AND task_id = ? AND job_id = ?", tenantId, taskId, jobId);
      for (const e of ready) {
        this.sql.exec(
          `INSERT INTO queue (tenant_id, task_id, job_id, project_id, kind, rv_id, enqueued_at, units, min_memory, needs_webgpu) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (tenant_id, task_id) DO UPDATE SET units = excluded.units`,
          e.tenant_id,
          e.task_id,
          e.job_id,
          e.project_id,
          e.kind,
          e.rv_id,
          now,
          e.units,
          e.min_memory,
          e.needs_webgpu ? 1 : 0,
        );
      }
    });
    this.wakeFor(ready);
  }

  // ---- runner tokens (pool scope) ----

  issueToken(name: string | null, digest: string, tokenId: string): RunnerTokenRow {
    const row: RunnerTokenRow = {
      token_id: tokenId,
      name,
      created_at: nowIso(),
      revoked_at: null,
      quarantined_at: null,
      quarantine_reason: null,
      confirmed: 0,
    };
    this.sql.exec(
      "INSERT INTO runner_tokens (token_id, name, digest, created_at) VALUES (?, ?, ?, ?)",
      tokenId,
      name,
      digest,
      row.created_at,
    );
    return row;
  }

  /**
   * The keyless token of a client address (`address`: its digest): the one it already has, whatever
   * its state (revoked or quarantined tokens stay the address's), else `proposal`, issued now.
   * Answers the row, its stored digest, and whether it was issued by this call.
   */
  keylessToken(address: string, proposal: { token_id: string; digest: string; name: string }): KeylessTokenRow {
    const created = nowIso();
    const inserted = this.sql.exec(
      "INSERT INTO runner_tokens (token_id, name, digest, created_at, keyless_address) VALUES (?, ?, ?, ?, ?) ON CONFLICT (keyless_address) DO NOTHING",
      proposal.token_id,
      proposal.name,
      proposal.digest,
      created,
      address,
    ).rowsWritten;
    const r = this.sql.exec(`SELECT ${TOKEN_COLUMNS}, digest FROM runner_tokens WHERE keyless_address = ?`, address).toArray()[0]!;
    return { ...(r as unknown as RunnerTokenRow), digest: r.digest as string, issued: inserted > 0 };
  }

  /** Gives a token a new digest (a keyless token derived under a new signing key). */
  rekey(tokenId: string, digest: string): void {
    this.sql.exec("UPDATE runner_tokens SET digest = ? WHERE token_id = ?", digest, tokenId);
  }

  listTokens(): RunnerTokenRow[] {
    return this.sql.exec(`SELECT ${TOKEN_COLUMNS} FROM runner_tokens ORDER BY token_id`).toArray() as unknown as RunnerTokenRow[];
  }

  revokeToken(tokenId: string): RunnerTokenRow | null {
    this.sql.exec("UPDATE runner_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE token_id = ?", nowIso(), tokenId);
    const r = this.sql.exec(`SELECT ${TOKEN_COLUMNS} FROM runner_tokens WHERE token_id = ?`, tokenId).toArray()[0];
    return (r as unknown as RunnerTokenRow | undefined) ?? null;
  }

  /** A live (not revoked) token, by digest, with its quarantine. */
  resolveToken(digest: string): TokenState | null {
    const r = this.sql
      .exec<{ token_id: string; confirmed: number; quarantined_at: string | null; quarantine_reason: string | null }>(
        "SELECT token_id, confirmed, quarantined_at, quarantine_reason FROM runner_tokens WHERE digest = ? AND revoked_at IS NULL",
        digest,
      )
      .toArray()[0];
    return r ? { ...r } : null;
  }

  /** Lifts a token's quarantine; its record starts again (every result replicated until it has one anew). */
  reinstate(tokenId: string): RunnerTokenRow | null {
    this.sql.exec("UPDATE runner_tokens SET quarantined_at = NULL, quarantine_reason = NULL, confirmed = 0 WHERE token_id = ?", tokenId);
    const r = this.sql.exec(`SELECT ${TOKEN_COLUMNS} FROM runner_tokens WHERE token_id = ?`, tokenId).toArray()[0];
    return (r as unknown as RunnerTokenRow | undefined) ?? null;
  }

  /** Counts a result of a pool token (a pool runner's principal) that another runner confirmed. */
  credit(tokenId: string): void {
    this.sql.exec("UPDATE runner_tokens SET confirmed = confirmed + 1 WHERE token_id = ?", tokenId);
  }

  /**
   * Quarantines a pool token (a pool runner's principal: one of its runners returned a result that
   * disagreed with a trusted or independent one): every request with the token is refused from now
   * on. The first reason stays.
   */
  quarantine(tokenId: string, reason: string): void {
    this.sql.exec(
      "UPDATE runner_tokens SET quarantined_at = COALESCE(quarantined_at, ?), quarantine_reason = COALESCE(quarantine_reason, ?) WHERE token_id = ?",
      nowIso(),
      reason,
      tokenId,
    );
  }
}

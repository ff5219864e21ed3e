/**
 * @module The runner protocol's logic (reference-only extension): who a runner is, how it finds
 * and leases a task, and how its lease is addressed. A runner with a tenant's API key (or any
 * runner in `none` mode) works in that tenant's scope; a runner with a runner token works in the
 * volunteer pool and leases only tasks of projects with `x-pool_opt_in: true`.
 */
import { ulid } from "../storage/ids";
import type { JobDetail, Runner, RunnerRegister, TaskKind } from "../../protocol";
import { ApiError, notFound, unauthorized } from "../errors";
import type { LeaseScope } from "../storage/job-rows";
import { parseLeaseId } from "../storage/job/leases";
import { digestKey, secret } from "../storage/key-registry";
import type { RunnerRow, TokenState } from "../storage/dispatcher";
import { readConfig } from "../config";
import { bearer } from "../middleware/auth";
import { runtimeVersions, rvIdOf } from "./runtime";
import { deploymentMac } from "./signed-urls";
import { type DispatchScope, dispatcher, dispatchers, jobStore, runnerDispatcher, tenantStore, unwrap } from "./stores";

/** `sfr_<ULID>_<random>`: a pool runner's credential, issued by an operator (4.17 style). */
export const RUNNER_TOKEN = /^sfr_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]+$/;

/** A runner's credential: its dispatch scope and, in the pool, the id of its runner token. */
export interface RunnerCredential {
  scope: DispatchScope;
  tokenId: string | null;
  /** The pool token's confirmed results (runners.md "Trust"); 0 elsewhere. */
  confirmed: number;
}

/**
 * The caller's credential: the operator's scope for its token, the pool for a valid runner token
 * (403 once the token is quarantined: runners.md "Trust"), else the request's tenant.
 */
export async function credentialOf(env: Env, authorization: string | undefined, tenantId: string | undefined): Promise<RunnerCredential> {
  const raw = bearer(authorization);
  if (raw?.startsWith("sfo_")) {
    const operator = readConfig(env).operatorRunnerToken;
    if (!operator || digestKey(raw) !== digestKey(operator)) {
      throw new ApiError(401, "auth", "unknown operator runner token", {}, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
    }
    return { scope: "operator", tokenId: null, confirmed: 0 };
  }
  if (raw?.startsWith("sfr_")) {
    const token = RUNNER_TOKEN.test(raw) ? await dispatcher(env, "pool").resolveToken(digestKey(raw)) : null;
    if (!token)
      throw new ApiError(401, "auth", "unknown or revoked runner token", {}, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
    if (token.quarantined_at) throw quarantined(token);
    return { scope: "pool", tokenId: token.token_id, confirmed: token.confirmed };
  }
  if (!tenantId) throw unauthorized("runners authenticate with an API key or a runner token");
  return { scope: { tenant: tenantId }, tokenId: null, confirmed: 0 };
}

/** 403 for a quarantined token (runners.md "Trust"), saying since when and why. */
const quarantined = (token: Omit<TokenState, "confirmed">) =>
  new ApiError(403, "auth", `this runner token is quarantined since ${token.quarantined_at}: ${token.quarantine_reason}`, {
    "x-quarantine": { token_id: token.token_id, quarantined_at: token.quarantined_at, reason: token.quarantine_reason },
  });

/** The caller's dispatch scope (credentialOf). */
export async function scopeOf(env: Env, authorization: string | undefined, tenantId: string | undefined): Promise<DispatchScope> {
  return (await credentialOf(env, authorization, tenantId)).scope;
}

export const leaseScopeOf = (scope: DispatchScope): LeaseScope => ({ pool: scope === "pool" });

export function runnerResource(r: RunnerRow, scope: DispatchScope, env: Env): Runner {
  const ttl = readConfig(env).leaseTtlMs / 1000;
  const self = `/v1/runners/${r.runner_id}`;
  return {
    runner_id: r.runner_id,
    name: r.name,
    pool: scope === "pool",
    stages: r.stages,
    runtime_versions: r.runtime_versions,
    rv_id: r.rv_id,
    service_rv_id: rvIdOf(runtimeVersions(env)),
    abilities: r.abilities,
    registered_at: r.registered_at,
    lease_ttl_seconds: ttl,
    heartbeat_interval_seconds: Math.max(1, Math.floor(ttl / 3)),
    _links: { self: { href: self }, lease: { href: `${self}:lease` } },
  };
}

/**
 * Registers the caller's runner. A volunteer's token (untrusted: anyone holding it) registers at
 * most `SVC_POOL_REGISTRATIONS_PER_MINUTE` runners a minute, then 429 with `Retry-After`: a leaked
 * or scripted token cannot flood the pool's dispatcher with runners.
 */
export async function registerRunner(env: Env, { scope, tokenId }: RunnerCredential, body: RunnerRegister): Promise<Runner> {
  const perMinute = readConfig(env).poolRegistrationsPerMinute;
  const runnerId = ulid();
  const row = await runnerDispatcher(env, scope, runnerId, tokenId).registerRunner(
    {
      runner_id: runnerId,
      name: body.name,
      stages: body.stages,
      runtime_versions: body.runtime_versions,
      rv_id: rvIdOf(body.runtime_versions),
      abilities: body.abilities,
    },
    tokenId,
    scope === "pool" ? { max: perMinute, windowMs: 60_000 } : null,
  );
  if ("retryAfterMs" in row) {
    const seconds = Math.max(1, Math.ceil(row.retryAfterMs / 1000));
    throw new ApiError(
      429,
      "quota_exceeded",
      `this runner token registered ${perMinute} runners in the last minute (SVC_POOL_REGISTRATIONS_PER_MINUTE); retry in ${seconds} s`,
      {},
      { "Retry-After": String(seconds) },
    );
  }
  return runnerResource(row, scope, env);
}

/**
 * Leases work for the runner, holding the request open up to `waitMs` (long poll) until some is
 * offered: answered the moment a task or shard is ready, so idle runners send one request per
 * ~25 s instead of polling. The runner's Dispatcher claims, has the job's JobStore grant, and
 * settles (storage/dispatcher.ts); the Lease comes back as JSON text, answered as it is, with the
 * others when the runner asked for up to `max` (`x-more_leases`, runners.md "Batching"), or null.
 * 409 while the runner still holds a live lease; `ended`: leases it just completed, forgotten first.
 * `inputsByRef` (`x-inputs_by_ref`): a task's further leases name the first's inputs (runners.md "Inputs by reference").
 */
export async function leaseWaiting(
  env: Env,
  { scope, tokenId }: RunnerCredential,
  runnerId: string,
  waitMs: number,
  { ended = [], max = 1, inputsByRef = false }: { ended?: string[]; max?: number; inputsByRef?: boolean } = {},
): Promise<string | null> {
  const leases = unwrap(await runnerDispatcher(env, scope, runnerId, tokenId).lease(runnerId, tokenId, waitMs, ended, max, inputsByRef));
  if (leases.length === 0) return null;
  const [first, ...more] = leases;
  return more.length === 0 ? first! : `${first!.slice(0, -1)},"x-more_leases":[${more.join(",")}]}`;
}

/**
 * The JobStore of a lease the caller may use: a tenant runner reaches only its tenant's leases
 * (the id names the tenant); a pool lease is usable only in the pool scope (checked by the
 * JobStore); operator runners serve every tenant. The lease id's random part is what makes it unguessable.
 */
export function leaseStore(env: Env, scope: DispatchScope, leaseId: string) {
  const where = parseLeaseId(leaseId);
  if (!where || (typeof scope !== "string" && where.tenant !== scope.tenant)) throw notFound("lease");
  return { store: jobStore(env, where.tenant, where.job), tenant: where.tenant, job: where.job };
}

/** Mints a runner token; the raw token is returned once and only its digest is kept. */
export async function issueRunnerToken(env: Env, name: string | null) {
  const tokenId = ulid();
  const raw = `sfr_${tokenId}_${secret()}`;
  const row = await dispatcher(env, "pool").issueToken(name, digestKey(raw), tokenId);
  return { ...row, raw_token: raw };
}

/**
 * A keyless volunteer's token (runners.md "Who may run what"): a browser without a key that opens
 * `/runner.html` or lends the demo's compute gets one when the operator allows it
 * (`SVC_POOL_KEYLESS_RUNNERS`). One token per client address (an IPv6 address by its /64), so an
 * address is one principal: its tabs never confirm each other's results, its registrations share
 * one token's limit (`SVC_POOL_REGISTRATIONS_PER_MINUTE`), and a quarantine or a revocation holds
 * for the address (asking again answers 403). The raw token is derived from its id with the
 * deployment's signing key, so the address gets the same one each time and only its digest is kept.
 */
export async function keylessRunnerToken(env: Env, clientAddress: string | null) {
  if (!readConfig(env).poolKeylessRunners) {
    throw new ApiError(
      403,
      "auth",
      "this deployment does not accept volunteers without a runner token (SVC_POOL_KEYLESS_RUNNERS is off): ask its operator for one",
    );
  }
  const address = digestKey(`keyless-address\n${addressGroup(clientAddress ?? "unknown")}`);
  const proposal = ulid();
  const proposed = await keylessRaw(env, proposal);
  const pool = dispatcher(env, "pool");
  const { digest, issued, ...row } = await pool.keylessToken(address, {
    token_id: proposal,
    digest: digestKey(proposed),
    name: `keyless volunteer ${address.slice(0, 12)}`,
  });
  if (row.revoked_at) throw new ApiError(403, "auth", `the operator revoked this address's volunteer token at ${row.revoked_at}`);
  if (row.quarantined_at) throw quarantined(row);
  const raw = row.token_id === proposal ? proposed : await keylessRaw(env, row.token_id);
  // Derived under another signing key (SVC_URL_SIGNING_KEY changed): the token takes the new one.
  if (digestKey(raw) !== digest) await pool.rekey(row.token_id, digestKey(raw));
  return { token: { ...row, raw_token: raw }, issued };
}

const keylessRaw = async (env: Env, tokenId: string) => `sfr_${tokenId}_${await deploymentMac(env, `keyless-runner-token\n${tokenId}`)}`;

/**
 * A client address as one volunteer: an IPv4 address whole (an IPv4-mapped IPv6 one too), an
 * IPv6 address by its /64, the usual allocation of one subscriber.
 */
export function addressGroup(ip: string): string {
  const v4 = /(?:^|:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(ip);
  if (v4 || !ip.includes(":")) return v4?.[1] ?? ip;
  const [head = "", tail = ""] = ip.toLowerCase().split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = ip.includes("::") ? [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/** A runner that asked for work this recently is live (an idle runner asks every ~25 s). */
export const LIVE_RUNNER_MS = 60_000;

/**
 * Whether a live runner that computes `kind` under the runtime `rvId` serves the tenant: one of
 * its own, one of the deployment's (operator token), or, for a project open to it, the pool's.
 */
export async function liveRunnerServes(env: Env, tenantId: string, kind: TaskKind, rvId: string, pool = false): Promise<boolean> {
  const since = Date.now() - LIVE_RUNNER_MS;
  // A runner registers with one shard of its scope's dispatcher: every shard is asked.
  const scopes = [
    ...dispatchers(env, { tenant: tenantId }),
    ...(readConfig(env).operatorRunnerToken ? dispatchers(env, "operator") : []),
    ...(pool ? dispatchers(env, "pool") : []),
  ];
  return (await Promise.all(scopes.map((d) => d.hasLiveRunner(kind, rvId, since)))).includes(true);
}

/**
 * Says what a live job waits for (our extension `x-waiting_for`, on the job and on each task
 * ready to be leased): a runner that computes the task's kind for its runtime, when none that
 * serves the tenant asked for work within the last minute. Null on the job when nothing waits so.
 */
export async function withWaitingFor(env: Env, tenantId: string, job: JobDetail): Promise<JobDetail> {
  const live = ["pending", "running"].includes(job.status) && !job.cancel_requested;
  const succeeded = new Set(job.tasks.filter((t) => t.status === "succeeded").map((t) => t.task_id));
  const ready = live ? job.tasks.filter((t) => t.status === "pending" && t.depends_on.every((d) => succeeded.has(d))) : [];
  const pool = ready.length > 0 && ((await tenantStore(env, tenantId).getProject(job.project_id))?.pool_opt_in ?? false);
  const waiting = new Map<string, string>();
  for (const t of ready) {
    const kind = t["x-stage_kind"] ?? t.kind;
    if (await liveRunnerServes(env, tenantId, kind, t.rv_id, pool)) continue;
    waiting.set(
      t.task_id,
      `a runner that computes '${kind}' for runtime ${t.rv_id.slice(0, 12)}: none has asked for work in the last ${LIVE_RUNNER_MS / 1000} s`,
    );
  }
  return {
    ...job,
    "x-waiting_for": [...waiting.values()][0] ?? null,
    tasks: job.tasks.map((t) => (waiting.has(t.task_id) ? { ...t, "x-waiting_for": waiting.get(t.task_id)! } : t)),
  };
}

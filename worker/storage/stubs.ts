/** @module Stubs of the Durable Objects: which object a name reaches. Storage and services both address objects through these. */
import { readConfig } from "../config";

/**
 * Object ids by name, per namespace. `idFromName` hashes the name each call, and on the lease and
 * completion paths it cost more CPU than any other step (about a quarter of the Worker's time in
 * `npm run bench -- dispatch`); an id is plain data, valid in any request, so it is derived once
 * per isolate. Bounded: past `MAX_IDS` names the map starts again.
 */
const ids = new WeakMap<object, Map<string, DurableObjectId>>();
const MAX_IDS = 10_000;

function idOf<T extends Rpc.DurableObjectBranded | undefined>(ns: DurableObjectNamespace<T>, name: string): DurableObjectId {
  let byName = ids.get(ns);
  if (!byName) ids.set(ns, (byName = new Map()));
  let id = byName.get(name);
  if (!id) {
    if (byName.size >= MAX_IDS) byName.clear();
    byName.set(name, (id = ns.idFromName(name)));
  }
  return id;
}

/** The caller's own tenant object: the only one a request can reach (5.3). */
export const tenantStore = (env: Env, tenantId: string) => env.TENANT.get(idOf(env.TENANT, tenantId));

/** A job's own object, named under its tenant so no other tenant's request can reach it (5.3). */
export const jobStore = (env: Env, tenantId: string, jobId: string) => env.JOB.get(idOf(env.JOB, `${tenantId}/${jobId}`));

/**
 * Where runners find work: a tenant's own queue, the volunteer pool's, or the operator's (the
 * deployment's own trusted runners, serving every tenant; only when an operator runner token is set).
 */
export type DispatchScope = { tenant: string } | "pool" | "operator";

/**
 * Shard `shard` of a scope's dispatcher (runners.md "Dispatcher shards"). The scopes every tenant
 * shares, the volunteer pool and the operator's runners, are spread over `SVC_DISPATCH_SHARDS`
 * objects, each holding its runners, their waiting lease requests and a copy of the scope's queue,
 * so no one object serialises every lease of the deployment; a tenant's own scope is one object
 * (already one per tenant). Shard 0 keeps the scope's own name and the pool's runner tokens.
 */
export const dispatcher = (env: Env, scope: DispatchScope, shard = 0) => env.DISPATCH.get(idOf(env.DISPATCH, dispatcherName(scope, shard)));

const dispatcherName = (scope: DispatchScope, shard: number) =>
  `${typeof scope === "string" ? scope : `tenant/${scope.tenant}`}${shard ? `#${shard}` : ""}`;

const shardsOf = (env: Env, scope: DispatchScope) => (typeof scope === "string" ? readConfig(env).dispatchShards : 1);

/** Every shard of a scope's dispatcher (what a job offers its ready tasks to). */
export const dispatchers = (env: Env, scope: DispatchScope) =>
  Array.from({ length: shardsOf(env, scope) }, (_, k) => dispatcher(env, scope, k));

/**
 * The shard that holds a runner: by its id, or in the pool by its token's (one volunteer's runners
 * share a shard, which counts their registrations).
 */
export const runnerDispatcher = (env: Env, scope: DispatchScope, runnerId: string, tokenId: string | null) =>
  dispatcher(env, scope, fnv1a(scope === "pool" && tokenId ? tokenId : runnerId) % shardsOf(env, scope));

/** 32-bit FNV-1a of a string's UTF-16 code units: a cheap, stable spread of ids over shards. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** The single key registry. */
export const keyRegistry = (env: Env) => env.KEYS.get(idOf(env.KEYS, "global"));

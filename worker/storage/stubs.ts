/** @module Stubs of the Durable Objects: which object a name reaches. Storage and services both address objects through these. */

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
export const dispatcher = (env: Env, scope: DispatchScope) =>
  env.DISPATCH.get(idOf(env.DISPATCH, typeof scope === "string" ? scope : `tenant/${scope.tenant}`));

/** The single key registry. */
export const keyRegistry = (env: Env) => env.KEYS.get(idOf(env.KEYS, "global"));

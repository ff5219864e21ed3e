/** @module Stubs of the Durable Objects: which object a name reaches. Storage and services both address objects through these. */

/** The caller's own tenant object: the only one a request can reach (5.3). */
export const tenantStore = (env: Env, tenantId: string) => env.TENANT.get(env.TENANT.idFromName(tenantId));

/** A job's own object, named under its tenant so no other tenant's request can reach it (5.3). */
export const jobStore = (env: Env, tenantId: string, jobId: string) => env.JOB.get(env.JOB.idFromName(`${tenantId}/${jobId}`));

/**
 * Where runners find work: a tenant's own queue, the volunteer pool's, or the operator's (the
 * deployment's own trusted runners, serving every tenant; only when an operator runner token is set).
 */
export type DispatchScope = { tenant: string } | "pool" | "operator";
export const dispatcher = (env: Env, scope: DispatchScope) =>
  env.DISPATCH.get(env.DISPATCH.idFromName(typeof scope === "string" ? scope : `tenant/${scope.tenant}`));

/** The single key registry. */
export const keyRegistry = (env: Env) => env.KEYS.get(env.KEYS.idFromName("global"));

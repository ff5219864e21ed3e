/** @module Stubs of the Durable Objects: which object a name reaches. Storage and services both address objects through these. */

/** The caller's own tenant object: the only one a request can reach (5.3). */
export const tenantStore = (env: Env, tenantId: string) => env.TENANT.get(env.TENANT.idFromName(tenantId));

/** A job's own object, named under its tenant so no other tenant's request can reach it (5.3). */
export const jobStore = (env: Env, tenantId: string, jobId: string) => env.JOB.get(env.JOB.idFromName(`${tenantId}/${jobId}`));

/** Where runners find work: a tenant's own queue, or the volunteer pool's. */
export type DispatchScope = { tenant: string } | "pool";
export const dispatcher = (env: Env, scope: DispatchScope) =>
  env.DISPATCH.get(env.DISPATCH.idFromName(scope === "pool" ? "pool" : `tenant/${scope.tenant}`));

/** The single key registry. */
export const keyRegistry = (env: Env) => env.KEYS.get(env.KEYS.idFromName("global"));

/** @module Stubs of the Durable Objects, and the unwrapping of their outcomes into ApiErrors. */
import { ApiError } from "../errors";
import type { Failure, Outcome } from "../storage/outcome";

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

const SLUG = { 404: "not_found", 409: "conflict", 422: "validation" } as const;

export function failure(f: Failure): ApiError {
  return new ApiError(f.status, SLUG[f.status], f.detail, f.errors ? { errors: f.errors } : {});
}

/** The value of an outcome, or its failure thrown as an ApiError. */
export function unwrap<T>(o: Outcome<T>): T {
  if (o.ok) return o.value;
  throw failure(o);
}

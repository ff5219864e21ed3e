/** @module The Durable Objects as services see them: their stubs, and their outcomes unwrapped into ApiErrors. */
import { ApiError } from "../errors";
import type { Failure, Outcome } from "../storage/outcome";

export { type DispatchScope, dispatcher, dispatchers, jobStore, keyRegistry, runnerDispatcher, tenantStore } from "../storage/stubs";

const SLUG = { 404: "not_found", 409: "conflict", 422: "validation" } as const;

export function failure(f: Failure): ApiError {
  return new ApiError(f.status, SLUG[f.status], f.detail, f.errors ? { errors: f.errors } : {});
}

/** The value of an outcome, or its failure thrown as an ApiError. */
export function unwrap<T>(o: Outcome<T>): T {
  if (o.ok) return o.value;
  throw failure(o);
}

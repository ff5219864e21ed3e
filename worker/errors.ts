/**
 * @module Errors as RFC 7807 problem details (spec 7). Every non-2xx response of the API is
 * built here, from an `ApiError` thrown anywhere below the routes.
 */
import type { Problem } from "../protocol";

/** The spec's error classes (7), used as the slug of `type`. */
export type ErrorSlug =
  | "bad_request"
  | "auth"
  | "tenant_violation"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "quota_exceeded"
  | "range_not_satisfiable"
  | "validation"
  | "precondition_failed"
  | "capability_unavailable"
  | "engine_unavailable"
  | "storage"
  | "unavailable"
  | "internal";

export const TITLES: Record<ErrorSlug, string> = {
  bad_request: "Bad request",
  auth: "Authentication required",
  tenant_violation: "Forbidden",
  not_found: "Not found",
  method_not_allowed: "Method not allowed",
  conflict: "Conflict",
  payload_too_large: "Payload too large",
  unsupported_media_type: "Unsupported media type",
  quota_exceeded: "Quota exceeded",
  range_not_satisfiable: "Range not satisfiable",
  validation: "Validation failed",
  precondition_failed: "Precondition failed",
  capability_unavailable: "Capability unavailable",
  engine_unavailable: "Engine unavailable",
  storage: "Storage error",
  unavailable: "Service unavailable",
  internal: "Internal error",
};

export interface FieldError {
  path: string;
  message: string;
  code: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly slug: ErrorSlug,
    detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "ApiError";
  }
}

export const badRequest = (detail: string) => new ApiError(400, "bad_request", detail);
export const unauthorized = (detail: string) => new ApiError(401, "auth", detail, {}, { "WWW-Authenticate": 'Bearer realm="edgesfm"' });
export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const conflict = (detail: string) => new ApiError(409, "conflict", detail);
export const payloadTooLarge = (detail: string) => new ApiError(413, "payload_too_large", detail);
export const validation = (detail: string, errors: FieldError[] = []) => new ApiError(422, "validation", detail, { errors });
export const capabilityUnavailable = (capability: string, detail?: string) =>
  new ApiError(501, "capability_unavailable", detail ?? `capability '${capability}' is not available on this deployment`, {
    capability,
  });

/** `{errors_base}/<slug>`: the deployment's base, else this service's own /errors pages. */
export function problemBody(err: ApiError, instance: string, errorsBase: string): Problem {
  return {
    type: `${errorsBase}/${err.slug}`,
    title: TITLES[err.slug],
    status: err.status,
    detail: err.message,
    instance,
    ...err.extra,
  };
}

export function problemResponse(err: ApiError, instance: string, errorsBase: string): Response {
  return new Response(JSON.stringify(problemBody(err, instance, errorsBase)), {
    status: err.status,
    headers: { "Content-Type": "application/problem+json", ...err.headers },
  });
}

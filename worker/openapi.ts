/**
 * @module The OpenAPI 3.1 document (spec 4.1) and the entries every route shares: JSON bodies and
 * answers, problem+json for each error status.
 */
import type { OpenAPIHono, z } from "@hono/zod-openapi";
import { Problem } from "../protocol";
import { type AppEnv, SERVICE_NAME, SERVICE_VERSION, SPEC_VERSION } from "./context";
import { TITLES } from "./errors";

/** A required JSON request body of `schema`. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });

/** A JSON answer of `schema`. */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });

const DESCRIPTIONS: Record<number, string> = {
  400: TITLES.bad_request,
  401: TITLES.auth,
  403: TITLES.tenant_violation,
  404: TITLES.not_found,
  409: TITLES.conflict,
  413: TITLES.payload_too_large,
  416: TITLES.range_not_satisfiable,
  422: TITLES.validation,
  429: TITLES.quota_exceeded,
  501: TITLES.capability_unavailable,
};

export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [s, { content: { "application/problem+json": { schema: Problem } }, description: DESCRIPTIONS[s] ?? "error" }]),
  ) as Record<number, { content: { "application/problem+json": { schema: typeof Problem } }; description: string }>;
}

type Operation = { responses?: Record<string, unknown> };

/**
 * The document of every route `app` serves. Every non-2xx answer is problem+json (7), so each
 * operation also says so for the statuses it does not list (`default`).
 */
export function openApiDocument(app: OpenAPIHono<AppEnv>, origin: string) {
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "EdgeSfM API",
      version: SERVICE_VERSION,
      description: `${SERVICE_NAME}: Structure-from-Motion as a service (SfM Service Interface Specification ${SPEC_VERSION}).`,
    },
    servers: [{ url: origin }],
  });
  const problem = {
    description: "any other error: RFC 7807 problem details (7)",
    content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
  };
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item as Record<string, Operation>)) {
      if (op.responses) op.responses.default ??= problem;
    }
  }
  return doc;
}

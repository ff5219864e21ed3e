/** @module OpenAPI entries shared by every route: JSON bodies and answers, problem+json for each error status. */
import { z } from "@hono/zod-openapi";
import { Problem } from "../protocol";
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
  501: TITLES.capability_unavailable,
};

export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [s, { content: { "application/problem+json": { schema: Problem } }, description: DESCRIPTIONS[s] ?? "error" }]),
  ) as Record<number, { content: { "application/problem+json": { schema: typeof Problem } }; description: string }>;
}

/** @module OpenAPI response entries shared by every route: problem+json for each error status. */
import { Problem } from "../protocol";
import { TITLES } from "./errors";

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

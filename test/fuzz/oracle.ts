/**
 * @module What every answer to a fuzz request must be (spec 7): never a 5xx (a 501 counts only
 * when the operation documents it and names its `capability`); every error an RFC 7807
 * `application/problem+json` whose `status` is the HTTP status and whose `type` ends in a slug;
 * a status the document lists for the operation (or one every route may answer); and what the
 * request's mutation calls for (a refusal for invalid input, a given status for some).
 */
import type { FuzzRequest } from "./requests";

/** Statuses any route may answer, whatever the document lists. */
const ANY_ROUTE = new Set([400, 401, 404, 405, 413, 415, 429, 503]);

export interface Verdict {
  /** One line naming what is wrong, stable across requests of the same fault (for grouping). */
  fault: string;
  detail: string;
  /** A gap in the document rather than in the service (an answer the operation does not list). */
  undocumented?: boolean;
}

/**
 * Operations that take no API key by design (worker/app.ts): a keyless volunteer's token, which
 * the operator's setting grants (201/200) or refuses (403) whatever the Authorization header says.
 */
const KEYLESS_OPERATIONS = new Set(["POST /v1/runner-tokens"]);
const keyless = (req: FuzzRequest) => !!req.op && KEYLESS_OPERATIONS.has(`${req.op.method} ${req.op.path}`);

export function judge(req: FuzzRequest, res: { status: number; contentType: string; body: string }): Verdict | null {
  const { status } = res;
  const where = req.op ? `${req.op.method} ${req.op.path}` : `${req.method} (no operation)`;
  const mutation = req.mutation.split(":")[0];
  const fail = (what: string, detail = "") => ({ fault: `${where} [${mutation}]: ${what}`, detail });

  const capability501 = status === 501 && !!req.op?.statuses.has(501);
  if (status >= 500 && !capability501) return fail(`${status}`, res.body.slice(0, 500));
  if (status >= 400) {
    if (!res.contentType.startsWith("application/problem+json"))
      return fail(`${status} is not problem+json (${res.contentType || "no type"})`, res.body.slice(0, 300));
    let p: Record<string, unknown>;
    try {
      p = JSON.parse(res.body) as Record<string, unknown>;
    } catch {
      return fail(`${status} problem body is not JSON`, res.body.slice(0, 300));
    }
    for (const k of ["type", "title", "status", "instance"]) if (!(k in p)) return fail(`problem lacks '${k}'`, res.body.slice(0, 300));
    if (p.status !== status) return fail(`problem status ${String(p.status)} differs from HTTP ${status}`);
    if (typeof p.type !== "string" || !/\/[a-z_]+$/.test(p.type))
      return fail(`problem type '${String(p.type)}' is not {errors_base}/<slug>`);
    if (typeof p.instance !== "string" || !p.instance.startsWith("/"))
      return fail(`problem instance '${String(p.instance)}' is not the request path`);
    if (status === 501 && typeof p.capability !== "string") return fail("501 without a capability member");
    if (status === 422 && !Array.isArray(p.errors)) return fail("422 without errors[]");
  }
  if (req.apiKeyMode && req.target.startsWith("/v1/") && !req.target.startsWith("/v1/admin/") && !keyless(req) && status !== 401) {
    return fail(`${status} without a valid API key (expected 401)`);
  }
  // A capability the deployment lacks answers 501 before anything else is looked at (1.1).
  if (capability501) return null;
  const e = req.expect;
  if (e.kind === "reject" && status < 400) return fail(`accepted (${status}) what its schema refuses`, req.mutation);
  if (e.kind === "status" && !e.statuses.includes(status) && !(req.apiKeyMode && status === 401)) {
    return fail(`${status} where ${e.statuses.join(" or ")} was due`, req.mutation);
  }
  if (req.op && status >= 400 && !req.op.statuses.has(status) && !ANY_ROUTE.has(status)) {
    return { ...fail(`${status} is not documented for the operation`), undocumented: true };
  }
  return null;
}

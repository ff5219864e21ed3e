/**
 * @module The one typed fetch client of the demo. Every request carries the API key (spec 5,
 * `Authorization: Bearer`) when one is set, and every non-2xx answer becomes a `ProblemError`
 * holding the RFC 7807 problem+json body (spec 7), so the UI can show its `title` and `detail`.
 */
import type { Problem } from "../../../protocol/schemas/common";

const KEY_STORAGE = "edgesfm.api_key";

/** A non-2xx answer, or a network failure dressed as a problem so the UI has one error shape. */
export class ProblemError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ? `${problem.title}: ${problem.detail}` : problem.title);
    this.name = "ProblemError";
  }
  get status(): number {
    return this.problem.status;
  }
}

/** The stored API key (api_key mode), or "" in the open `none` mode. */
export function apiKey(): string {
  return localStorage.getItem(KEY_STORAGE) ?? "";
}

export function setApiKey(key: string): void {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export function authHeaders(init?: HeadersInit): Headers {
  const headers = new Headers(init);
  const key = apiKey();
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return headers;
}

/** A problem for an answer that is not problem+json (a proxy page, an empty body). */
function problemOf(res: Response, body: string, path: string): Problem {
  try {
    const parsed = JSON.parse(body) as Partial<Problem>;
    if (typeof parsed.title === "string") return { type: "about:blank", instance: path, status: res.status, ...parsed } as Problem;
  } catch {
    // not JSON: fall through to a generic problem naming the status
  }
  return { type: "about:blank", title: `HTTP ${res.status} ${res.statusText}`.trim(), status: res.status, detail: body.slice(0, 300) || undefined, instance: path };
}

/** fetch with auth; a non-2xx answer (except those listed in `accept`) throws a ProblemError. */
export async function request(path: string, init: RequestInit = {}, accept: number[] = []): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers: authHeaders(init.headers) });
  } catch (e) {
    if (init.signal?.aborted) throw e;
    throw new ProblemError({
      type: "about:blank",
      title: "Network error",
      status: 0,
      detail: `the server could not be reached (${e instanceof Error ? e.message : String(e)})`,
      instance: path,
    });
  }
  if (!res.ok && !accept.includes(res.status)) throw new ProblemError(problemOf(res, await res.text(), path));
  return res;
}

export async function getJson<T>(path: string, init?: RequestInit): Promise<T> {
  return (await request(path, init)).json() as Promise<T>;
}

export async function sendJson<T>(method: "POST" | "PATCH" | "PUT", path: string, body: unknown, headers?: HeadersInit): Promise<T> {
  const h = new Headers(headers);
  h.set("Content-Type", "application/json");
  return (await request(path, { method, headers: h, body: JSON.stringify(body) })).json() as Promise<T>;
}

/** An object URL for bytes that need the API key (an <img src> cannot send Authorization). */
export async function authedObjectUrl(path: string): Promise<string> {
  return URL.createObjectURL(await (await request(path)).blob());
}

/** The error as one line for a status region: problem title and detail, or the message. */
export function describeError(e: unknown): string {
  if (e instanceof ProblemError) return e.message;
  return e instanceof Error ? e.message : String(e);
}

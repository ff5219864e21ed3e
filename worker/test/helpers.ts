/** @module Test helpers for requests against the Worker inside workerd. */
import { createExecutionContext, env, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { EdgeSfmClient, type FetchLike, type JobEvent, type UploadOptions, collect } from "../../client/index";
import { DEFAULT_TENANT } from "../context";
import worker from "../index";
import { tenantStore } from "../services/stores";

export const BASE = "http://edgesfm.test";

export type Body = unknown;
export type Reply = Awaited<ReturnType<typeof call>>;
type Fetch = (req: Request) => Promise<Response>;

function request(method: string, path: string, body?: Body, headers: Record<string, string> = {}): Request {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body instanceof Uint8Array || body instanceof ReadableStream || typeof body === "string") init.body = body as BodyInit;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["Content-Type"] ??= "application/json";
  }
  return new Request(`${BASE}${path}`, init);
}

async function reply(res: Response) {
  if (!/json/.test(res.headers.get("Content-Type") ?? "")) return { res, status: res.status, json: undefined as any, headers: res.headers };
  // Read whole (an unread body holds its connection open), and kept readable for fetchOf's client.
  const text = await res.text();
  const json = JSON.parse(text);
  const kept = new Response(res.status === 204 || res.status === 304 ? null : text, res);
  return { res: kept, status: res.status, json, headers: res.headers };
}

/** A caller of the Worker through `fetch` (a deployment of its own, say): status, headers and parsed JSON of each answer. */
export const caller =
  (fetch: Fetch) =>
  async (method: string, path: string, body?: Body, headers: Record<string, string> = {}) =>
    reply(await fetch(request(method, path, body, headers)));

/**
 * `fetch` of the Worker as deployed by wrangler.toml, for the client (runners, event streams).
 * The module's own handler, called directly: under vitest-pool-workers each `SELF.fetch` costs
 * more than the one before it in the same workerd (6 ms for the first requests of a file, 750 ms
 * after 1,200; workers-sdk#15446), which made long files take ten minutes; a direct call stays
 * flat at about 2.5 ms. The Worker keeps no `waitUntil` work, so the answer is all there is.
 */
export const selfFetch: FetchLike = async (req) => worker.fetch(req, env as Env, createExecutionContext());

/** A request to the Worker as deployed by wrangler.toml. */
export const call = caller(selfFetch);

/**
 * Force-cancels every pending or running job of the default tenant: its queue is shared by every
 * test of a file, so an `afterEach` leaves no job a later test's runner could lease.
 */
export async function cancelLiveJobs(): Promise<void> {
  for (const status of ["pending", "running"]) {
    for (const j of (await call("GET", `/v1/jobs?status=${status}&page_size=500`)).json.items)
      await call("POST", `/v1/jobs/${j.job_id}:cancel?force=true`);
  }
}

/**
 * A client of the same Worker deployed with other vars (auth mode, limits, lifetimes), as an
 * operator would set them (the app reads its config from `env` on every request), or with a
 * binding replaced (an R2 bucket that fails, say).
 */
export function deployment(vars: Record<string, unknown>) {
  return caller(async (req) => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, { ...env, ...vars } as Env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  });
}

export type Call = typeof call;

/**
 * One tenant of the Worker deployed in `api_key` mode: its `call`, and a `fetch` for clients
 * that send their own requests (runners). Each test file's traffic in its own tenant keeps it
 * out of the default tenant's queue, which other files' runners lease from.
 */
export async function tenantClient(tenantId: string): Promise<{ key: string; call: Call; fetch: FetchLike }> {
  const key = (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: tenantId }), 201)).json.raw_key as string;
  const fetchAs = async (request: Request) => {
    const req = new Request(request);
    if (!req.headers.has("Authorization")) req.headers.set("Authorization", `Bearer ${key}`);
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, { ...env, SVC_AUTH_MODE: "api_key" } as unknown as Env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };
  return { key, call: caller(fetchAs), fetch: fetchAs };
}

/** Callers of the Worker in `api_key` mode, each with a fresh key of one of `tenants` (5.3 isolation tests). */
export async function tenantCallers(...tenants: string[]): Promise<Call[]> {
  return Promise.all(tenants.map(async (tenant) => (await tenantClient(tenant)).call));
}

export { sha256Hex } from "../../client/index";

/** Every event of an ended job, as its SSE stream delivers them (one connection, read by the client). */
export function jobEvents(jid: string, fetch: FetchLike = selfFetch): Promise<JobEvent[]> {
  return collect(new EdgeSfmClient({ baseUrl: BASE, fetch }).events(jid, { reconnect: false }));
}

/**
 * The `fetch` of a caller, for the client: each request goes through `via` (its deployment, tenant
 * and credential) with `headers` added, and its Response comes back unread.
 */
export function fetchOf(via: Call, headers: Record<string, string> = {}): FetchLike {
  return async (req) => {
    const url = new URL(req.url);
    const sent: Record<string, string> = {};
    req.headers.forEach((value, name) => (sent[name] = value));
    const body = req.body ? new Uint8Array(await req.arrayBuffer()) : undefined;
    return (await via(req.method, url.pathname + url.search, body, { ...sent, ...headers })).res;
  };
}

/** Uploads bytes with the client's upload (4.3) through `via` with `headers`; returns the blob sha. */
export async function uploadBlob(
  bytes: Uint8Array,
  headers: Record<string, string> = {},
  via: Call = call,
  o: UploadOptions = {},
): Promise<string> {
  return (await new EdgeSfmClient({ baseUrl: BASE, fetch: fetchOf(via, headers) }).upload(bytes, o)).blob_sha;
}

/**
 * GET of a sealed snapshot file (or tile) as a browser would read it: in `api_key` mode the keyed
 * request answers 307 to the file's signed link, which is followed (without the key).
 */
export async function getSealed(via: Call, path: string): Promise<Reply> {
  const first = await via("GET", path);
  if (first.status !== 307) return first;
  const signed = new URL(first.headers.get("Location")!, BASE);
  return via("GET", `${signed.pathname}${signed.search}`);
}

/** Calls and checks the status, returning the reply (a failing check shows the body). */
export async function expectStatus(p: Promise<Reply>, status: number): Promise<Reply> {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.json)}`);
  return r;
}

/** A project, and a dataset in it (an empty `upload` dataset unless `source` says otherwise). */
export async function newDataset(opts: { source?: unknown; via?: Call; headers?: Record<string, string> } = {}) {
  const via = opts.via ?? call;
  const p = await expectStatus(via("POST", "/v1/projects", { name: "p" }, opts.headers), 201);
  const body = { name: "d", source: opts.source ?? { kind: "upload", entries: [] } };
  const d = await expectStatus(via("POST", `/v1/projects/${p.json.project_id}/datasets`, body, opts.headers), 201);
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string, dataset: d.json };
}

export function expectProblem(r: { status: number; json: any; headers: Headers }, status: number, slug?: string) {
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.json)}`);
  if (!r.headers.get("Content-Type")?.startsWith("application/problem+json"))
    throw new Error(`not problem+json: ${r.headers.get("Content-Type")}`);
  for (const k of ["type", "title", "status", "instance"]) if (!(k in r.json)) throw new Error(`problem lacks ${k}`);
  if (r.json.status !== status) throw new Error(`problem status ${r.json.status} differs from HTTP ${status}`);
  if (slug && !r.json.type.endsWith(`/${slug}`)) throw new Error(`expected slug ${slug}, got ${r.json.type}`);
}

/** A 422 whose `errors[]` names `path` (with `code`, when given). */
export function expectFieldError(r: Reply, path: string, code?: string) {
  expectProblem(r, 422, "validation");
  const hit = (r.json.errors as { path: string; message: string; code: string }[]).find((e) => e.path === path);
  if (!hit) throw new Error(`no error at '${path}': ${JSON.stringify(r.json.errors)}`);
  if (typeof hit.message !== "string" || !hit.message) throw new Error(`error at '${path}' has no message`);
  if (code && hit.code !== code) throw new Error(`error at '${path}' has code ${hit.code}, not ${code}`);
}

/** Moves the expiry of the tenant's uploads matching `where` into the past, as if their lifetime had run out. */
export async function expireUploads(where: string, ...params: SqlStorageValue[]): Promise<void> {
  await runInDurableObject(tenantStore(env, DEFAULT_TENANT), (_o, state) => {
    state.storage.sql.exec(`UPDATE uploads SET expires_at = ? WHERE ${where}`, new Date(0).toISOString(), ...params);
  });
}

/**
 * Runs one pass of the tenant's alarm (upload expiry, then R2 garbage) inside the object, after
 * any pass already under way: deterministic, unlike waiting for the scheduled alarm.
 */
export async function collectGarbage(): Promise<void> {
  await runInDurableObject(tenantStore(env, DEFAULT_TENANT), (o) => o.alarm());
}

/** A new project's dataset of n images of distinct contents (`img000.jpg`, ...: text, no decodable size, 1 MP to the planner). */
export async function textDataset(n: number, project: Record<string, unknown> = {}) {
  const p = await call("POST", "/v1/projects", { name: "text images", ...project });
  const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
  const did = d.json.dataset_id as string;
  const salt = Math.random();
  for (let i = 0; i < n; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`image ${i} ${salt}`));
    const r = await call("POST", `/v1/datasets/${did}/images`, { name: `img${String(i).padStart(3, "0")}.jpg`, blob_sha: sha });
    if (r.status !== 201) throw new Error(`image ${i}: ${r.status}`);
  }
  return { pid: p.json.project_id as string, did };
}

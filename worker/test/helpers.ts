/** @module Test helpers for requests against the Worker inside workerd. */
import { SELF } from "cloudflare:test";

export const BASE = "http://edgesfm.test";

export async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body instanceof Uint8Array || typeof body === "string") init.body = body as BodyInit;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  const res = await SELF.fetch(`${BASE}${path}`, init);
  const type = res.headers.get("Content-Type") ?? "";
  const json = /json/.test(type) ? await res.json<any>() : undefined;
  return { res, status: res.status, json, headers: res.headers };
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Uploads bytes in one chunk and finalizes; returns the blob sha. */
export async function uploadBlob(bytes: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  const up = await call("POST", "/v1/uploads", { expected_size: bytes.byteLength }, headers);
  if (up.status !== 201) throw new Error(`upload create: ${up.status} ${JSON.stringify(up.json)}`);
  const id = up.json.upload_id;
  if (bytes.byteLength > 0) {
    const p = await call("PATCH", `/v1/uploads/${id}`, bytes, { ...headers, "Content-Range": `bytes 0-${bytes.byteLength - 1}/${bytes.byteLength}` });
    if (p.status !== 200) throw new Error(`upload patch: ${p.status} ${JSON.stringify(p.json)}`);
  }
  const f = await call("POST", `/v1/uploads/${id}:finalize`, undefined, headers);
  if (f.status !== 200) throw new Error(`finalize: ${f.status} ${JSON.stringify(f.json)}`);
  return f.json.blob_sha;
}

export function expectProblem(r: { status: number; json: any; headers: Headers }, status: number, slug?: string) {
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.json)}`);
  if (!r.headers.get("Content-Type")?.startsWith("application/problem+json")) throw new Error(`not problem+json: ${r.headers.get("Content-Type")}`);
  for (const k of ["type", "title", "status", "instance"]) if (!(k in r.json)) throw new Error(`problem lacks ${k}`);
  if (slug && !r.json.type.endsWith(`/${slug}`)) throw new Error(`expected slug ${slug}, got ${r.json.type}`);
}

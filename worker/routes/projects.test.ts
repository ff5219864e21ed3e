import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEFAULT_TENANT } from "../context";
import { tenantStore } from "../services/stores";
import {
  call,
  collectGarbage,
  expectFieldError,
  expectProblem,
  expectStatus,
  expireUploads,
  newDataset,
  uploadBlob,
} from "../test/helpers";

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe("projects (4.2)", () => {
  it("create answers 201 with a ULID, the tenant, an RFC 3339 timestamp, _links and Location", async () => {
    const r = await expectStatus(call("POST", "/v1/projects", { name: "Lund", description: "street", unknown_field: 1 }), 201);
    expect(r.json).toMatchObject({ name: "Lund", description: "street", tenant_id: DEFAULT_TENANT });
    expect(r.json.project_id).toMatch(ULID);
    expect(r.json.created_at).toMatch(RFC3339_UTC);
    expect(r.json).not.toHaveProperty("unknown_field");
    expect(Object.keys(r.json._links).sort()).toEqual(["datasets", "pipelines", "self"]);
    expect(r.headers.get("Location")).toBe(`/v1/projects/${r.json.project_id}`);
    const got = await expectStatus(call("GET", r.json._links.self.href), 200);
    expect(got.json).toEqual(r.json);
  });

  it("names are not unique and description defaults to null", async () => {
    const a = await call("POST", "/v1/projects", { name: "same" });
    const b = await call("POST", "/v1/projects", { name: "same" });
    expect(a.json.project_id).not.toBe(b.json.project_id);
    expect(a.json.description).toBeNull();
  });

  it("bad bodies answer 422 with typed errors[], malformed JSON 400, oversize 413", async () => {
    expectFieldError(await call("POST", "/v1/projects", {}), "name", "invalid_type");
    expectFieldError(await call("POST", "/v1/projects", { name: 42 }), "name", "invalid_type");
    expectFieldError(await call("POST", "/v1/projects", { name: "   " }), "name", "too_small");
    expectFieldError(await call("POST", "/v1/projects", { name: "x".repeat(257) }), "name", "too_big");
    expectFieldError(await call("POST", "/v1/projects", { name: "n", description: 7 }), "description");
    expectProblem(await call("POST", "/v1/projects", "{not json", { "Content-Type": "application/json" }), 400, "bad_request");
    expectProblem(await call("POST", "/v1/projects", "[1,2", { "Content-Type": "application/json" }), 400, "bad_request");
    expectProblem(await call("POST", "/v1/projects", { name: "n", description: "x".repeat(1_100_000) }), 413, "payload_too_large");
  });

  it("a body that is not JSON answers 415", async () => {
    expectProblem(await call("POST", "/v1/projects", "name=x", { "Content-Type": "text/plain" }), 415, "unsupported_media_type");
    const empty = await call("POST", "/v1/projects");
    expect([400, 415, 422]).toContain(empty.status);
    expectProblem(empty, empty.status);
  });

  it("list paginates with opaque tokens, page_size 1..500 and total", async () => {
    for (let i = 0; i < 3; i++) await call("POST", "/v1/projects", { name: `page-${i}` });
    const all = await expectStatus(call("GET", "/v1/projects?page_size=500"), 200);
    const total = all.json.total as number;
    expect(total).toBeGreaterThanOrEqual(3);
    expect(all.json.next_page_token).toBeNull();
    const seen: string[] = [];
    let token: string | null = null;
    do {
      const r: Awaited<ReturnType<typeof call>> = await call("GET", `/v1/projects?page_size=2${token ? `&page_token=${token}` : ""}`);
      expect(r.json.items.length).toBeLessThanOrEqual(2);
      expect(r.json.total).toBe(total);
      seen.push(...r.json.items.map((p: any) => p.project_id));
      token = r.json.next_page_token;
    } while (token);
    expect(seen).toEqual(all.json.items.map((p: any) => p.project_id));
    expect((await call("GET", "/v1/projects")).json.items.length).toBe(Math.min(total, 50));
    for (const q of ["page_size=0", "page_size=501", "page_size=abc", "page_size=1.5"])
      expectFieldError(await call("GET", `/v1/projects?${q}`), "query.page_size");
    expectFieldError(await call("GET", "/v1/projects?page_token=garbage"), "query.page_token");
  });

  it("get, patch and delete of an absent project answer 404", async () => {
    const absent = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    expectProblem(await call("GET", `/v1/projects/${absent}`), 404, "not_found");
    expectProblem(await call("PATCH", `/v1/projects/${absent}`, { name: "x" }), 404, "not_found");
    expectProblem(await call("DELETE", `/v1/projects/${absent}`), 404, "not_found");
  });

  it("patch without a mask writes the fields present and leaves the others", async () => {
    const p = await call("POST", "/v1/projects", { name: "a", description: "keep" });
    const r = await expectStatus(call("PATCH", `/v1/projects/${p.json.project_id}`, { name: "b" }), 200);
    expect(r.json).toMatchObject({ name: "b", description: "keep" });
    const cleared = await call("PATCH", `/v1/projects/${p.json.project_id}`, { description: null });
    expect(cleared.json).toMatchObject({ name: "b", description: null });
  });

  it("patch with update_mask applies only the named paths, each present in the body", async () => {
    const p = await call("POST", "/v1/projects", { name: "a", description: "d" });
    const path = `/v1/projects/${p.json.project_id}`;
    const r = await expectStatus(call("PATCH", `${path}?update_mask=description`, { name: "ignored", description: "new" }), 200);
    expect(r.json).toMatchObject({ name: "a", description: "new" });
    expectFieldError(await call("PATCH", `${path}?update_mask=name`, { description: "x" }), "name", "missing");
    expectFieldError(await call("PATCH", `${path}?update_mask=tenant_id`, { tenant_id: "x" }), "update_mask.tenant_id", "not_allowed");
    expectFieldError(await call("PATCH", `${path}?update_mask=`, { name: "x" }), "update_mask", "empty");
    expectFieldError(await call("PATCH", path, { name: "" }), "name", "too_small");
    expect((await call("GET", path)).json).toMatchObject({ name: "a", description: "new" });
  });

  it("delete cascades to datasets and images, releases blob references, and the bytes leave R2 after the alarm", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(1000));
    const sha = await uploadBlob(bytes);
    const { pid, did } = await newDataset({ source: { kind: "upload", entries: [{ name: "a.bin", blob_sha: sha }] } });
    const img = (await call("GET", `/v1/datasets/${did}/images`)).json.items[0];
    const stub = tenantStore(env, DEFAULT_TENANT);
    const key = `t/${DEFAULT_TENANT}/blobs/${sha}`;
    expect(await env.BLOBS.head(key)).not.toBeNull();

    await expectStatus(call("DELETE", `/v1/projects/${pid}`), 204);
    expectProblem(await call("GET", `/v1/projects/${pid}`), 404);
    expectProblem(await call("GET", `/v1/projects/${pid}/datasets/${did}`), 404);
    expectProblem(await call("GET", `/v1/datasets/${did}/images`), 404);
    expectProblem(await call("GET", `/v1/images/${img.image_id}`), 404);
    // The finalized upload still holds one reference until it expires (4.3: its blob_sha stays addressable).
    expect((await stub.getBlob(sha))?.refcount).toBe(1);

    await expireUploads("blob_sha = ?", sha);
    await collectGarbage();
    expect(await stub.getBlob(sha)).toBeNull();
    expect(await env.BLOBS.head(key)).toBeNull();
  });

  it("ids that cannot exist answer 422 on the path, never 500", async () => {
    const r = await call("GET", "/v1/projects/bad%20id");
    expect([404, 422]).toContain(r.status);
    expectProblem(r, r.status);
  });
});

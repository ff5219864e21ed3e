import { describe, expect, it } from "vitest";
import { CORE_CAPABILITIES, OPTIONAL_CAPABILITIES } from "../../protocol";
import { call, deployment, expectProblem } from "../test/helpers";

describe("health and meta (4.1)", () => {
  it("healthz answers ok", async () => {
    const r = await call("GET", "/healthz");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: "ok" });
    expect(r.headers.get("X-EdgeSfM-Auth")).toBe("none");
  });

  it("readyz checks the Durable Objects and R2 for real", async () => {
    const r = await call("GET", "/readyz");
    expect(r.status).toBe(200);
    expect(r.json.status).toBe("ok");
    expect(Object.keys(r.json.checks).sort()).toEqual(["blob_store", "key_registry", "tenant_store"]);
  });

  it("readyz answers 503 with the per-check breakdown when a dependency fails", async () => {
    const broken = { head: () => Promise.reject(new Error("R2 unreachable")) };
    const r = await deployment({ BLOBS: broken })("GET", "/readyz");
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({
      status: "unavailable",
      checks: { blob_store: { status: "fail", detail: "R2 unreachable" }, tenant_store: { status: "ok" }, key_registry: { status: "ok" } },
    });
  });

  it("problem types resolve to pages naming the error class", async () => {
    const p = await call("GET", "/v1/nope");
    const page = await call("GET", new URL(p.json.type).pathname);
    expect(page.json).toEqual({ slug: "not_found", title: "Not found" });
    expectProblem(await call("GET", "/errors/no_such_class"), 404, "not_found");
  });

  it("version and spec", async () => {
    const v = await call("GET", "/version");
    expect(v.json.service).toMatch(/^\d+\.\d+\.\d+/);
    expect(v.json.backend.runtime_versions).toBeTypeOf("object");
    const s = await call("GET", "/spec");
    expect(s.json).toEqual({ spec_version: "v1.0-draft", spec_url: null });
  });

  it("capabilities: core true, every optional name present, none claimed that is not implemented", async () => {
    const r = await call("GET", "/v1/capabilities");
    expect(r.json.backend).toMatchObject({ name: expect.any(String), version: expect.any(String), vendor: expect.any(String) });
    for (const c of CORE_CAPABILITIES) expect(r.json.features[c]).toBe(true);
    for (const c of OPTIONAL_CAPABILITIES) expect(typeof r.json.features[c]).toBe("boolean");
  });

  it("camera models list COLMAP's layouts and paginate", async () => {
    const r = await call("GET", "/v1/camera-models?page_size=3");
    expect(r.json.total).toBeGreaterThanOrEqual(9);
    expect(r.json.items).toHaveLength(3);
    expect(r.json.items[2]).toMatchObject({ name: "SIMPLE_RADIAL", params: ["f", "cx", "cy", "k"], num_params: 4, extra_params_idxs: [3] });
    const next = await call("GET", `/v1/camera-models?page_size=500&page_token=${r.json.next_page_token}`);
    expect(next.json.items.map((m: any) => m.name)).toContain("SPHERICAL");
    expect(next.json.next_page_token).toBeNull();
  });

  it("metrics are Prometheus text", async () => {
    const r = await call("GET", "/metrics");
    expect(await r.res.text()).toMatch(/# TYPE edgesfm_http_requests_total counter/);
  });

  it("openapi.json is OpenAPI 3.1 and lists the routes", async () => {
    const r = await call("GET", "/openapi.json");
    expect(r.json.openapi).toBe("3.1.0");
    expect(Object.keys(r.json.paths)).toEqual(
      expect.arrayContaining(["/v1/projects", "/v1/uploads/{uid}:finalize", "/v1/datasets/{did}/images:batchCreate", "/v1/images/{image_id}/thumbnail"]),
    );
    // Custom methods are documented under their spec path only, never under the router's regex path.
    expect(Object.keys(r.json.paths).filter((p) => /[[\]()]|\/:/.test(p))).toEqual([]);
    expect(r.json.paths["/v1/uploads/{uid}:finalize"].post.parameters).toContainEqual(expect.objectContaining({ name: "uid", in: "path" }));
  });

  it("unknown routes and wrong methods are problem+json", async () => {
    expectProblem(await call("GET", "/v1/nope"), 404, "not_found");
    const r = await call("PUT", "/v1/projects");
    expectProblem(r, 405, "method_not_allowed");
    expect(r.headers.get("Allow")).toContain("POST");
  });

  it("CORS preflight exposes the spec's headers", async () => {
    const r = await call("OPTIONS", "/v1/projects", undefined, { Origin: "https://app.example", "Access-Control-Request-Method": "POST" });
    expect(r.status).toBe(204);
    const get = await call("GET", "/healthz", undefined, { Origin: "https://app.example" });
    const exposed = get.headers.get("Access-Control-Expose-Headers") ?? "";
    for (const h of ["ETag", "Last-Modified", "Content-Range", "Location", "Link"]) expect(exposed).toContain(h);
  });
});

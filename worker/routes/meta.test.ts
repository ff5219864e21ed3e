import { describe, expect, it } from "vitest";
import { CORE_CAPABILITIES, OPTIONAL_CAPABILITIES, RUNNER_PROTOCOL_VERSION } from "../../protocol";
import { createApp } from "../app";
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
      checks: {
        blob_store: { status: "fail", detail: expect.stringContaining("R2 unreachable") },
        tenant_store: { status: "ok" },
        key_registry: { status: "ok" },
      },
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
    // What runs: the engine and shader builds the deployment set (unbuilt when none), and the runner protocol.
    expect(v.json.backend.runtime_versions).toEqual({ "engine-wasm": "unbuilt", shaders: "unbuilt" });
    expect(v.json["x-runner_protocol"]).toBe(RUNNER_PROTOCOL_VERSION);
    const built = { "engine-wasm": "a".repeat(64), shaders: "b".repeat(64) };
    const deployed = await deployment({ SVC_RUNTIME_VERSIONS: JSON.stringify(built) })("GET", "/version");
    expect(deployed.json.backend.runtime_versions).toEqual(built);
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
      expect.arrayContaining([
        "/v1/projects",
        "/v1/uploads/{uid}:finalize",
        "/v1/datasets/{did}/images:batchCreate",
        "/v1/images/{image_id}/thumbnail",
      ]),
    );
    // Custom methods are documented under their spec path only, never under the router's regex path.
    expect(Object.keys(r.json.paths).filter((p) => /[[\]()]|\/:/.test(p))).toEqual([]);
    expect(r.json.paths["/v1/uploads/{uid}:finalize"].post.parameters).toContainEqual(expect.objectContaining({ name: "uid", in: "path" }));
  });

  it("openapi.json lists every route the server answers, itself included, with its answers and the problem+json of its errors", async () => {
    const { paths } = (await call("GET", "/openapi.json")).json as { paths: Record<string, Record<string, any>> };
    const documented = Object.entries(paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => ({
        method: method.toUpperCase(),
        re: new RegExp(`^${path.replace(/[.]/g, "\\.").replace(/\{\w+\}/g, "[^/]+")}$`),
      })),
    );
    // A path each route matches: parameters become an id, regex parameters (custom methods, {z}.bin) their literal suffix.
    const sample = (honoPath: string) =>
      honoPath.replace(/:\w+(?:\{([^}]*)\})?/g, (_, re?: string) => (re ? re.replace("[^/]+", "ID").replaceAll("\\.", ".") : "ID"));
    const served = createApp().routes.filter((r) => r.method !== "ALL");
    expect(served.length).toBeGreaterThan(80);
    for (const r of served) {
      const path = sample(r.path);
      expect(
        documented.some((d) => d.method === r.method && d.re.test(path)),
        `${r.method} ${r.path} is not in /openapi.json`,
      ).toBe(true);
    }
    expect(paths["/openapi.json"]?.get).toBeDefined();
    for (const [path, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const statuses = Object.keys(op.responses);
        // Routes not built here (unbuilt.ts) answer only their 501.
        if (!op.tags?.includes("unbuilt"))
          expect(
            statuses.some((s) => /^[123]/.test(s)),
            `${method} ${path} documents no answer`,
          ).toBe(true);
        expect(op.responses.default.content["application/problem+json"], `${method} ${path}`).toBeDefined();
        if (op.requestBody)
          expect(
            Object.values(op.requestBody.content).every((m: any) => m.schema),
            `${method} ${path} body`,
          ).toBe(true);
      }
    }
  });

  it("openapi.json calls no path, query or header parameter nullable: such values are strings, which cannot carry null", async () => {
    const { paths } = (await call("GET", "/openapi.json")).json as { paths: Record<string, Record<string, any>> };
    const nullable = (schema: any): boolean =>
      schema?.nullable === true ||
      (Array.isArray(schema?.type) && schema.type.includes("null")) ||
      schema?.type === "null" ||
      [...(schema?.anyOf ?? []), ...(schema?.oneOf ?? [])].some(nullable);
    const parameters = Object.entries(paths).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([method, op]) =>
        (op.parameters ?? []).map((p: any) => ({ where: `${method.toUpperCase()} ${path} ${p.in} ${p.name}`, schema: p.schema })),
      ),
    );
    expect(parameters.filter((p) => p.where.includes(" query ")).length).toBeGreaterThan(20);
    expect(parameters.filter((p) => nullable(p.schema)).map((p) => p.where)).toEqual([]);
    // The integer ones keep their type and range (the helper that reads them does not hide it).
    const lease = paths["/v1/runners/{rid}:lease"]!.post.parameters.find((p: any) => p.name === "wait");
    expect(lease.schema).toMatchObject({ type: "integer", minimum: 0, maximum: 25, default: 0 });
  });

  it("integer query parameters refuse null and non-numeric or out-of-range values with 422 and keep their defaults", async () => {
    for (const bad of ["null", "abc", "1.5", "-1"]) {
      await expectProblem(await call("GET", `/v1/projects?page_size=${bad}`), 422);
    }
    expect((await call("GET", "/v1/projects?page_size=2")).status).toBe(200);
    expect((await call("GET", "/v1/projects")).status).toBe(200);
  });

  it("unknown routes and wrong methods are problem+json", async () => {
    expectProblem(await call("GET", "/v1/nope"), 404, "not_found");
    const r = await call("PUT", "/v1/projects");
    expectProblem(r, 405, "method_not_allowed");
    expect(r.headers.get("Allow")).toContain("POST");
  });

  it("CORS preflight answers 200 with the allowed methods and headers", async () => {
    for (const path of ["/v1/projects", "/v1/uploads/01HZZZZZZZZZZZZZZZZZZZZZZZ", "/healthz"]) {
      const r = await call("OPTIONS", path, undefined, {
        Origin: "https://app.example",
        "Access-Control-Request-Method": "PATCH",
        "Access-Control-Request-Headers": "content-range, authorization",
      });
      expect(r.status).toBe(200);
      expect(r.headers.get("Access-Control-Allow-Origin")).toBe("*");
      for (const m of ["GET", "POST", "PUT", "PATCH", "DELETE"]) expect(r.headers.get("Access-Control-Allow-Methods")).toContain(m);
      for (const h of ["Authorization", "Content-Type", "Content-Range", "Range", "If-None-Match", "Idempotency-Key", "Last-Event-ID"]) {
        expect(r.headers.get("Access-Control-Allow-Headers")).toContain(h);
      }
      expect(r.headers.get("Access-Control-Max-Age")).toBe("600");
    }
    // In api_key mode too: a preflight carries no credentials.
    const keyed = deployment({ SVC_AUTH_MODE: "api_key" });
    expect(
      (await keyed("OPTIONS", "/v1/projects", undefined, { Origin: "https://app.example", "Access-Control-Request-Method": "POST" }))
        .status,
    ).toBe(200);
  });

  it("CORS exposes the spec's response headers", async () => {
    const get = await call("GET", "/healthz", undefined, { Origin: "https://app.example" });
    const exposed = get.headers.get("Access-Control-Expose-Headers") ?? "";
    for (const h of ["ETag", "Last-Modified", "Content-Range", "Location", "Link"]) expect(exposed).toContain(h);
  });
});

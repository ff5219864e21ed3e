import { beforeAll, describe, expect, it } from "vitest";
import { call, deployment, expectProblem, newDataset } from "./test/helpers";

/** Every route that takes a JSON body, with real ids so that only the body can be wrong. */
let routes: [string, string][];
beforeAll(async () => {
  const { pid, did } = await newDataset();
  routes = [
    ["POST", "/v1/projects"],
    ["PATCH", `/v1/projects/${pid}`],
    ["POST", `/v1/projects/${pid}/datasets`],
    ["PATCH", `/v1/projects/${pid}/datasets/${did}`],
    ["POST", "/v1/uploads"],
    ["POST", `/v1/datasets/${did}/images`],
    ["POST", `/v1/datasets/${did}/images:batchCreate`],
    ["POST", "/v1/admin/api-keys"],
  ];
});

describe("bad bodies on every JSON route (7, 8): problem+json, never a 500", () => {
  it("unparsable JSON answers 400", async () => {
    for (const [method, path] of routes) {
      for (const body of ["{", '{"name": }', "\u0000"]) {
        expectProblem(await call(method, path, body, { "Content-Type": "application/json" }), 400, "bad_request");
      }
    }
  });

  it("JSON that is not an object answers 422", async () => {
    for (const [method, path] of routes) {
      for (const body of ["[]", '"text"', "42", "null"]) {
        const r = await call(method, path, body, { "Content-Type": "application/json" });
        expectProblem(r, 422, "validation");
        expect(r.json.errors.length, `${method} ${path} ${body}`).toBeGreaterThan(0);
      }
    }
  });

  it("a body over SVC_MAX_JSON_BYTES answers 413", async () => {
    const tight = deployment({ SVC_MAX_JSON_BYTES: "64" });
    for (const [method, path] of routes) {
      expectProblem(await tight(method, path, { name: "x".repeat(100) }), 413, "payload_too_large");
    }
  });

  it("a body of another media type answers 415", async () => {
    for (const [method, path] of routes) {
      expectProblem(
        await call(method, path, "name=x", { "Content-Type": "application/x-www-form-urlencoded" }),
        415,
        "unsupported_media_type",
      );
    }
  });
});

describe("a path that does not parse names no resource (7): 404, never 422", () => {
  const PLACEHOLDERS = ["__nope__", "not%20an%20id", "-1", "x.bin"];
  it("on every documented route without a request body", { timeout: 60_000 }, async () => {
    const { paths } = (await call("GET", "/openapi.json")).json as {
      paths: Record<string, Record<string, { tags?: string[]; requestBody?: unknown }>>;
    };
    let checked = 0;
    for (const [path, ops] of Object.entries(paths)) {
      if (!path.includes("{")) continue;
      for (const [method, op] of Object.entries(ops)) {
        if (op.requestBody || op.tags?.includes("unbuilt")) continue;
        for (const placeholder of PLACEHOLDERS) {
          const upgrade: Record<string, string> = path.startsWith("/ws/") ? { Upgrade: "websocket" } : {};
          const r = await call(method.toUpperCase(), path.replace(/\{\w+\}/g, placeholder), undefined, upgrade);
          if (r.status !== 404)
            throw new Error(`${method.toUpperCase()} ${path} with '${placeholder}': ${r.status} ${JSON.stringify(r.json)}`);
          expectProblem(r, 404, "not_found");
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it("observations and visibility, whose ids are integers", async () => {
    const base = "/v1/reconstructions/01HZZZZZZZZZZZZZZZZZZZZZZZ/snapshots";
    for (const path of [
      `${base}/1/images/__nope__/observations`,
      `${base}/x/points/__nope__/visibility`,
      `${base}/1/submodels/y/images/1/observations`,
    ]) {
      expectProblem(await call("GET", path), 404, "not_found");
    }
  });
});

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
      expectProblem(await call(method, path, "name=x", { "Content-Type": "application/x-www-form-urlencoded" }), 415, "unsupported_media_type");
    }
  });
});

import { describe, expect, it } from "vitest";
import { call, expectProblem } from "../test/helpers";
import { UNBUILT } from "./unbuilt";

/** The row's spec path with placeholder ids, as a client probing the route sends it. */
const concrete = (path: string) => path.replace(/\{seq\}/g, "1").replace(/\{\w+\}/g, "01HZZZZZZZZZZZZZZZZZZZZZZZ");

describe("capability-flagged routes not built here (1.1, 7)", () => {
  it.each(UNBUILT.map((r) => [r.method.toUpperCase(), r.path, r.capability] as const))(
    "%s %s answers 501 problem+json with capability %s",
    async (method, path, capability) => {
      const r = await call(method, concrete(path), method === "POST" || method === "PUT" ? {} : undefined);
      expectProblem(r, 501, "capability_unavailable");
      expect(r.json.capability).toBe(capability);
    },
  );

  it("answers 501 before looking at the request: a malformed body or id gets the same answer", async () => {
    for (const row of UNBUILT.filter((r) => r.method === "post" || r.method === "put")) {
      const r = await call(row.method.toUpperCase(), concrete(row.path).replace("01HZZZZZZZZZZZZZZZZZZZZZZZ", "__nope__"), "{", {
        "Content-Type": "application/json",
      });
      expectProblem(r, 501, "capability_unavailable");
    }
  });

  it("names the capability of what is asked where the route serves several (4.13 mesh method)", async () => {
    const did = "01HZZZZZZZZZZZZZZZZZZZZZZZ";
    expect((await call("POST", `/v1/reconstructions/${did}/mesh`, { method: "delaunay" })).json.capability).toBe("mesh.delaunay");
    expect((await call("POST", `/v1/reconstructions/${did}/mesh`, { method: "poisson" })).json.capability).toBe("mesh.poisson");
  });

  it("advertises none of their capabilities (1.1: advertised if and only if implemented)", async () => {
    const { features } = (await call("GET", "/v1/capabilities")).json;
    for (const row of UNBUILT) {
      for (const c of [row.capability, ...Object.values(row.variant?.capabilities ?? {})]) expect(features[c], c).toBe(false);
    }
  });

  it("documents each in /openapi.json under its spec path, with its request shape and the 501", async () => {
    const { paths } = (await call("GET", "/openapi.json")).json;
    for (const row of UNBUILT) {
      const op = paths[row.path]?.[row.method];
      expect(op, `${row.method} ${row.path}`).toBeDefined();
      expect(op.responses["501"].content["application/problem+json"]).toBeDefined();
      if (row.request?.body) expect(op.requestBody, `${row.method} ${row.path} body`).toBeDefined();
    }
  });
});

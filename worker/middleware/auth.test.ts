import { beforeAll, describe, expect, it } from "vitest";
import { type Call, call, deployment, expectFieldError, expectProblem, expectStatus, uploadBlob } from "../test/helpers";
import { LUND_01 } from "../test/photos";

/** The Worker deployed with `SVC_AUTH_MODE=api_key` (5). */
const apiKey = deployment({ SVC_AUTH_MODE: "api_key" });

async function issue(tenant: string): Promise<string> {
  return (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: tenant }), 201)).json.raw_key;
}

/** A client holding one tenant's key. */
const as =
  (key: string): Call =>
  (method, path, body, headers = {}) =>
    apiKey(method, path, body, { Authorization: `Bearer ${key}`, ...headers });

describe("api_key mode (5)", () => {
  it("tenant routes without a key, or with a malformed, unknown or revoked one, answer 401", async () => {
    const r = await apiKey("GET", "/v1/projects");
    expectProblem(r, 401, "auth");
    expect(r.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
    expect(r.headers.get("X-EdgeSfM-Auth")).toBeNull();
    for (const auth of ["Bearer", "Basic abc", "Bearer not-a-key", "Bearer sfm_short_x", "bearer  sfm_01ARZ3NDEKTSV4RRFFQ69G5FAV_"]) {
      expectProblem(await apiKey("GET", "/v1/projects", undefined, { Authorization: auth }), 401, "auth");
    }
    expectProblem(await as("sfm_01ARZ3NDEKTSV4RRFFQ69G5FAV_unknownsecret")("GET", "/v1/projects"), 401, "auth");

    const issued = (await call("POST", "/v1/admin/api-keys", { tenant_id: "revoked-co" })).json;
    await expectStatus(as(issued.raw_key)("GET", "/v1/projects"), 200);
    await call("DELETE", `/v1/admin/api-keys/${issued.api_key_id}`);
    expectProblem(await as(issued.raw_key)("GET", "/v1/projects"), 401, "auth");
  });

  it("public routes (5.2) answer without a key; CORS preflight too", async () => {
    for (const path of ["/healthz", "/readyz", "/version", "/spec", "/metrics", "/openapi.json"]) {
      expect((await apiKey("GET", path)).status, path).toBe(200);
    }
    const pre = await apiKey("OPTIONS", "/v1/projects", undefined, {
      Origin: "https://app.example",
      "Access-Control-Request-Method": "POST",
    });
    expect(pre.status).toBe(200);
    expectProblem(await apiKey("GET", "/v1/capabilities"), 401, "auth");
  });

  it("the key decides the tenant; a caller-supplied tenant id is ignored", async () => {
    const acme = as(await issue("acme-5"));
    const p = await expectStatus(acme("POST", "/v1/projects", { name: "mine", tenant_id: "other" }, { "X-Tenant-Id": "other" }), 201);
    expect(p.json.tenant_id).toBe("acme-5");
  });

  describe("tenant isolation (5.3): another tenant's rows answer 404, exactly as absent ones", () => {
    const ABSENT = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let owner: Call;
    let intruder: Call;
    let ids: { pid: string; did: string; iid: string; uid: string; sha: string };

    beforeAll(async () => {
      owner = as(await issue("tenant-a"));
      intruder = as(await issue("tenant-b"));
      const sha = await uploadBlob(LUND_01, {}, owner);
      const pid = (await owner("POST", "/v1/projects", { name: "a" })).json.project_id;
      const did = (await owner("POST", `/v1/projects/${pid}/datasets`, { name: "d", source: { kind: "upload", entries: [] } })).json
        .dataset_id;
      const iid = (await owner("POST", `/v1/datasets/${did}/images`, { name: "01.jpg", blob_sha: sha })).json.image_id;
      const uid = (await owner("POST", "/v1/uploads", { expected_size: 4 })).json.upload_id;
      ids = { pid, did, iid, uid, sha };
    });

    /** Every id-addressed route, as [method, path, body?, headers?]. */
    const routes = (x: { pid: string; did: string; iid: string; uid: string }): [string, string, unknown?, Record<string, string>?][] => [
      ["GET", `/v1/projects/${x.pid}`],
      ["PATCH", `/v1/projects/${x.pid}`, { name: "stolen" }],
      ["DELETE", `/v1/projects/${x.pid}`],
      ["GET", `/v1/projects/${x.pid}/datasets`],
      ["POST", `/v1/projects/${x.pid}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }],
      ["GET", `/v1/projects/${x.pid}/datasets/${x.did}`],
      ["PATCH", `/v1/projects/${x.pid}/datasets/${x.did}`, { name: "stolen" }],
      ["DELETE", `/v1/projects/${x.pid}/datasets/${x.did}`],
      ["GET", `/v1/datasets/${x.did}/images`],
      ["POST", `/v1/datasets/${x.did}/images`, { name: "x.jpg", blob_sha: "a".repeat(64) }],
      ["POST", `/v1/datasets/${x.did}/images:batchCreate`, { requests: [{ name: "x.jpg", blob_sha: "a".repeat(64) }] }],
      ["DELETE", `/v1/datasets/${x.did}/images/01.jpg`],
      ["GET", `/v1/images/${x.iid}`],
      ["GET", `/v1/images/${x.iid}/bytes`],
      ["GET", `/v1/images/${x.iid}/thumbnail`],
      ["GET", `/v1/images/${x.iid}/exif`],
      ["DELETE", `/v1/images/${x.iid}`],
      ["GET", `/v1/uploads/${x.uid}`],
      ["PATCH", `/v1/uploads/${x.uid}`, new Uint8Array(4), { "Content-Range": "bytes 0-3/4" }],
      ["POST", `/v1/uploads/${x.uid}:finalize`],
    ];

    it("over every id-addressed route", async () => {
      const foreign = routes(ids);
      const absent = routes({ pid: ABSENT, did: ABSENT, iid: ABSENT, uid: ABSENT });
      for (const [i, [method, path, body, headers]] of foreign.entries()) {
        const theirs = await intruder(method, path, body, headers);
        expectProblem(theirs, 404, "not_found");
        const [, absentPath, absentBody, absentHeaders] = absent[i]!;
        const nothing = await intruder(method, absentPath, absentBody, absentHeaders);
        const { instance: _a, ...seen } = theirs.json;
        const { instance: _b, ...unseen } = nothing.json;
        expect(seen, `${method} ${path}`).toEqual(unseen);
      }
      // The owner still has everything, untouched.
      expect((await owner("GET", `/v1/projects/${ids.pid}`)).json.name).toBe("a");
      expect((await owner("GET", `/v1/images/${ids.iid}`)).status).toBe(200);
      expect((await owner("GET", `/v1/uploads/${ids.uid}`)).json.received_bytes).toBe(0);
    });

    it("lists show only the caller's rows; blobs of another tenant cannot be referenced", async () => {
      const mine = await intruder("GET", "/v1/projects?page_size=500");
      expect(mine.json.items.map((p: any) => p.project_id)).not.toContain(ids.pid);
      const pid = (await intruder("POST", "/v1/projects", { name: "b" })).json.project_id;
      const did = (await intruder("POST", `/v1/projects/${pid}/datasets`, { name: "d", source: { kind: "upload", entries: [] } })).json
        .dataset_id;
      expectFieldError(
        await intruder("POST", `/v1/datasets/${did}/images`, { name: "x.jpg", blob_sha: ids.sha }),
        "blob_sha",
        "unknown_blob",
      );
      expectFieldError(
        await intruder("POST", `/v1/projects/${pid}/datasets`, {
          name: "d2",
          source: { kind: "upload", entries: [{ name: "x", blob_sha: ids.sha }] },
        }),
        "source.entries.0.blob_sha",
        "unknown_blob",
      );
    });

    it("a tenant's bytes are cacheable by the client only, never by shared caches", async () => {
      for (const sub of ["bytes", "thumbnail?size=16"]) {
        const r = await owner("GET", `/v1/images/${ids.iid}/${sub}`);
        expect(r.status).toBe(200);
        expect(r.headers.get("Cache-Control")).toBe("private, max-age=31536000, immutable");
        await r.res.arrayBuffer();
      }
    });

    it("Idempotency-Key is scoped to the tenant", async () => {
      const key = crypto.randomUUID();
      const a = await owner("POST", "/v1/uploads", { expected_size: 1 }, { "Idempotency-Key": key });
      const b = await intruder("POST", "/v1/uploads", { expected_size: 1 }, { "Idempotency-Key": key });
      expect(b.json.upload_id).not.toBe(a.json.upload_id);
      expect(b.headers.get("Idempotent-Replayed")).toBeNull();
    });

    it("the none-mode default tenant is another tenant too", async () => {
      expectProblem(await call("GET", `/v1/projects/${ids.pid}`), 404, "not_found");
    });
  });
});

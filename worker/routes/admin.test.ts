import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { keyRegistry } from "../services/stores";
import { call, deployment, expectFieldError, expectProblem, expectStatus } from "../test/helpers";

const RAW_KEY = /^sfm_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]+$/;

describe("admin API keys (4.17)", () => {
  it("issue answers 201 with the raw key, shown only there; list shows raw_key null", async () => {
    const r = await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: "acme", name: "ci" }), 201);
    expect(r.json).toMatchObject({ tenant_id: "acme", name: "ci", revoked_at: null });
    expect(r.json.raw_key).toMatch(RAW_KEY);
    expect(r.json.raw_key).toContain(`sfm_${r.json.api_key_id}_`);
    const list = await expectStatus(call("GET", "/v1/admin/api-keys"), 200);
    const row = list.json.find((k: any) => k.api_key_id === r.json.api_key_id);
    expect(row).toMatchObject({ tenant_id: "acme", name: "ci", raw_key: null, revoked_at: null });
    expect(JSON.stringify(list.json)).not.toContain(r.json.raw_key);
  });

  it("only a digest of the key is stored", async () => {
    const { raw_key } = (await call("POST", "/v1/admin/api-keys", { tenant_id: "acme" })).json;
    const secret = raw_key.split("_").slice(2).join("_");
    const stored = await runInDurableObject(keyRegistry(env), (_o, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM api_keys").toArray()),
    );
    expect(stored).not.toContain(secret);
  });

  it("revoke sets revoked_at, keeps the first revocation time, and 404s for unknown keys", async () => {
    const { api_key_id } = (await call("POST", "/v1/admin/api-keys", { tenant_id: "acme" })).json;
    const r = await expectStatus(call("DELETE", `/v1/admin/api-keys/${api_key_id}`), 200);
    expect(r.json.revoked_at).toMatch(/Z$/);
    expect(r.json.raw_key).toBeNull();
    expect((await call("DELETE", `/v1/admin/api-keys/${api_key_id}`)).json.revoked_at).toBe(r.json.revoked_at);
    expectProblem(await call("DELETE", "/v1/admin/api-keys/01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "not_found");
  });

  it("bad issue bodies answer 422", async () => {
    expectFieldError(await call("POST", "/v1/admin/api-keys", {}), "tenant_id", "invalid_type");
    expectFieldError(await call("POST", "/v1/admin/api-keys", { tenant_id: "../x" }), "tenant_id");
    expectFieldError(await call("POST", "/v1/admin/api-keys", { tenant_id: "a".repeat(65) }), "tenant_id", "too_big");
    expectFieldError(await call("POST", "/v1/admin/api-keys", { tenant_id: "a", name: 3 }), "name", "invalid_type");
    expectProblem(await call("POST", "/v1/admin/api-keys", "{", { "Content-Type": "application/json" }), 400, "bad_request");
  });

  it("with SVC_ADMIN_TOKEN set, admin routes need that token", async () => {
    const guarded = deployment({ SVC_ADMIN_TOKEN: "operator-secret" });
    expectProblem(await guarded("GET", "/v1/admin/api-keys"), 401, "auth");
    expectProblem(await guarded("GET", "/v1/admin/api-keys", undefined, { Authorization: "Bearer wrong" }), 401, "auth");
    await expectStatus(guarded("GET", "/v1/admin/api-keys", undefined, { Authorization: "Bearer operator-secret" }), 200);
  });
});

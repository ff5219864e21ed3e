/**
 * Runner credentials (issue 22, Security): a lease id is the credential of one task of one job,
 * and it dies with the lease (completed, failed, expired); a runner reads only its task's inputs
 * through it, whatever its scope; volunteers' registrations are rate-limited; keyless browsers
 * get a pool token per address only where the operator allows them.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { DigestRunner } from "../../scripts/digest-runner";
import { BASE, type Call, call, deployment, expectProblem, expectStatus, fetchOf, tenantClient, uploadBlob } from "../test/helpers";
import type { FetchLike } from "../../client/index";
import type { Dispatcher } from "../storage/dispatcher";
import { dispatcher, runnerDispatcher } from "../storage/stubs";

vi.setConfig({ testTimeout: 30_000 });

const TENANT = "runner-credentials";
let as: Call;
let fetchAs: FetchLike;

beforeAll(async () => {
  const t = await tenantClient(TENANT);
  as = t.call;
  fetchAs = t.fetch;
});

/** A project (opted in to the pool or not) with a dataset of `n` fresh images, and a features job on it. */
async function featuresJob(n: number, poolOptIn = false) {
  const p = await expectStatus(as("POST", "/v1/projects", { name: "p", "x-pool_opt_in": poolOptIn }), 201);
  const d = await expectStatus(
    as("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }),
    201,
  );
  const shas: string[] = [];
  for (let i = 0; i < n; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`credential test image ${i} ${Math.random()}`), {}, as);
    await expectStatus(as("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: `img${i}.jpg`, blob_sha: sha }), 201);
    shas.push(sha);
  }
  const jid = (await expectStatus(as("POST", `/v1/datasets/${d.json.dataset_id}/features`, { spec: {} }), 202)).json.job_id as string;
  return { jid, shas };
}

const runner = (name: string, authorization?: string) => new DigestRunner({ base: BASE, fetch: fetchAs, name, authorization });

/** What the holder of a lease id can still do with it: the statuses of a read, a write, a heartbeat and an event post. */
async function powers(leaseId: string, sha: string, authorization?: string) {
  const h: Record<string, string> = authorization ? { Authorization: authorization } : {};
  const bytes = new TextEncoder().encode(`output ${Math.random()}`);
  const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
  return {
    read: (await as("GET", `/v1/leases/${leaseId}/blobs/${sha}`, undefined, h)).status,
    write: (await as("PUT", `/v1/leases/${leaseId}/blobs/${digest}`, bytes, { ...h, "Content-Type": "application/octet-stream" })).status,
    events: (await as("POST", `/v1/leases/${leaseId}/events`, { events: [{ kind: "metric", key: "x", value: 1 }] }, h)).status,
    heartbeat: (await as("POST", `/v1/leases/${leaseId}:heartbeat`, undefined, h)).json?.directive ?? "none",
  };
}

describe("a lease is scoped to one task and ends with it", () => {
  it("reads its own task's inputs only, and nothing once completed", async () => {
    const mine = await featuresJob(2);
    const other = await featuresJob(1);
    const r = runner("scoped");
    await r.register();
    const lease = (await r.lease())!;
    const theirs = lease.task.job_id === mine.jid ? other : mine;
    const own = lease.task.job_id === mine.jid ? mine : other;
    expect((await r.client.readBlob(lease.lease_id, own.shas[0]!)).byteLength).toBeGreaterThan(0);
    // The other job's image, the same tenant's: not an input of this task.
    expectProblem(await as("GET", `/v1/leases/${lease.lease_id}/blobs/${theirs.shas[0]}`), 404, "not_found");
    // The lease id names its job: pointing it at the other job finds no such lease there.
    const [tenant, , ...rest] = lease.lease_id.split(".");
    const forged = [tenant, theirs.jid, ...rest].join(".");
    expectProblem(await as("GET", `/v1/leases/${forged}/blobs/${theirs.shas[0]}`), 404, "not_found");
    expectProblem(await as("POST", `/v1/leases/${forged}:heartbeat`), 404, "not_found");

    expect(await r.work(lease)).toBe("completed");
    // Completed: the id reads, writes and reports nothing more.
    expect(await powers(lease.lease_id, own.shas[0]!)).toEqual({ read: 404, write: 409, events: 409, heartbeat: "teardown" });
    expectProblem(await as("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: { artifacts: [] } }), 409, "conflict");
    await r.drain(); // the other job's task, so no lease is left for later tests
  });

  it("expires with its TTL: the runner that vanished can no longer read, write or report", async () => {
    const { jid, shas } = await featuresJob(1);
    const r = runner("vanishing");
    await r.register();
    const lease = (await r.lease())!;
    expect(lease.task.job_id).toBe(jid);
    expect((await powers(lease.lease_id, shas[0]!)).read).toBe(200);
    const stub = env.JOB.get(env.JOB.idFromName(`${TENANT}/${jid}`));
    await runInDurableObject(stub, (_o, state) => void state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE state = 'active'"));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await powers(lease.lease_id, shas[0]!)).toEqual({ read: 404, write: 409, events: 409, heartbeat: "teardown" });
    // The task went back to the queue under a new lease.
    const next = (await r.lease())!;
    expect(next.task).toMatchObject({ job_id: jid, attempt: 2 });
    expect(next.lease_id).not.toBe(lease.lease_id);
    await r.work(next);
  });

  it("a volunteer (pool token) reads only its task's inputs, never the tenant's other blobs", async () => {
    const token = (await expectStatus(call("POST", "/v1/admin/runner-tokens", { name: "volunteer" }), 201)).json.raw_token as string;
    const auth = `Bearer ${token}`;
    const open = await featuresJob(1, true);
    const closed = await featuresJob(1, false);
    const volunteer = runner("volunteer", auth);
    await volunteer.register();
    const lease = (await volunteer.lease())!;
    expect(lease.task.job_id).toBe(open.jid);
    expect((await powers(lease.lease_id, open.shas[0]!, auth)).read).toBe(200);
    // A closed project's image and a blob that is in no job: 404, as absent ones.
    const loose = await uploadBlob(new TextEncoder().encode(`a tenant's private blob ${Math.random()}`), {}, as);
    for (const sha of [closed.shas[0]!, loose]) {
      expectProblem(await as("GET", `/v1/leases/${lease.lease_id}/blobs/${sha}`, undefined, { Authorization: auth }), 404, "not_found");
    }
    // The tenant's key does not speak for a pool lease, nor the pool token for a tenant's (the scope is part of the lease).
    expectProblem(await as("GET", `/v1/leases/${lease.lease_id}/blobs/${open.shas[0]}`), 404, "not_found");
    await volunteer.client.release(lease.lease_id, "test over");
    for (const jid of [open.jid, closed.jid]) await as("POST", `/v1/jobs/${jid}:cancel?force=true`);
  });
});

describe("registration of untrusted runners is rate-limited", () => {
  const limited = deployment({ SVC_AUTH_MODE: "api_key", SVC_POOL_REGISTRATIONS_PER_MINUTE: "3" });
  const body = { name: "flood", stages: ["extract"], runtime_versions: {} };

  it("a volunteer token registers 3 runners a minute, then 429 problem+json with Retry-After; other credentials are not held back", async () => {
    const issue = async () => (await expectStatus(call("POST", "/v1/admin/runner-tokens", { name: "flood" }), 201)).json.raw_token;
    const flood = { Authorization: `Bearer ${await issue()}` };
    for (let i = 0; i < 3; i++) await expectStatus(limited("POST", "/v1/runners", body, flood), 201);
    const refused = await limited("POST", "/v1/runners", body, flood);
    expectProblem(refused, 429, "quota_exceeded");
    expect(refused.headers.get("Content-Type")).toMatch(/^application\/problem\+json/);
    const wait = Number(refused.headers.get("Retry-After"));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(refused.json.detail).toMatch(/SVC_POOL_REGISTRATIONS_PER_MINUTE/);
    // Nothing was registered by the refused request.
    expectProblem(await limited("POST", "/v1/runners", body, flood), 429, "quota_exceeded");

    // Another token has its own allowance; a tenant's key (its own runners) and the operator's token are trusted.
    await expectStatus(limited("POST", "/v1/runners", body, { Authorization: `Bearer ${await issue()}` }), 201);
    const key = (await tenantClient("runner-credentials-own")).key;
    for (let i = 0; i < 5; i++) await expectStatus(limited("POST", "/v1/runners", body, { Authorization: `Bearer ${key}` }), 201);
    const operator = { Authorization: "Bearer sfo_the-deployments-own-runners-0123" };
    for (let i = 0; i < 5; i++) await expectStatus(limited("POST", "/v1/runners", body, operator), 201);
  });

  it("the window slides: once the oldest registration is a minute old, the token registers again", async () => {
    const token = (await expectStatus(call("POST", "/v1/admin/runner-tokens", { name: "patient" }), 201)).json;
    const auth = { Authorization: `Bearer ${token.raw_token}` };
    for (let i = 0; i < 3; i++) await expectStatus(limited("POST", "/v1/runners", body, auth), 201);
    expectProblem(await limited("POST", "/v1/runners", body, auth), 429, "quota_exceeded");
    // Age the token's registrations by a minute, as time would.
    // (The pool's dispatcher shard that holds the token's runners.)
    const pool = runnerDispatcher(env, "pool", "", token.token_id);
    await runInDurableObject(pool, (_o, state) => {
      const old = new Date(Date.now() - 61_000).toISOString();
      state.storage.sql.exec("UPDATE runners SET registered_at = ? WHERE token_id = ?", old, token.token_id);
    });
    await expectStatus(limited("POST", "/v1/runners", body, auth), 201);
  });
});

describe("keyless volunteers (SVC_POOL_KEYLESS_RUNNERS): a browser without a key gets a pool token for its address", () => {
  const closed = deployment({ SVC_AUTH_MODE: "api_key" });
  const open = deployment({ SVC_AUTH_MODE: "api_key", SVC_POOL_KEYLESS_RUNNERS: "true", SVC_POOL_REGISTRATIONS_PER_MINUTE: "3" });
  const from = (address: string) => ({ "CF-Connecting-IP": address });
  /** A runner without a credential, as `/runner.html` without `?key=` starts one (client/runner.ts `register` with `keyless`). */
  const keyless = (via: Call, address: string, name: string) =>
    new DigestRunner({ base: BASE, fetch: fetchOf(via, from(address)), name, keyless: true });

  it("is off unless the operator allows it: 403 problem+json, and a keyless runner does not start", async () => {
    const refused = await closed("POST", "/v1/runner-tokens", undefined, from("198.51.100.1"));
    expectProblem(refused, 403, "auth");
    expect(refused.json.detail).toMatch(/SVC_POOL_KEYLESS_RUNNERS/);
    await expect(keyless(closed, "198.51.100.1", "refused").register()).rejects.toMatchObject({ status: 403 });
  });

  it("one token per address (an IPv6 /64), the same one each time; it serves only projects that opted in, untrusted", async () => {
    const first = await expectStatus(open("POST", "/v1/runner-tokens", undefined, from("198.51.100.2")), 201);
    expect(first.json).toMatchObject({ raw_token: expect.stringMatching(/^sfr_/), revoked_at: null, quarantined_at: null, confirmed: 0 });
    const again = await expectStatus(open("POST", "/v1/runner-tokens", undefined, from("198.51.100.2")), 200);
    expect(again.json).toEqual(first.json);
    const other = await expectStatus(open("POST", "/v1/runner-tokens", undefined, from("198.51.100.3")), 201);
    expect(other.json.token_id).not.toBe(first.json.token_id);
    const v6 = await expectStatus(open("POST", "/v1/runner-tokens", undefined, from("2001:db8:1:2::5")), 201);
    const sameSubnet = await open("POST", "/v1/runner-tokens", undefined, from("2001:0db8:0001:0002:ffff::9"));
    expect([sameSubnet.status, sameSubnet.json.token_id]).toEqual([200, v6.json.token_id]);
    // The operator sees it among the pool's tokens (raw token never listed).
    const listed = (await call("GET", "/v1/admin/runner-tokens")).json as { token_id: string; name: string; raw_token: null }[];
    expect(listed.find((t) => t.token_id === first.json.token_id)).toMatchObject({
      name: expect.stringMatching(/^keyless/),
      raw_token: null,
    });

    // A tab without a key: refused as a tenant runner (401), it asks for its address's token and registers in the pool.
    const openJob = await featuresJob(1, true);
    const closedJob = await featuresJob(1, false);
    const tab = keyless(open, "198.51.100.4", "keyless tab");
    expect((await tab.register()).pool).toBe(true);
    const lease = (await tab.lease())!;
    expect(lease.task.job_id).toBe(openJob.jid);
    expect(await tab.work(lease)).toBe("completed");
    // Untrusted: its result waits for another principal's before the shard counts as done.
    const task = (await as("GET", `/v1/jobs/${openJob.jid}`)).json.tasks[0];
    expect(task["x-shards"]).toMatchObject({ done: 0, awaiting_validation: 1 });
    // A second tab of the same address is the same principal: it is offered neither its own result nor the closed project.
    const sibling = keyless(open, "198.51.100.4", "keyless sibling");
    await sibling.register();
    expect(await sibling.lease()).toBeNull();
    for (const jid of [openJob.jid, closedJob.jid]) await as("POST", `/v1/jobs/${jid}:cancel?force=true`);
  });

  it("an address's registrations share one token's limit; a quarantine or revocation holds for the address", async () => {
    const body = { name: "flood", stages: ["extract"], runtime_versions: {} };
    const { raw_token, token_id } = (await expectStatus(open("POST", "/v1/runner-tokens", undefined, from("203.0.113.9")), 201)).json;
    const auth = { Authorization: `Bearer ${raw_token}` };
    for (let i = 0; i < 3; i++) await expectStatus(open("POST", "/v1/runners", body, auth), 201);
    expectProblem(await open("POST", "/v1/runners", body, auth), 429, "quota_exceeded");

    await runInDurableObject(dispatcher(env, "pool"), (pool: Dispatcher) => pool.quarantine(token_id, "a test's wrong result"));
    const quarantined = await open("POST", "/v1/runner-tokens", undefined, from("203.0.113.9"));
    expectProblem(quarantined, 403, "auth");
    expect(quarantined.json["x-quarantine"]).toMatchObject({ token_id, reason: "a test's wrong result" });

    const other = (await expectStatus(open("POST", "/v1/runner-tokens", undefined, from("203.0.113.10")), 201)).json;
    await expectStatus(call("DELETE", `/v1/admin/runner-tokens/${other.token_id}`), 200);
    expect((await open("POST", "/v1/runner-tokens", undefined, from("203.0.113.10"))).json.detail).toMatch(/revoked/);
    expectProblem(await open("POST", "/v1/runners", body, { Authorization: `Bearer ${other.raw_token}` }), 401, "auth");
  });
});

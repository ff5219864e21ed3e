/**
 * Runner credentials (issue 22, Security): a lease id is the credential of one task of one job,
 * and it dies with the lease (completed, failed, expired); a runner reads only its task's inputs
 * through it, whatever its scope; volunteers' registrations are rate-limited.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { DigestRunner } from "../../scripts/digest-runner";
import { BASE, type Call, call, deployment, expectProblem, expectStatus, tenantClient, uploadBlob } from "../test/helpers";
import type { FetchLike } from "../../client/index";
import { runnerDispatcher } from "../storage/stubs";

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

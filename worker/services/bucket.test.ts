/**
 * Storage failures: the Worker deployed over an R2 binding that fails on demand
 * (test/faulty-bucket.ts: a call throws, or never answers). Every request that needs R2 then
 * answers a 503 problem with Retry-After within the deadline, changes nothing that can be seen
 * (the tenant's Durable Object tables and R2 objects are compared before and after), and
 * succeeds when sent again once R2 answers. The garbage collector keeps what it could not delete.
 */
import { createExecutionContext, env, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { FetchLike } from "../../client/index";
import { DigestRunner } from "../../scripts/digest-runner";
import worker from "../index";
import * as garbage from "../storage/tenant/garbage";
import { tenantStore } from "./stores";
import { BASE, type Call, call, caller, expectFieldError, expectProblem, expectStatus, sha256Hex, uploadBlob } from "../test/helpers";
import { type Fault, FaultyBucket } from "../test/faulty-bucket";
import { LUND_01 } from "../test/photos";
import { enc, scene, sealedReconstruction } from "../test/scene";
import { storageState } from "../test/storage-state";

const TENANT = "r2-faults";
const r2 = new FaultyBucket(env.BLOBS);
let as: Call;
let fetchAs: FetchLike;
const jobs = new Set<string>();
const state = storageState(TENANT, jobs);

beforeAll(async () => {
  const key = (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: TENANT }), 201)).json.raw_key as string;
  // The Worker in api_key mode over the faulty bucket, with a 1 s deadline per R2 call.
  const deployed = { ...env, SVC_AUTH_MODE: "api_key", SVC_BLOB_TIMEOUT_SECONDS: "1", BLOBS: r2.bucket } as unknown as Env;
  fetchAs = async (request) => {
    const req = new Request(request);
    if (!req.headers.has("Authorization")) req.headers.set("Authorization", `Bearer ${key}`);
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, deployed, ctx);
    await waitOnExecutionContext(ctx);
    // A sealed file is served at its signed link (services/signed-urls.ts): follow it, as fetch does.
    if (res.status === 307) return fetchAs(new Request(new URL(res.headers.get("Location")!, BASE), { headers: req.headers }));
    return res;
  };
  as = caller(fetchAs);
});

/** Sends the request while R2 has `fault`: 503 with Retry-After within the deadline, nothing changed (but what `changes` names). */
async function refused(fault: Fault, send: () => ReturnType<Call>, o: { changes?: RegExp } = {}): Promise<void> {
  const before = await state();
  r2.fail(fault);
  const started = Date.now();
  const answer = await send();
  r2.heal();
  expectProblem(answer, 503, "unavailable");
  expect(answer.headers.get("Retry-After")).toBe("1");
  expect(answer.json.detail).toMatch(/blob storage failed .*retry/);
  expect(Date.now() - started).toBeLessThan(10_000);
  const after = await state();
  const changed = Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k] && !o.changes?.test(k));
  expect(changed, "what the refused request changed").toEqual([]);
}

const range = (from: number, to: number, total: number) => ({ "Content-Range": `bytes ${from}-${to}/${total}` });

describe("R2 failures (a put or get that fails or times out)", { timeout: 60_000 }, () => {
  it("an upload chunk R2 refuses or never stores answers 503 and records nothing; re-sent, it is stored", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(64));
    const up = await expectStatus(as("POST", "/v1/uploads", { expected_size: 64 }), 201);
    const first = () => as("PATCH", `/v1/uploads/${up.json.upload_id}`, bytes.subarray(0, 32), range(0, 31, 64));
    await refused({ op: "put", mode: "throw" }, first);
    await expectStatus(first(), 200);
    const second = () => as("PATCH", `/v1/uploads/${up.json.upload_id}`, bytes.subarray(32), range(32, 63, 64));
    await refused({ op: "put", mode: "hang" }, second);
    expect((await expectStatus(second(), 200)).json).toMatchObject({ received_bytes: 64, state: "received" });
  });

  it("a finalize whose reads or blob write fail answers 503 with the upload unfinalized and its blob unusable; the retry finalizes it with the right SHA-256", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(3000));
    const sha = await sha256Hex(bytes);
    const up = await expectStatus(as("POST", "/v1/uploads", { expected_size: bytes.length }), 201);
    const uid = up.json.upload_id as string;
    await expectStatus(as("PATCH", `/v1/uploads/${uid}`, bytes, range(0, bytes.length - 1, bytes.length)), 200);
    const finalize = () => as("POST", `/v1/uploads/${uid}:finalize`);
    await refused({ op: "get", mode: "throw" }, finalize);
    await refused({ op: "get", mode: "hang" }, finalize);
    // The blob's write fails after the upload reserved it (the only rows that change): the upload
    // is not finalized and nothing can use the blob.
    await refused({ op: "put", key: /\/blobs\//, mode: "throw" }, finalize, { changes: /^TenantStore\.(blobs|uploads)$/ });
    const { did } = await newDataset();
    expect((await as("GET", `/v1/uploads/${uid}`)).json).toMatchObject({ state: "received", blob_sha: null });
    expectFieldError(await as("POST", `/v1/datasets/${did}/images`, { name: "x.bin", blob_sha: sha }), "blob_sha", "unknown_blob");
    expect(await env.BLOBS.head(`t/${TENANT}/blobs/${sha}`)).toBeNull();
    // Once R2 answers, the same finalize completes, and the bytes are the upload's.
    expect((await expectStatus(finalize(), 200)).json).toMatchObject({ state: "finalized", blob_sha: sha });
    const image = await expectStatus(as("POST", `/v1/datasets/${did}/images`, { name: "x.bin", blob_sha: sha }), 201);
    const served = await as("GET", `/v1/images/${image.json.image_id}/bytes`);
    expect(await sha256Hex(new Uint8Array(await served.res.arrayBuffer()))).toBe(sha);
  });

  it("reads of stored bytes answer 503 while R2 fails, then the bytes", async () => {
    const sealed = await sealedReconstruction(scene(12), { call: as, fetch: fetchAs });
    jobs.add(sealed.jid);
    const { did, rid } = sealed;
    const photo = await uploadPhoto();
    const image = await expectStatus(as("POST", `/v1/datasets/${did}/images`, { name: "lund.jpg", blob_sha: photo }), 201);
    for (const path of [
      `/v1/images/${image.json.image_id}/bytes`,
      `/v1/images/${image.json.image_id}/exif`,
      `/v1/reconstructions/${rid}/snapshots/1/points.bin`,
      `/v1/reconstructions/${rid}/snapshots/1/images/1/observations`,
    ]) {
      await refused({ op: "get", mode: "throw" }, () => as("GET", path));
      const r = await as("GET", path);
      expect(r.status, path).toBe(200);
      await r.res.arrayBuffer().catch(() => undefined);
    }
    // A tile made on first request: its write to R2 fails, then it is made.
    const tile = () => as("GET", `/v1/reconstructions/${rid}/snapshots/1/tiles/0/0/0/0.bin`);
    await refused({ op: "put", mode: "hang" }, tile);
    await expectStatus(tile(), 200);
  });

  it("a runner's output blob and a snapshot seal that R2 fails record nothing; their retries succeed", async () => {
    const model = scene(8);
    const p = await expectStatus(as("POST", "/v1/projects", { name: "seal" }), 201);
    const entries = [];
    for (const im of model.images.images)
      entries.push({ name: im.name, blob_sha: await uploadBytes(enc({ photo: im.name, nonce: Math.random() })) });
    const d = await expectStatus(
      as("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } }),
      201,
    );
    const job = await expectStatus(
      as("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
        dataset_id: d.json.dataset_id,
        spec: { kind: "incremental" },
      }),
      202,
    );
    jobs.add(job.json.job_id);
    const runner = new DigestRunner({ base: BASE, fetch: fetchAs, name: "r2-faults" });
    await runner.register();
    let lease = await runner.lease();
    while (lease && lease.task.kind !== "map") {
      await runner.work(lease);
      lease = await runner.lease();
    }
    expect(lease?.task.kind).toBe("map");
    const id = lease!.lease_id;
    // The blob write: a heartbeat extends the lease first (the lease's row changes), nothing else.
    const files: { name: string; blob_sha: string; byte_size: number }[] = [];
    // (The tenant holds these cameras.json bytes already: only the check for them reaches R2.)
    const outputs = [
      ["cameras.json", enc(model.cameras), "head"],
      ["images.json", enc(model.images), "put"],
      ["points.bin", model.points, "put"],
    ] as const;
    for (const [name, bytes, op] of outputs) {
      const sha = await sha256Hex(bytes);
      const put = () => as("PUT", `/v1/leases/${id}/blobs/${sha}`, bytes, { "Content-Type": "application/octet-stream" });
      await refused({ op, mode: "throw" }, put, { changes: /\.leases$/ });
      await expectStatus(put(), 201);
      files.push({ name, blob_sha: sha, byte_size: bytes.byteLength });
    }
    // The seal reads every file to check it: R2 fails, no snapshot and no event.
    const seal = () => as("POST", `/v1/leases/${id}/snapshots`, { files, summary: { num_reg_images: 3, num_points3D: 8 } });
    await refused({ op: "get", mode: "hang" }, seal, { changes: /\.leases$/ });
    expect((await expectStatus(seal(), 201)).json.snapshot_seq).toBe(1);
    expect((await as("GET", `/v1/reconstructions/${job.json.recon_id}/snapshots`)).json.seqs).toEqual([1]);
  });

  it("the garbage collector keeps the keys R2 did not delete and deletes them on a later pass", async () => {
    const key = `t/${TENANT}/uploads/garbage-test/0-x`;
    await env.BLOBS.put(key, new Uint8Array(8));
    const stub = tenantStore(env, TENANT);
    const queued = () =>
      runInDurableObject(stub, (_o, s) =>
        s.storage.sql
          .exec<{ r2_key: string }>("SELECT r2_key FROM r2_garbage")
          .toArray()
          .map((r) => r.r2_key),
      );
    // Queued with no alarm set, so only the passes below run.
    await runInDurableObject(stub, async (_o, s) => {
      await s.storage.deleteAlarm();
      garbage.queue(s.storage, key);
    });
    r2.fail({ op: "delete", mode: "throw" });
    await runInDurableObject(stub, (_o, s) => garbage.collect(s, r2.bucket));
    r2.heal();
    expect(await queued()).toContain(key);
    expect(await env.BLOBS.head(key)).not.toBeNull();
    await runInDurableObject(stub, (_o, s) => garbage.collect(s, r2.bucket));
    expect(await queued()).not.toContain(key);
    expect(await env.BLOBS.head(key)).toBeNull();
  });
});

const uploadBytes = (bytes: Uint8Array) => uploadBlob(bytes, {}, as);

const uploadPhoto = () => uploadBytes(LUND_01);

async function newDataset() {
  const p = await expectStatus(as("POST", "/v1/projects", { name: "p" }), 201);
  const d = await expectStatus(
    as("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }),
    201,
  );
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string };
}

import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { type FetchLike, type Lease, RunnerClient } from "../../client/index";
import { OneShotFeaturesResponse } from "../../protocol";
import { DescriptorKind, FEATURES_MEDIA_TYPE, encodeFeatures } from "../../protocol/wire/features";
import {
  BASE,
  type Call,
  call,
  deployment,
  expectFieldError,
  expectProblem,
  expectStatus,
  selfFetch,
  tenantClient,
  uploadBlob,
} from "../test/helpers";
import { LUND_01 } from "../test/photos";
import { enc, scene, sealedReconstruction } from "../test/scene";
import { storageState } from "../test/storage-state";
import { readConfig } from "../config";
import { jobStore } from "../services/stores";
import { ONESHOT_ABANDONED_AFTER_MS } from "../storage/job-rows";

// Whole requests wait on runners through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const jpeg = { "Content-Type": "image/jpeg" };

/** A tenant of its own (api_key mode), so its runners and queue are only this test's. */
async function tenant(name: string) {
  const tenantId = `oneshot-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const t = await tenantClient(tenantId);
  const client = new RunnerClient({ baseUrl: BASE, fetch: t.fetch as FetchLike });
  const register = async (stages: ("oneshot_features" | "relocalize")[]) =>
    client.register({
      name,
      stages,
      runtime_versions: await client.serviceRuntimeVersions(),
      abilities: { webgpu: null, wasm: { simd: true, threads: false }, memory_bytes: null, hardware_concurrency: 1 },
    });
  return { ...t, tenantId, client, register };
}

/** The tenant's R2 objects under its one-shot prefix. */
async function oneshotObjects(tenantId: string) {
  return (await env.BLOBS.list({ prefix: `t/${tenantId}/oneshot/` })).objects.map((o) => o.key);
}

/** Leases until the request's task is offered (long poll). */
async function leaseSoon(client: RunnerClient, runnerId: string): Promise<Lease> {
  for (let i = 0; i < 20; i++) {
    const lease = await client.lease(runnerId, 2);
    if (lease) return lease;
  }
  throw new Error("the one-shot task was never offered");
}

const features = encodeFeatures({
  imageWidth: 1024,
  imageHeight: 768,
  descriptorDim: 128,
  descriptorKind: DescriptorKind.siftL1Root,
  keypoints: Float32Array.from([10.5, 20.5, 2, 0.25, 100.5, 200.5, 3, -1]),
  descriptors: Uint8Array.from({ length: 256 }, (_, i) => i % 200),
});

describe("POST /v1/oneshot/features (4.15, oneshot.features)", () => {
  it("is advertised, with one-shot localization", async () => {
    const { features: flags } = (await call("GET", "/v1/capabilities")).json;
    expect(flags["oneshot.features"]).toBe(true);
    expect(flags["localize.from_memory"]).toBe(true);
  });

  it("answers in the response what a runner computed within the request, then keeps nothing", async () => {
    const t = await tenant("features");
    const runner = await t.register(["oneshot_features"]);
    const tenantId = t.tenantId;
    const state = storageState(tenantId, []);
    const before = await state();
    const answer = t.call("POST", "/v1/oneshot/features", LUND_01, jpeg);
    const lease = await leaseSoon(t.client, runner.runner_id);
    expect(lease.task).toMatchObject({ kind: "oneshot_features", phase: "feature_extraction" });
    const query = (
      lease.task.params as { oneshot_features: { query: { blob_sha: string; width: number; height: number; focal_length_35mm: number } } }
    ).oneshot_features.query;
    expect(query).toMatchObject({ byte_size: LUND_01.byteLength, width: 1024, height: 768, focal_length_35mm: 35 });
    // The image is readable through the lease, from beside the job (the tenant stores no such blob).
    expect(await t.client.readBlob(lease.lease_id, query.blob_sha)).toEqual(LUND_01);
    expect(await oneshotObjects(tenantId)).toHaveLength(1);
    const file = await t.client.writeBlob(lease.lease_id, features, FEATURES_MEDIA_TYPE);
    await t.client.complete(lease.lease_id, {
      artifacts: [
        {
          kind: "features.local.v1",
          name: "one-shot SIFT features",
          uri: null,
          artifact_format: "svc.features.local.v1",
          schema_version: 1,
          media_type: FEATURES_MEDIA_TYPE,
          summary: {},
          metadata: {},
          files: [{ path: "features/query", ...file, media_type: FEATURES_MEDIA_TYPE }],
        },
      ],
      result: { width: 1024, height: 768, num_keypoints: 2 },
    });
    const r = await answer;
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const body = OneShotFeaturesResponse.parse(r.json);
    expect(body).toMatchObject({
      width: 1024,
      height: 768,
      num_keypoints: 2,
      descriptor_kind: "sift_l1_root",
      keypoints: [
        [10.5, 20.5, 2, 0.25],
        [100.5, 200.5, 3, -1],
      ],
    });
    expect(Uint8Array.from(atob(body.descriptors), (ch) => ch.charCodeAt(0))).toEqual(Uint8Array.from({ length: 256 }, (_, i) => i % 200));
    // No job, blob, image or artifact row; the bytes and the runner's output are gone.
    expect((await t.call("GET", "/v1/jobs")).json.items).toEqual([]);
    expect(await oneshotObjects(tenantId)).toEqual([]);
    const after = await state();
    expect(after.R2).toBe(before.R2);
    for (const [table, digest] of Object.entries(before)) if (table.startsWith("TenantStore.")) expect(after[table], table).toBe(digest);
    expect(after["Dispatcher.queue"]).toBe(before["Dispatcher.queue"]);
  });

  it("answers 422 with the runner's error when it could not read the image", async () => {
    const t = await tenant("fails");
    const runner = await t.register(["oneshot_features"]);
    const answer = t.call("POST", "/v1/oneshot/features", LUND_01, jpeg);
    const lease = await leaseSoon(t.client, runner.runner_id);
    await t.client.fail(lease.lease_id, { error_class: "DecodeError", message: "not a JPEG this runner decodes", detail: null });
    const r = await answer;
    expectFieldError(r, "body", "DecodeError");
    expect(await oneshotObjects(t.tenantId)).toEqual([]);
  });

  it("a one-shot job its request left behind (the Worker died mid-request) discards itself and its bytes at its alarm", async () => {
    const t = await tenant("abandoned");
    const runner = await t.register(["oneshot_features"]);
    const answer = t.call("POST", "/v1/oneshot/features", LUND_01, jpeg);
    const lease = await leaseSoon(t.client, runner.runner_id);
    await t.client.writeBlob(lease.lease_id, features, FEATURES_MEDIA_TYPE);
    expect(await oneshotObjects(t.tenantId)).toHaveLength(2);
    const stub = jobStore(env, t.tenantId, lease.task.job_id);
    // The job's alarm is due when no request can still wait for it; the request's creation is moved back past that.
    const alarm = await runInDurableObject(stub, async (_o, state) => {
      const created = Date.parse(state.storage.sql.exec<{ c: string }>("SELECT created_at AS c FROM job").one().c);
      state.storage.sql.exec("UPDATE job SET created_at = ?", new Date(Date.now() - 3_600_000).toISOString());
      return (await state.storage.getAlarm())! - created;
    });
    expect(alarm).toBeLessThanOrEqual(readConfig(env).oneshotTimeoutMs + ONESHOT_ABANDONED_AFTER_MS);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // Gone: the bytes, the job (its lease answers teardown or 404), and the offer; the waiting request answers 503.
    expect(await oneshotObjects(t.tenantId)).toEqual([]);
    expect(await stub.detail()).toBeNull();
    expectProblem(await answer, 503, "engine_unavailable");
    await expect(t.client.heartbeat(lease.lease_id)).rejects.toThrow();
    expect(await t.client.lease(runner.runner_id, 1)).toBeNull();
    expect((await t.call("GET", "/v1/jobs")).json.items).toEqual([]);
  });

  it("answers 503 with Retry-After at once when no runner is live, and when none takes it in time", async () => {
    const idle = await tenant("idle");
    const t0 = Date.now();
    const none = await idle.call("POST", "/v1/oneshot/features", LUND_01, jpeg);
    expectProblem(none, 503, "engine_unavailable");
    expect(none.headers.get("Retry-After")).toBe("10");
    expect(Date.now() - t0).toBeLessThan(5_000);
    // A runner of another stage does not count.
    await idle.register(["relocalize"]);
    expectProblem(await idle.call("POST", "/v1/oneshot/features", LUND_01, jpeg), 503);

    // A live runner that never leases: the default tenant, deployed with a one-second lease wait.
    const busy = new RunnerClient({ baseUrl: BASE, fetch: selfFetch });
    await busy.register({
      name: "busy",
      stages: ["oneshot_features"],
      runtime_versions: await busy.serviceRuntimeVersions(),
      abilities: { webgpu: null, wasm: { simd: true, threads: false }, memory_bytes: null, hardware_concurrency: 1 },
    });
    const waited = await deployment({ SVC_ONESHOT_LEASE_WAIT_SECONDS: "1" })("POST", "/v1/oneshot/features", LUND_01, jpeg);
    expectProblem(waited, 503, "engine_unavailable");
    expect(waited.headers.get("Retry-After")).toBe("10");
    expect(waited.json.detail).toMatch(/no runner took the request within 1 s/);
    expect(await oneshotObjects("default")).toEqual([]);
  });

  it("refuses what is not an image: 415 another media type, 422 bytes without an image header, 413 beyond the cap", async () => {
    const t = await tenant("refusals");
    await t.register(["oneshot_features"]);
    const state = storageState(t.tenantId, []);
    const before = await state();
    expectProblem(
      await t.call("POST", "/v1/oneshot/features", enc({ an: "object" }), { "Content-Type": "application/json" }),
      415,
      "unsupported_media_type",
    );
    expectFieldError(await t.call("POST", "/v1/oneshot/features", enc({ not: "an image" }), jpeg), "body", "not_an_image");
    const small = deployment({ SVC_ONESHOT_MAX_REQUEST_BYTES: "1000" });
    expectProblem(await small("POST", "/v1/oneshot/features", LUND_01, jpeg), 413, "payload_too_large");
    // Streamed without a Content-Length: refused once the bytes pass the cap, not after they were all read.
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= LUND_01.byteLength) return controller.close();
        controller.enqueue(LUND_01.subarray(pulled, pulled + 512));
        pulled += 512;
      },
    });
    expectProblem(await small("POST", "/v1/oneshot/features", stream, jpeg), 413, "payload_too_large");
    expect(pulled).toBeLessThan(LUND_01.byteLength);
    expect(await state()).toEqual(before);
  });
});

describe("POST /v1/oneshot/localize?recon_id= (4.15, localize.from_memory)", () => {
  let sealed: Awaited<ReturnType<typeof sealedReconstruction>>;
  let t: Awaited<ReturnType<typeof tenant>>;
  let as: Call;
  beforeAll(async () => {
    t = await tenant("localize");
    as = t.call;
    sealed = await sealedReconstruction(scene(30, 7), { call: t.call, fetch: t.fetch as FetchLike });
  });

  it("answers 404 for an unknown or another tenant's reconstruction, 422 without a valid recon_id, 409 without the snapshot's features", async () => {
    expectProblem(await as("POST", "/v1/oneshot/localize?recon_id=01J0000000000000000000ZZZZ", LUND_01, jpeg), 404, "not_found");
    expectFieldError(await as("POST", "/v1/oneshot/localize", LUND_01, jpeg), "query.recon_id");
    expectProblem(await as("POST", "/v1/oneshot/localize?recon_id=nope", LUND_01, jpeg), 404, "not_found");
    expectProblem(await call("POST", `/v1/oneshot/localize?recon_id=${sealed.rid}`, LUND_01, jpeg), 404, "not_found");
    // The sealed reconstruction's extraction left digests, not features.
    expectProblem(await as("POST", `/v1/oneshot/localize?recon_id=${sealed.rid}`, LUND_01, jpeg), 409, "conflict");
  });

  it("runs the relocalize task on the largest snapshot and answers its LocalizationResult", async () => {
    const files = [];
    for (const im of sealed.model.images.images) {
      const bytes = enc({ features: im.name });
      files.push({ path: `features/${im.name}`, blob_sha: await uploadBlob(bytes, {}, as), byte_size: bytes.byteLength });
    }
    await expectStatus(
      as("POST", "/v1/artifacts:import", {
        project_id: sealed.pid,
        dataset_id: sealed.did,
        kind: "features.local.v1",
        name: "f",
        artifact_format: "svc.features.local.v1",
        files,
      }),
      201,
    );
    const runner = await t.register(["relocalize"]);
    const answer = as("POST", `/v1/oneshot/localize?recon_id=${sealed.rid}`, LUND_01, jpeg);
    const lease = await leaseSoon(t.client, runner.runner_id);
    expect(lease.task.params).toMatchObject({ relocalize: { query: { width: 1024, height: 768 }, recon_id: sealed.rid, seq: 1 } });
    expect(lease.inputs.artifacts.snapshot).toMatchObject({ kind: "reconstruction.snapshot", recon_id: sealed.rid });
    const result = {
      success: false,
      cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] },
      num_inliers: 0,
      inlier_matches: [],
      diagnostics: { query_path: "q", sparse_dir: "s", reason: "no match" },
    };
    await t.client.complete(lease.lease_id, { artifacts: [], result });
    const r = await answer;
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json).toEqual({ ...result, recon_id: sealed.rid, snapshot_seq: 1 });
    // No job was added (the pipeline and the import are the tenant's only ones); nothing stays beside the one-shot job.
    expect(((await as("GET", "/v1/jobs?page_size=500")).json.items as { recipe: string }[]).map((j) => j.recipe).sort()).toEqual([
      "artifact_import",
      "incremental",
    ]);
    expect(await oneshotObjects(t.tenantId)).toEqual([]);
  });
});

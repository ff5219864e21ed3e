import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { RunnerClient } from "../../client/index";
import { LocalizationResult } from "../../protocol";
import { DescriptorKind } from "../../protocol/wire/features";
import { POINT_DESCRIPTORS_FILE, POINT_DESCRIPTORS_MEDIA_TYPE, encodePointDescriptors } from "../../protocol/wire/point-descriptors";
import { decodePoints } from "../../protocol/wire/points";
import {
  BASE,
  call,
  expectFieldError,
  expectProblem,
  expectStatus,
  getSealed,
  selfFetch,
  tenantCallers,
  uploadBlob,
  cancelLiveJobs,
} from "../test/helpers";
import { LUND_01 } from "../test/photos";
import { enc, scene, sealedReconstruction } from "../test/scene";
import { storageState } from "../test/storage-state";
import { DEFAULT_TENANT } from "../context";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

let sealed: Awaited<ReturnType<typeof sealedReconstruction>>;
let photo: string;

beforeAll(async () => {
  sealed = await sealedReconstruction(scene(30, 5));
  photo = await uploadBlob(LUND_01);
});

afterEach(cancelLiveJobs);

const localize = (rid: string, body: unknown, via = call) => via("POST", `/v1/reconstructions/${rid}/localize`, body);
const jobIds = async () => ((await call("GET", "/v1/jobs?page_size=500")).json.items as { job_id: string }[]).map((j) => j.job_id);

/** A runner of relocalize tasks, and the lease it takes. */
async function leasedLocalization(name: string) {
  const client = new RunnerClient({ baseUrl: BASE, fetch: selfFetch });
  const runner = await client.register({
    name,
    stages: ["relocalize"],
    runtime_versions: await client.serviceRuntimeVersions(),
    abilities: { webgpu: null, wasm: { simd: true, threads: false }, memory_bytes: null, hardware_concurrency: 1 },
  });
  return { client, lease: (await client.lease(runner.runner_id))! };
}

/** Gives the sealed reconstruction's dataset a features artifact (one file per image), as an extraction would. */
async function importFeatures() {
  const files = [];
  for (const im of sealed.model.images.images) {
    const bytes = enc({ features: im.name });
    files.push({ path: `features/${im.name}`, blob_sha: await uploadBlob(bytes), byte_size: bytes.byteLength });
  }
  const r = await call("POST", "/v1/artifacts:import", {
    project_id: sealed.pid,
    dataset_id: sealed.did,
    kind: "features.local.v1",
    name: "features",
    artifact_format: "svc.features.local.v1",
    files,
  });
  return (await expectStatus(Promise.resolve(r), 201)).json;
}

describe("POST /v1/reconstructions/{rid}/localize (4.13, localize.from_memory)", () => {
  it("is advertised", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["localize.from_memory"]).toBe(true);
  });

  it("answers 404 for an unknown reconstruction and 422 for a missing or malformed blob_sha, writing nothing", async () => {
    const state = storageState(DEFAULT_TENANT, await jobIds());
    const before = await state();
    expectProblem(await localize("01J0000000000000000000ZZZZ", { blob_sha: photo }), 404, "not_found");
    expectFieldError(await localize(sealed.rid, {}), "blob_sha");
    expectFieldError(await localize(sealed.rid, { blob_sha: "abc" }), "blob_sha");
    expectFieldError(await localize(sealed.rid, { blob_sha: photo.toUpperCase().replace(/[0-9]/, "G") }), "blob_sha");
    expectFieldError(await localize(sealed.rid, { blob_sha: photo, sift: { max_num_features: 0 } }), "sift.max_num_features");
    expectProblem(
      await call("POST", `/v1/reconstructions/${sealed.rid}/localize`, "{not json", { "Content-Type": "application/json" }),
      400,
    );
    // A well-formed digest the tenant stores nothing under, and bytes that are no image.
    expectFieldError(await localize(sealed.rid, { blob_sha: "0".repeat(64) }), "blob_sha", "unknown_blob");
    expect(await state()).toEqual(before);
    const notImage = await uploadBlob(enc({ not: "an image" }));
    const afterUpload = await state();
    expectFieldError(await localize(sealed.rid, { blob_sha: notImage }), "blob_sha", "not_an_image");
    expect(await state()).toEqual(afterUpload);
  });

  it("answers 409 while the reconstruction has no sealed snapshot, or the features it was mapped from are gone", async () => {
    // The sealed reconstruction's extraction left digests, not features: nothing to describe its points with.
    expectProblem(await localize(sealed.rid, { blob_sha: photo }), 409, "conflict");
    const p = await expectStatus(call("POST", "/v1/projects", { name: "unsealed" }), 201);
    const d = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/datasets`, {
        name: "d",
        source: { kind: "upload", entries: [{ name: "a.jpg", blob_sha: photo }] },
      }),
      201,
    );
    const job = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
        dataset_id: d.json.dataset_id,
        spec: { kind: "incremental" },
      }),
      202,
    );
    const r = await localize(job.json.recon_id, { blob_sha: photo });
    expectProblem(r, 409, "conflict");
    expect(r.json.detail).toMatch(/no sealed snapshot/);
  });

  it("needs no features when the snapshot was sealed with its points' descriptors (x-point_descriptors.bin), which it serves", async () => {
    const model = scene(30, 5);
    const ids = Array.from(decodePoints(model.points).ids, Number);
    const descriptors = encodePointDescriptors({
      ids,
      descriptorDim: 128,
      descriptorKind: DescriptorKind.siftL1Root,
      descriptors: Uint8Array.from({ length: 128 * ids.length }, (_, i) => i % 251),
      numImages: model.images.images.length,
      numImagesSkipped: 0,
    });
    const described = await sealedReconstruction(model, undefined, { extraFiles: { [POINT_DESCRIPTORS_FILE]: descriptors } });
    const served = await getSealed(call, `/v1/reconstructions/${described.rid}/snapshots/1/${POINT_DESCRIPTORS_FILE}`);
    expect(served.res.headers.get("Content-Type")).toBe(POINT_DESCRIPTORS_MEDIA_TYPE);
    expect(new Uint8Array(await served.res.arrayBuffer())).toEqual(descriptors);

    const accepted = await expectStatus(localize(described.rid, { blob_sha: photo }), 202);
    const { client, lease } = await leasedLocalization("localizer-sealed");
    expect(lease.task.job_id).toBe(accepted.json.job_id);
    expect(Object.keys(lease.inputs.artifacts)).toEqual(["snapshot"]);
    const file = lease.inputs.artifacts.snapshot!.files.find((f) => f.path === POINT_DESCRIPTORS_FILE)!;
    expect(await client.readBlob(lease.lease_id, file.blob_sha)).toEqual(descriptors);
  });

  it("keeps tenants apart: another tenant's reconstruction is 404, its blob unknown (422)", async () => {
    const [other] = await tenantCallers("localize-other");
    expectProblem(await localize(sealed.rid, { blob_sha: photo }, other!), 404, "not_found");
    const theirs = await uploadBlob(LUND_01.slice(0, LUND_01.length - 1), {}, other!);
    expectFieldError(await localize(sealed.rid, { blob_sha: theirs }), "blob_sha", "unknown_blob");
  });

  it("submits one relocalize task against the largest snapshot with its features; its result is the LocalizationResult", async () => {
    const features = await importFeatures();
    const accepted = await expectStatus(localize(sealed.rid, { blob_sha: photo, sift: { max_num_features: 2048 } }), 202);
    expect(accepted.headers.get("Location")).toBe(`/v1/jobs/${accepted.json.job_id}`);
    expect(accepted.json).toMatchObject({ task_ids: [expect.any(String)], recon_id: sealed.rid });
    const job = (await call("GET", `/v1/jobs/${accepted.json.job_id}`)).json;
    expect(job).toMatchObject({
      recipe: "localize",
      status: "pending",
      recon_id: sealed.rid,
      tasks: [{ kind: "relocalize", status: "pending" }],
    });

    const { client, lease } = await leasedLocalization("localizer");
    expect(lease.task).toMatchObject({ kind: "relocalize", phase: "relocalize", job_id: accepted.json.job_id });
    expect(lease.task.params).toMatchObject({
      relocalize: {
        query: { blob_sha: photo, byte_size: LUND_01.byteLength, width: 1024, height: 768, focal_length_35mm: 35 },
        sift: { max_num_features: 2048 },
        recon_id: sealed.rid,
        seq: 1,
      },
    });
    expect(lease.inputs.artifacts.snapshot).toMatchObject({ kind: "reconstruction.snapshot", recon_id: sealed.rid });
    expect(lease.inputs.artifacts.features?.artifact_id).toBe(features.artifact_id);
    // The query is readable through the lease, as are the snapshot's files and the features.
    expect(await client.readBlob(lease.lease_id, photo)).toEqual(LUND_01);
    expect((await client.readBlob(lease.lease_id, features.files[0].blob_sha)).byteLength).toBe(features.files[0].byte_size);

    const result: LocalizationResult = {
      success: true,
      cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0.1, 0, 0] },
      num_inliers: 20,
      inlier_matches: [[3, 10]],
      diagnostics: { query_path: `blobs/${photo}`, sparse_dir: `/v1/reconstructions/${sealed.rid}/snapshots/1` },
    };
    await client.complete(lease.lease_id, { artifacts: [], result });
    const done = (await call("GET", `/v1/jobs/${accepted.json.job_id}`)).json;
    expect(done.status).toBe("succeeded");
    expect(LocalizationResult.parse(done.tasks[0].outputs_ref.result)).toEqual(result);
    // The same query again is the same task: answered from the cache.
    const again = await expectStatus(localize(sealed.rid, { blob_sha: photo, sift: { max_num_features: 2048 } }), 202);
    const cached = (await call("GET", `/v1/jobs/${again.json.job_id}`)).json;
    expect(cached).toMatchObject({ status: "succeeded", tasks: [{ cache_hit: true, outputs_ref: { result } }] });
  });
});

import { describe, expect, it, vi } from "vitest";
import type { Sim3 } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { DescriptorKind } from "../../protocol/wire/features";
import {
  POINT_DESCRIPTORS_FILE,
  POINT_DESCRIPTORS_MEDIA_TYPE,
  decodePointDescriptors,
  encodePointDescriptors,
} from "../../protocol/wire/point-descriptors";
import { applySim3, centreOf, invertSim3, transformPose } from "../../browser-runtime/stages/sim3";
import { splitScene } from "../../test/support/synthetic-model";
import { RunnerClient } from "../../client/index";
import { RunnerAbilities } from "../../protocol";
import { BASE, expectFieldError, expectProblem, expectStatus, getSealed, tenantCallers, uploadBlob } from "../test/helpers";
import { enc, stageTenant, sealedReconstruction } from "../test/scene";
import { storageState } from "../test/storage-state";
import { LUND_01 } from "../test/photos";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 120_000 });

const TENANT = "merge-tests";
const { as, call, run } = stageTenant(TENANT, ["merge"]);

const S: Sim3 = {
  rotation: { w: Math.cos(0.6), x: Math.sin(0.6) * 0.48, y: Math.sin(0.6) * 0.6, z: Math.sin(0.6) * 0.64 },
  translation: [40, -7.5, 3],
  scale: 0.3,
};
const IDENTITY: Sim3 = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0], scale: 1 };
const moveBy = (s: Sim3) => ({
  pose: (p: Parameters<typeof transformPose>[0]) => transformPose(p, s),
  point: (x: [number, number, number]) => applySim3(s, x),
});
// The workerd runner has no engine: merges here skip the bundle adjustment (x-bundle_adjust, tested with the engine in browser-runtime/stages/merge.test.ts).
const mergeOf = (body: unknown, via = call) => via("POST", "/v1/reconstructions:merge", body);

/**
 * One scene of six images reconstructed twice in one project: the target from images 0-3 in the
 * scene's frame, the source from images 2-5 in the frame S^-1 of it. Shared images are the same
 * photo bytes in both datasets. `descriptors`: each snapshot sealed with x-point_descriptors.bin, every
 * byte of the target's `descriptors[0]`, of the source's `descriptors[1]`.
 */
async function halves(descriptors?: [number, number]) {
  const whole = splitScene(6, 60, 5);
  const p = await expectStatus(call("POST", "/v1/projects", { name: "merge" }), 201);
  const nonce = Math.random();
  const photo = (name: string) => enc({ photo: name, nonce });
  const sealed = (h: ReturnType<typeof whole.half>, value?: number) => {
    const ids = Array.from(h.ids, Number);
    const file = encodePointDescriptors({
      ids,
      descriptorDim: 128,
      descriptorKind: DescriptorKind.siftL1Root,
      descriptors: new Uint8Array(128 * ids.length).fill(value ?? 0),
      numImages: h.images.images.length,
      numImagesSkipped: 0,
    });
    const extraFiles = value === undefined ? undefined : { [POINT_DESCRIPTORS_FILE]: file };
    return sealedReconstruction(h, as, { projectId: p.json.project_id, photo, extraFiles });
  };
  const target = await sealed(whole.half([0, 1, 2, 3], 10, moveBy(IDENTITY)), descriptors?.[0]);
  const source = await sealed(whole.half([2, 3, 4, 5], 5000, moveBy(invertSim3(S))), descriptors?.[1]);
  return { whole, target, source, pid: p.json.project_id as string };
}

async function snapshot(rid: string, seq: number) {
  const images = (await getSealed(call, `/v1/reconstructions/${rid}/snapshots/${seq}/images.json`)).json.images as {
    name: string;
    cam_from_world: never;
    points2D: { point3d_id: number | null }[];
  }[];
  const points = decodePoints(
    new Uint8Array(await (await getSealed(call, `/v1/reconstructions/${rid}/snapshots/${seq}/points.bin`)).res.arrayBuffer()),
  );
  return { images, points };
}

describe("POST /v1/reconstructions:merge (4.9, recon.merge)", () => {
  it("is advertised and documented", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["recon.merge"]).toBe(true);
    expect((await call("GET", "/openapi.json")).json.paths["/v1/reconstructions:merge"].post.responses["202"]).toBeDefined();
  });

  it("two overlapping halves merged without aligners give the whole model, sealed under the target", async () => {
    const { whole, target, source } = await halves();
    const r = await expectStatus(mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [source.rid] }), 202);
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
    expect(r.json.recon_id).toBe(target.rid);
    const job = await run(r.json.job_id);
    expect(job).toMatchObject({
      recipe: "merge",
      status: "succeeded",
      recon_id: target.rid,
      tasks: [{ kind: "merge", status: "succeeded" }],
    });
    const result = job.tasks[0].outputs_ref.result;
    expect(result).toMatchObject({
      snapshot_seq: 2,
      target_seq: 1,
      added_images: 2,
      fused_points: 60,
      sources: [{ recon_id: source.rid, seq: 1, estimated: true, shared_images: 2, shared_points: 60 }],
    });
    expect(result.sources[0].sim3.scale).toBeCloseTo(S.scale, 5);
    expect(result.mean_reproj_err).toBeLessThan(1e-3);
    expect((await call("GET", `/v1/reconstructions/${target.rid}/snapshots`)).json.seqs).toEqual([1, 2]);
    expect((await call("GET", `/v1/reconstructions/${source.rid}/snapshots`)).json.seqs).toEqual([1]);

    const merged = await snapshot(target.rid, 2);
    expect(merged.images.map((im) => im.name)).toEqual(["img0.jpg", "img1.jpg", "img2.jpg", "img3.jpg", "img4.jpg", "img5.jpg"]);
    merged.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-5);
    });
    expect([...merged.points.ids].map(Number)).toEqual(Array.from({ length: 60 }, (_, k) => 10 + k));
    whole.xyz.flat().forEach((v, i) => expect(Math.abs(merged.points.xyz[i]! - v)).toBeLessThan(1e-5));
    expect([...merged.points.trackLength]).toEqual(new Array(60).fill(6));
    const summary = (await getSealed(call, `/v1/reconstructions/${target.rid}/snapshots/2/summary.json`)).json;
    expect(summary).toMatchObject({ models: [{ idx: 0, num_reg_images: 6, num_points3D: 60 }], phase: "hierarchical_merge" });
  });

  it("the merged snapshot joins the models' point descriptors (x-point_descriptors.bin), so it is localized without features", async () => {
    const { target, source } = await halves([8, 20]);
    const r = await expectStatus(mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [source.rid] }), 202);
    expect((await run(r.json.job_id)).status).toBe("succeeded");
    const file = await getSealed(call, `/v1/reconstructions/${target.rid}/snapshots/2/${POINT_DESCRIPTORS_FILE}`);
    expect(file.res.headers.get("Content-Type")).toBe(POINT_DESCRIPTORS_MEDIA_TYPE);
    const merged = decodePointDescriptors(new Uint8Array(await file.res.arrayBuffer()));
    // Every point fused, each half's track four images long: the mean of 8 and 20.
    expect(merged).toMatchObject({ ids: Array.from({ length: 60 }, (_, k) => 10 + k), numImages: 8, numImagesSkipped: 0 });
    expect(merged.descriptors.every((v) => v === 14)).toBe(true);
    // Localized from the snapshot alone; a merge of models without descriptors has none, and (mapped from digests here, not
    // features) nothing to describe its points with: 409.
    const query = { blob_sha: await uploadBlob(LUND_01, {}, call) };
    await expectStatus(call("POST", `/v1/reconstructions/${target.rid}/localize`, query), 202);
    const bare = await halves();
    const m = await expectStatus(
      mergeOf({ "x-bundle_adjust": false, target_recon_id: bare.target.rid, source_recon_ids: [bare.source.rid] }),
      202,
    );
    expect((await run(m.json.job_id)).status).toBe("succeeded");
    expect((await call("GET", `/v1/reconstructions/${bare.target.rid}/snapshots/2/${POINT_DESCRIPTORS_FILE}`)).status).toBe(404);
    expectProblem(await call("POST", `/v1/reconstructions/${bare.target.rid}/localize`, query), 409, "conflict");
  });

  it("with aligners: the right Sim3 gives the whole model; an identity leaves the source where it is", async () => {
    const { whole, target, source } = await halves();
    const right = await run(
      (
        await expectStatus(
          mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [source.rid], sim3_aligners: [S] }),
          202,
        )
      ).json.job_id,
    );
    expect(right.tasks[0].outputs_ref.result.sources[0]).toMatchObject({ estimated: false, sim3: { scale: S.scale } });
    const merged = await snapshot(target.rid, 2);
    merged.images.forEach((im, i) => {
      const [got, want] = [centreOf(im.cam_from_world), centreOf(whole.poses[i]!)];
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - want[k]!)).toBeLessThan(1e-5);
    });
    // Merged again (onto snapshot 2) with an identity: the source's own images keep its poses.
    const again = await run(
      (
        await expectStatus(
          mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [source.rid], sim3_aligners: [IDENTITY] }),
          202,
        )
      ).json.job_id,
    );
    expect(again.tasks[0].outputs_ref.result).toMatchObject({ snapshot_seq: 3, target_seq: 2 });
    const unmoved = await snapshot(target.rid, 3);
    // img4 and img5 were added by the first merge; the second adds none, so no source pose is copied: the target's stay as they were.
    expect(unmoved.images.map((im) => im.cam_from_world)).toEqual(merged.images.map((im) => im.cam_from_world));
    expect(source.model.images.images.map((im) => im.cam_from_world)).toEqual(
      (await snapshot(source.rid, 1)).images.map((im) => im.cam_from_world),
    );
  });

  it("by default the merge task is bundle adjusted on a runner's engine (x-bundle_adjust)", async () => {
    const { target, source } = await halves();
    const r = await expectStatus(
      call("POST", "/v1/reconstructions:merge", { target_recon_id: target.rid, source_recon_ids: [source.rid] }),
      202,
    );
    const client = new RunnerClient({ baseUrl: BASE, fetch: as.fetch });
    const runner = await client.register({
      name: "merge-params",
      stages: ["merge"],
      runtime_versions: await client.serviceRuntimeVersions(),
      abilities: RunnerAbilities.parse({}),
    });
    const lease = await client.lease(runner.runner_id);
    expect(lease?.task).toMatchObject({ job_id: r.json.job_id, kind: "merge", phase: "hierarchical_merge" });
    expect(lease!.task.params).toMatchObject({
      merge: { bundle_adjust: true, target: { recon_id: target.rid, seq: 1 }, sources: [{ recon_id: source.rid, seq: 1, sim3: null }] },
    });
    expect(Object.keys(lease!.inputs.artifacts).sort()).toEqual(["snapshot", "source.0"]);
    await call("POST", `/v1/jobs/${r.json.job_id}:cancel?force=true`);
  });

  it("a source sharing no image and given no aligner fails the task and seals nothing", async () => {
    const { whole, target, pid } = await halves();
    const stranger = await sealedReconstruction(whole.half([4, 5], 9000, moveBy(IDENTITY)), as, { projectId: pid });
    const job = await run(
      (await expectStatus(mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [stranger.rid] }), 202)).json
        .job_id,
    );
    expect(job).toMatchObject({ status: "failed", error_class: "ValidationError" });
    expect(job.error_message).toContain("shares no image");
    expect((await call("GET", `/v1/reconstructions/${target.rid}/snapshots`)).json.seqs).toEqual([1]);
  });

  it("404, 409 and 422 before anything is made; sources only from the target's project; another tenant's are unknown", async () => {
    const { target, source } = await halves();
    const elsewhere = await sealedReconstruction(splitScene(3, 10, 9).half([0, 1, 2], 10, moveBy(IDENTITY)), as);
    // A reconstruction of the target's project with no snapshot yet (photos of its own, so no cached snapshot is adopted).
    const entries = [{ name: "a.jpg", blob_sha: await uploadBlob(enc({ unsealed: Math.random() }), {}, call) }];
    const d = await expectStatus(
      call("POST", `/v1/projects/${target.pid}/datasets`, { name: "u", source: { kind: "upload", entries } }),
      201,
    );
    const unsealed = await expectStatus(
      call("POST", `/v1/projects/${target.pid}/pipelines/incremental`, { dataset_id: d.json.dataset_id, spec: { kind: "incremental" } }),
      202,
    );
    const jobs = (await call("GET", "/v1/jobs?page_size=500")).json.items.map((j: { job_id: string }) => j.job_id);
    const state = storageState(TENANT, jobs);
    const before = await state();
    const absent = "01J00000000000000000000000";
    expectProblem(await mergeOf({ target_recon_id: absent, source_recon_ids: [source.rid] }), 404, "not_found");
    expectProblem(await mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [absent] }), 404, "not_found");
    const [other] = await tenantCallers("merge-other");
    expectProblem(
      await mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [source.rid] }, other),
      404,
      "not_found",
    );
    expectFieldError(
      await mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [elsewhere.rid] }),
      "source_recon_ids.0",
      "other_project",
    );
    expectProblem(
      await mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [unsealed.json.recon_id] }),
      409,
      "conflict",
    );
    expectFieldError(
      await mergeOf({
        "x-bundle_adjust": false,
        target_recon_id: target.rid,
        source_recon_ids: [source.rid],
        sim3_aligners: [IDENTITY, IDENTITY],
      }),
      "sim3_aligners",
    );
    expectFieldError(
      await mergeOf({
        "x-bundle_adjust": false,
        target_recon_id: target.rid,
        source_recon_ids: [source.rid],
        sim3_aligners: [{ ...IDENTITY, scale: 0 }],
      }),
      "sim3_aligners.0.scale",
    );
    expectFieldError(
      await mergeOf({
        "x-bundle_adjust": false,
        target_recon_id: target.rid,
        source_recon_ids: [source.rid],
        sim3_aligners: [{ ...IDENTITY, rotation: { w: 2, x: 0, y: 0, z: 0 } }],
      }),
      "sim3_aligners.0.rotation",
    );
    expectFieldError(
      await mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [target.rid] }),
      "source_recon_ids",
    );
    expectFieldError(await mergeOf({ "x-bundle_adjust": false, target_recon_id: target.rid, source_recon_ids: [] }), "source_recon_ids");
    expectFieldError(await mergeOf({ source_recon_ids: [source.rid] }), "target_recon_id");
    expect(await state()).toEqual(before);
    await call("POST", `/v1/jobs/${unsealed.json.job_id}:cancel?force=true`);
  });
});

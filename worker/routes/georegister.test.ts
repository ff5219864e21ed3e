import { describe, expect, it, vi } from "vitest";
import type { Sim3 } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { enuOf } from "../../browser-runtime/stages/enu";
import { applySim3, centreOf, invertSim3, transformPose } from "../../browser-runtime/stages/sim3";
import { expectFieldError, expectProblem, expectStatus, getSealed, tenantCallers, uploadBlob } from "../test/helpers";
import { enc, stageTenant, scene, sealedReconstruction } from "../test/scene";
import { storageState } from "../test/storage-state";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const TENANT = "georegister-tests";
const { as, call, run } = stageTenant(TENANT, ["georegister"]);

const S: Sim3 = {
  rotation: { w: Math.cos(0.35), x: 0, y: Math.sin(0.35) * 0.6, z: Math.sin(0.35) * 0.8 },
  translation: [120.5, -33.25, 7],
  scale: 2.5,
};

const georegister = (rid: string, body: unknown, via = call) => via("POST", `/v1/reconstructions/${rid}/georegister`, body);

async function snapshotFile(rid: string, seq: number, name: string) {
  const r = await getSealed(call, `/v1/reconstructions/${rid}/snapshots/${seq}/${name}`);
  expect(r.status, name).toBe(200);
  return r;
}
const pointsOf = async (rid: string, seq: number) =>
  decodePoints(new Uint8Array(await (await snapshotFile(rid, seq, "points.bin")).res.arrayBuffer()));

/** The same rotation up to sign, each member within `tol`; translations too. */
function expectPoseClose(
  a: { rotation: Sim3["rotation"]; translation: number[] },
  b: { rotation: Sim3["rotation"]; translation: number[] },
  tol: number,
) {
  const keys = ["w", "x", "y", "z"] as const;
  const sign = Math.sign(keys.reduce((acc, k) => acc + a.rotation[k] * b.rotation[k], 0));
  for (const k of keys) expect(Math.abs(sign * a.rotation[k] - b.rotation[k])).toBeLessThan(tol);
  for (let k = 0; k < 3; k++) expect(Math.abs(a.translation[k]! - b.translation[k]!)).toBeLessThan(tol);
}

describe("POST /v1/reconstructions/{rid}/georegister (4.13, georegister.sim3)", () => {
  it("is advertised and documented", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["georegister.sim3"]).toBe(true);
    const doc = (await call("GET", "/openapi.json")).json;
    expect(doc.paths["/v1/reconstructions/{rid}/georegister"].post.responses["202"]).toBeDefined();
  });

  it("moves every camera and point by the Sim3 and seals a new snapshot; the inverse gives the model back (1e-9; points to float precision)", async () => {
    const sealed = await sealedReconstruction(scene(40, 21), as);
    const r = await expectStatus(georegister(sealed.rid, S), 202);
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
    expect(r.json).toMatchObject({ recon_id: sealed.rid, task_ids: [expect.any(String)] });
    const job = await run(r.json.job_id);
    expect(job).toMatchObject({
      recipe: "georegister",
      status: "succeeded",
      recon_id: sealed.rid,
      tasks: [{ kind: "georegister", status: "succeeded" }],
    });
    expect(job.tasks[0].outputs_ref.result).toMatchObject({ snapshot_seq: 2, source_seq: 1, sim3: { scale: S.scale } });
    expect((await call("GET", `/v1/reconstructions/${sealed.rid}/snapshots`)).json.seqs).toEqual([1, 2]);

    // Snapshot 2: each camera centre at s R c + t, the same orientation relative to the moved world; the points moved; the cameras and observations as they were.
    const before = sealed.model.images.images;
    const moved = (await snapshotFile(sealed.rid, 2, "images.json")).json.images;
    before.forEach((im, i) => {
      const c = applySim3(S, centreOf(im.cam_from_world));
      const got = centreOf(moved[i].cam_from_world);
      for (let k = 0; k < 3; k++) expect(Math.abs(got[k]! - c[k]!)).toBeLessThan(1e-9);
      expect(moved[i].points2D).toEqual(im.points2D);
    });
    expect((await snapshotFile(sealed.rid, 2, "cameras.json")).json).toEqual(sealed.model.cameras);
    const points2 = await pointsOf(sealed.rid, 2);
    expect(points2.ids).toEqual(sealed.model.ids);
    for (let i = 0; i < 40; i++) {
      const x = applySim3(S, [sealed.model.xyz[3 * i]!, sealed.model.xyz[3 * i + 1]!, sealed.model.xyz[3 * i + 2]!]);
      for (let k = 0; k < 3; k++) expect(Math.abs(points2.xyz[3 * i + k]! - x[k]!)).toBeLessThan(2e-7 * Math.abs(x[k]!) + 1e-6);
    }
    // Announced, and the snapshot's summary names the Sim3.
    const submodels = (await call("GET", `/v1/reconstructions/${sealed.rid}/submodels`)).json.items;
    expect(submodels.find((m: { snapshot_seq: number }) => m.snapshot_seq === 2)?.summary).toMatchObject({
      num_points3D: 40,
      "x-sim3": { scale: S.scale },
    });
    const root = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?kind=reconstruction.snapshot`)).json.items;
    expect(root.find((a: { summary: { snapshot_seq?: number } }) => a.summary.snapshot_seq === 2)).toBeDefined();

    // The inverse: snapshot 3 is snapshot 1 again.
    const back = await expectStatus(georegister(sealed.rid, invertSim3(S)), 202);
    expect((await run(back.json.job_id)).status).toBe("succeeded");
    const returned = (await snapshotFile(sealed.rid, 3, "images.json")).json.images;
    before.forEach((im, i) => expectPoseClose(returned[i].cam_from_world, im.cam_from_world, 1e-9));
    const points3 = await pointsOf(sealed.rid, 3);
    // Two float32 roundings, the first at the moved points' magnitude (about s |t| = 300): a few 1e-5 there, divided by s on the way back.
    const magnitude = Math.max(...points2.xyz.map(Math.abs));
    for (let i = 0; i < sealed.model.xyz.length; i++)
      expect(Math.abs(points3.xyz[i]! - sealed.model.xyz[i]!)).toBeLessThan(
        (2 * 2 ** -24 * magnitude) / S.scale + 2 ** -24 * Math.abs(sealed.model.xyz[i]!),
      );
  });

  it("an identity leaves the model unchanged; every request seals a snapshot of its own (no cache hit)", async () => {
    const sealed = await sealedReconstruction(scene(10, 22), as);
    const identity = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0], scale: 1 };
    for (const seq of [2, 3]) {
      const r = await expectStatus(georegister(sealed.rid, identity), 202);
      expect((await run(r.json.job_id)).tasks[0].outputs_ref.result.snapshot_seq).toBe(seq);
    }
    expect((await snapshotFile(sealed.rid, 3, "images.json")).json).toEqual(sealed.model.images);
    expect((await pointsOf(sealed.rid, 3)).xyz).toEqual(sealed.model.xyz);
  });

  it("422 for each malformed Sim3, and nothing is written", async () => {
    const sealed = await sealedReconstruction(scene(8, 23), as);
    const jobs = (await call("GET", "/v1/jobs?page_size=500")).json.items.map((j: { job_id: string }) => j.job_id);
    const state = storageState(TENANT, jobs);
    const before = await state();
    const unit = { w: 1, x: 0, y: 0, z: 0 };
    expectFieldError(
      await georegister(sealed.rid, { rotation: { w: 1, x: 0.5, y: 0, z: 0 }, translation: [0, 0, 0], scale: 1 }),
      "rotation",
    );
    expectFieldError(await georegister(sealed.rid, { rotation: { w: 0, x: 0, y: 0, z: 0 }, translation: [0, 0, 0], scale: 1 }), "rotation");
    expectFieldError(await georegister(sealed.rid, { rotation: unit, translation: [0, 0, 0], scale: 0 }), "scale");
    expectFieldError(await georegister(sealed.rid, { rotation: unit, translation: [0, 0, 0], scale: -2 }), "scale");
    expectFieldError(await georegister(sealed.rid, { rotation: unit, translation: [0, 0], scale: 1 }), "translation");
    expectFieldError(await georegister(sealed.rid, { rotation: unit, translation: [0, "1", 0], scale: 1 }), "translation.1");
    expectFieldError(await georegister(sealed.rid, { rotation: unit, translation: [0, 0, 0] }), "scale");
    // Non-finite numbers: JSON has none, but 1e999 parses to Infinity.
    const json = { "Content-Type": "application/json" };
    expectFieldError(
      await call(
        "POST",
        `/v1/reconstructions/${sealed.rid}/georegister`,
        '{"rotation":{"w":1,"x":0,"y":0,"z":0},"translation":[1e999,0,0],"scale":1}',
        json,
      ),
      "translation.0",
    );
    expectFieldError(
      await call(
        "POST",
        `/v1/reconstructions/${sealed.rid}/georegister`,
        '{"rotation":{"w":1,"x":0,"y":0,"z":0},"translation":[0,0,0],"scale":1e999}',
        json,
      ),
      "scale",
    );
    expectFieldError(
      await call(
        "POST",
        `/v1/reconstructions/${sealed.rid}/georegister`,
        '{"rotation":{"w":1e999,"x":0,"y":0,"z":0},"translation":[0,0,0],"scale":1}',
        json,
      ),
      "rotation.w",
    );
    expectProblem(await call("POST", `/v1/reconstructions/${sealed.rid}/georegister`, '{"rotation":', json), 400, "bad_request");
    expectProblem(await georegister(sealed.rid, [1, 2]), 422, "validation");
    // The extension: x-from_gps excludes a Sim3, and needs 3 images with a position (this dataset has none).
    expectFieldError(await georegister(sealed.rid, { "x-from_gps": true, rotation: unit, translation: [0, 0, 0], scale: 1 }), "rotation");
    expectFieldError(await georegister(sealed.rid, { "x-from_gps": true, "x-max_error_m": 0 }), "x-max_error_m");
    expectFieldError(await georegister(sealed.rid, { "x-from_gps": true }), "x-from_gps", "too_few_references");
    expectFieldError(await georegister(sealed.rid, { "x-from_gps": true, "x-reference": "gps" }), "x-reference", "too_few_references");
    expect(await state()).toEqual(before);
  });

  it("404 for an unknown reconstruction and for another tenant's; 409 before a snapshot is sealed", async () => {
    const identity = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0], scale: 1 };
    expectProblem(await georegister("01J00000000000000000000000", identity), 404, "not_found");
    const sealed = await sealedReconstruction(scene(8, 24), as);
    const [other] = await tenantCallers("georegister-other");
    expectProblem(await georegister(sealed.rid, identity, other), 404, "not_found");
    expect((await call("GET", `/v1/reconstructions/${sealed.rid}/snapshots`)).json.seqs).toEqual([1]);

    // Photos of their own: the same ones would adopt the sealed snapshot from the cache (3.2.1).
    const p = await expectStatus(call("POST", "/v1/projects", { name: "unsealed" }), 201);
    const entries = [{ name: "a.jpg", blob_sha: await uploadBlob(enc({ unsealed: Math.random() }), {}, call) }];
    const d = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } }),
      201,
    );
    const pipeline = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
        dataset_id: d.json.dataset_id,
        spec: { kind: "incremental" },
      }),
      202,
    );
    expectProblem(await georegister(pipeline.json.recon_id, identity), 409, "conflict");
    await call("POST", `/v1/jobs/${pipeline.json.job_id}:cancel?force=true`);
  });
});

describe("x-from_gps: the Sim3 estimated from GPS or pose priors (our extension)", () => {
  /** The scene with its three cameras at non-collinear centres `centres` (identity rotations). */
  function placed(centres: [number, number, number][], seed: number) {
    const model = scene(12, seed);
    const [fx, fy, cx, cy] = model.cameras.cameras[0]!.params as [number, number, number, number];
    const at = new Map(Array.from(model.ids, (id, k) => [Number(id), k]));
    model.images.images.forEach((im, i) => {
      const t = centres[i]!.map((v) => -v) as [number, number, number];
      im.cam_from_world = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: t };
      // The observations follow the new poses: a seal checks that they reproject (worker/services/snapshot-files.ts).
      for (const p of im.points2D) {
        if (p.point3d_id === null) continue;
        const k = at.get(p.point3d_id)!;
        const [x, y, z] = [model.xyz[3 * k]! + t[0], model.xyz[3 * k + 1]! + t[1], model.xyz[3 * k + 2]! + t[2]];
        p.xy = [(fx * x) / z + cx, (fy * y) / z + cy];
      }
    });
    return model;
  }

  it("from pose priors: the model comes out in the priors' frame, with its residuals", async () => {
    const sealed = await sealedReconstruction(
      placed(
        [
          [0, 0, 0],
          [1, 0, 0],
          [0.3, 0.8, 0.1],
        ],
        31,
      ),
      as,
    );
    const images = (await call("GET", `/v1/datasets/${sealed.did}/images?page_size=50`)).json.items as { image_id: string; name: string }[];
    const priors = Object.fromEntries(
      images.map((img) => [
        img.image_id,
        { cam_from_world: transformPose(sealed.model.images.images.find((m) => m.name === img.name)!.cam_from_world, S) },
      ]),
    );
    await expectStatus(call("PUT", `/v1/datasets/${sealed.did}/pose_priors`, priors), 200);
    const r = await expectStatus(georegister(sealed.rid, { "x-from_gps": true, "x-max_error_m": 0.01 }), 202);
    const job = await run(r.json.job_id);
    expect(job.status).toBe("succeeded");
    const result = job.tasks[0].outputs_ref.result;
    expect(result["x-alignment"]).toMatchObject({ reference: "pose_priors", enu_origin: null, num_references: 3, num_inliers: 3 });
    expect(result["x-alignment"].rmse_m).toBeLessThan(1e-9);
    expect(result.sim3.scale).toBeCloseTo(S.scale, 9);
    const moved = (await snapshotFile(sealed.rid, 2, "images.json")).json.images;
    for (const im of moved) {
      const img = images.find((i) => i.name === im.name)!;
      expectPoseClose(im.cam_from_world, priors[img.image_id]!.cam_from_world, 1e-8);
    }
  });

  it("from GPS: the model comes out in metres East-North-Up of the positions' mean; collinear positions fail the task and say why", async () => {
    const gps = [
      { latitude: 55.7001, longitude: 13.1901, altitude: 40 },
      { latitude: 55.7003, longitude: 13.1902, altitude: 42 },
      { latitude: 55.7002, longitude: 13.1906, altitude: 41 },
    ];
    const origin = { latitude: (55.7001 + 55.7003 + 55.7002) / 3, longitude: (13.1901 + 13.1902 + 13.1906) / 3, altitude: 41 };
    const enu = gps.map((g) => enuOf(g, origin));
    // The model: the ENU positions seen through S^-1 (so the answer is S).
    const sealed = await sealedReconstruction(
      placed(
        enu.map((e) => applySim3(invertSim3(S), e)),
        32,
      ),
      as,
    );
    const images = (await call("GET", `/v1/datasets/${sealed.did}/images?page_size=50`)).json.items as { image_id: string; name: string }[];
    // GPS as a pose prior's `gps` (EXIF GPS, read at upload, is used the same way); the priors' poses are not what gps aligns to.
    const priors = Object.fromEntries(
      images.map((img) => {
        const i = sealed.model.images.images.findIndex((m) => m.name === img.name);
        return [img.image_id, { cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] }, gps: gps[i] }];
      }),
    );
    await expectStatus(call("PUT", `/v1/datasets/${sealed.did}/pose_priors`, priors), 200);
    const r = await expectStatus(georegister(sealed.rid, { "x-from_gps": true }), 202);
    const job = await run(r.json.job_id);
    expect(job.status).toBe("succeeded");
    const alignment = job.tasks[0].outputs_ref.result["x-alignment"];
    expect(alignment).toMatchObject({ reference: "gps", num_references: 3, num_inliers: 3, max_error_m: 10 });
    expect(alignment.enu_origin.latitude).toBeCloseTo(origin.latitude, 12);
    expect(alignment.rmse_m).toBeLessThan(1e-6);
    expect(alignment.residuals.map((x: { image_name: string }) => x.image_name).sort()).toEqual(["img0.jpg", "img1.jpg", "img2.jpg"]);
    const moved = (await snapshotFile(sealed.rid, 2, "images.json")).json.images;
    moved.forEach((im: { name: string; cam_from_world: never }) => {
      const c = centreOf(im.cam_from_world);
      const e = enu[Number(im.name.slice(3, 4))]!;
      for (let k = 0; k < 3; k++) expect(Math.abs(c[k]! - e[k]!)).toBeLessThan(1e-6);
    });

    // Positions on a line leave the roll about it free: the task fails with a ValidationError naming it, and nothing is sealed.
    const line = await sealedReconstruction(scene(8, 33), as);
    const lineImages = (await call("GET", `/v1/datasets/${line.did}/images?page_size=50`)).json.items as {
      image_id: string;
      name: string;
    }[];
    const onLine = Object.fromEntries(
      lineImages.map((img) => {
        const x = line.model.images.images.findIndex((m) => m.name === img.name);
        return [
          img.image_id,
          {
            cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] },
            gps: { latitude: 55.7, longitude: 13.19 + 0.0001 * x, altitude: 40 },
          },
        ];
      }),
    );
    await expectStatus(call("PUT", `/v1/datasets/${line.did}/pose_priors`, onLine), 200);
    const failed = await run((await expectStatus(georegister(line.rid, { "x-from_gps": true, "x-reference": "gps" }), 202)).json.job_id);
    expect(failed).toMatchObject({ status: "failed", error_class: "ValidationError" });
    expect(failed.error_message).toContain("on a line");
    expect((await call("GET", `/v1/reconstructions/${line.rid}/snapshots`)).json.seqs).toEqual([1]);
  });
});

import { SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunnerClient } from "../../client/index";
import { RunnerAbilities } from "../../protocol";
import {
  BASE,
  call,
  expectFieldError,
  expectProblem,
  expectStatus,
  selfFetch,
  sha256Hex,
  uploadBlob,
  cancelLiveJobs,
} from "../test/helpers";
import { LUND_01, LUND_02 } from "../test/photos";
import { sealedReconstruction } from "../test/scene";

vi.setConfig({ testTimeout: 60_000 });

afterEach(cancelLiveJobs);

/** A project with a dataset of two real photos, spherical or not. */
async function photoDataset(spherical: boolean, names = ["a.jpg", "b.jpg"]) {
  const p = await expectStatus(call("POST", "/v1/projects", { name: "pano" }), 201);
  const entries = [
    { name: names[0], blob_sha: await uploadBlob(LUND_01) },
    { name: names[1], blob_sha: await uploadBlob(LUND_02) },
  ];
  const d = await expectStatus(
    call("POST", `/v1/projects/${p.json.project_id}/datasets`, {
      name: "street",
      source: { kind: "upload", entries },
      is_spherical: spherical,
      camera_model: spherical ? "SPHERICAL" : "SIMPLE_RADIAL",
    }),
    201,
  );
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string };
}

const runnerClient = () => new RunnerClient({ baseUrl: BASE, fetch: selfFetch });

/** A runner that leases the pending projection task (without computing it). */
async function leaseProjection() {
  const client = runnerClient();
  const runner = await client.register({
    name: "pano-test",
    stages: ["projection"],
    runtime_versions: await client.serviceRuntimeVersions(),
    abilities: RunnerAbilities.parse({}),
  });
  const lease = await client.lease(runner.runner_id);
  if (!lease) throw new Error("no projection task to lease");
  return { client, lease };
}

describe("projection jobs on datasets (4.14)", () => {
  it("advertises the projection capabilities and the legacy names (1.2, 9.6)", async () => {
    const features = (await call("GET", "/v1/capabilities")).json.features;
    for (const name of [
      "projection.equirectangular_to_cubemap",
      "projection.cubemap_to_equirectangular",
      "projection.equirectangular_to_perspective",
      "spherical.render_cubemap",
    ]) {
      expect(features[name], name).toBe(true);
    }
  });

  it(":render_cubemap submits one projection task with the normalised request", async () => {
    const { pid, did } = await photoDataset(true);
    const r = await expectStatus(call("POST", `/v1/datasets/${did}:render_cubemap?face_size=256`, { sampling: "lanczos" }), 202);
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
    const job = (await call("GET", `/v1/jobs/${r.json.job_id}`)).json;
    expect(job).toMatchObject({
      recipe: "render_cubemap",
      project_id: pid,
      recon_id: null,
      tasks: [{ kind: "projection", status: "pending" }],
    });
    const { lease } = await leaseProjection();
    expect(lease.task.phase).toBe("panorama");
    expect(lease.task.params).toEqual({
      projection: {
        projection: "equirectangular_to_cubemap",
        face_size: 256,
        sampling: "lanczos",
        faces: ["front", "right", "back", "left", "up", "down"],
        output: { create_dataset: true, dataset_name: null, format: "jpeg", jpeg_quality: 95 },
        source_dataset_id: did,
      },
      derived_dataset: { name: "street (cubemap)" },
    });
    expect(lease.inputs.dataset?.images.map((i) => i.name)).toEqual(["a.jpg", "b.jpg"]);
  });

  it("the other routes submit their projection; without a body :render_cubemap takes the defaults", async () => {
    const { did } = await photoDataset(true);
    await expectStatus(call("POST", `/v1/datasets/${did}:render_cubemap`), 202);
    const p = await expectStatus(
      call("POST", `/v1/datasets/${did}:render_perspective`, { width: 320, height: 240, fov_deg: 70, views: [{ name: "ahead" }] }),
      202,
    );
    expect((await call("GET", `/v1/jobs/${p.json.job_id}`)).json.recipe).toBe("render_perspective");
    const g = await expectStatus(
      call("POST", `/v1/datasets/${did}:project_images`, {
        projection: "equirectangular_to_cubemap",
        face_size: 64,
        output: { create_dataset: false },
      }),
      202,
    );
    expect((await call("GET", `/v1/jobs/${g.json.job_id}`)).json.recipe).toBe("project_images");
  });

  it("a dataset that is not spherical is refused with 422 (4.14 rule 1, 7)", async () => {
    const { did } = await photoDataset(false);
    expectFieldError(await call("POST", `/v1/datasets/${did}:render_cubemap`, {}), "dataset_id", "not_spherical");
    expectFieldError(await call("POST", `/v1/datasets/${did}:render_perspective`, {}), "dataset_id", "not_spherical");
    expectFieldError(
      await call("POST", `/v1/datasets/${did}:project_images`, { projection: "equirectangular_to_cubemap" }),
      "dataset_id",
      "not_spherical",
    );
    expect((await call("GET", "/v1/jobs?status=pending")).json.items).toEqual([]);
  });

  it("face_size is 64 to 8192, in the body or the query (8)", async () => {
    const { did } = await photoDataset(true);
    expectFieldError(await call("POST", `/v1/datasets/${did}:render_cubemap`, { face_size: 63 }), "face_size", "too_small");
    expectFieldError(await call("POST", `/v1/datasets/${did}:render_cubemap`, { face_size: 8193 }), "face_size", "too_big");
    expectProblem(await call("POST", `/v1/datasets/${did}:render_cubemap?face_size=32`), 422, "validation");
    expectProblem(await call("POST", `/v1/datasets/${did}:render_cubemap?face_size=100`, { face_size: 200 }), 422, "validation");
    expectFieldError(
      await call("POST", `/v1/datasets/${did}:project_images`, { projection: "equirectangular_to_cubemap", face_size: 9000 }),
      "face_size",
    );
    await expectStatus(call("POST", `/v1/datasets/${did}:render_cubemap`, { face_size: 64 }), 202);
    await expectStatus(call("POST", `/v1/datasets/${did}:render_cubemap?face_size=8192`), 202);
  });

  it("an optional body that is there must be a JSON object: malformed JSON is 400, another JSON value 422, and no job is made", async () => {
    const { did } = await photoDataset(true);
    const before = (await call("GET", "/v1/jobs?page_size=500")).json.total;
    expectProblem(
      await call("POST", `/v1/datasets/${did}:render_cubemap?face_size=64`, '{"sampling": "linear"', {
        "Content-Type": "application/json",
      }),
      400,
      "bad_request",
    );
    expectProblem(
      await call("POST", `/v1/datasets/${did}:render_cubemap?face_size=64`, "[1]", { "Content-Type": "application/json" }),
      422,
      "validation",
    );
    expect((await call("GET", "/v1/jobs?page_size=500")).json.total).toBe(before);
  });

  it(":render_equirectangular needs complete cubemaps and names what is missing", async () => {
    const { did } = await photoDataset(true);
    expectFieldError(await call("POST", `/v1/datasets/${did}:render_equirectangular`, {}), "dataset_id", "no_cubemap");
    const partial = await photoDataset(false, ["front/p1.jpg", "right/p1.jpg"]);
    const r = await call("POST", `/v1/datasets/${partial.did}:render_equirectangular`, {});
    expectFieldError(r, "dataset_id", "incomplete_cubemap");
    expect(r.json.errors[0].message).toContain("lacks back, left, up, down");
  });

  it("unknown datasets answer 404; an empty one 422", async () => {
    expectProblem(await call("POST", "/v1/datasets/01J00000000000000000000000:render_cubemap", {}), 404, "not_found");
    const p = await expectStatus(call("POST", "/v1/projects", { name: "empty" }), 201);
    const d = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/datasets`, {
        name: "e",
        is_spherical: true,
        source: { kind: "upload", entries: [] },
      }),
      201,
    );
    expectFieldError(await call("POST", `/v1/datasets/${d.json.dataset_id}:render_cubemap`, {}), "dataset_id", "empty_dataset");
  });
});

describe("derived datasets through the lease (4.14 rule 4)", () => {
  it("registers the uploaded images once; a retry reuses it; a taken name gets the task id", async () => {
    const { pid, did } = await photoDataset(true);
    // A dataset already named like the derived one: the derived one gets the task's suffix.
    await expectStatus(call("POST", `/v1/projects/${pid}/datasets`, { name: "faces", source: { kind: "upload", entries: [] } }), 201);
    const submitted = await expectStatus(
      call("POST", `/v1/datasets/${did}:render_cubemap`, { face_size: 64, output: { dataset_name: "faces" } }),
      202,
    );
    const { client, lease } = await leaseProjection();
    // Real JPEG bytes uploaded with an image media type: the service reads their size.
    const face = await client.writeBlob(lease.lease_id, LUND_01, "image/jpeg");
    const body = {
      camera_model: "PINHOLE" as const,
      intrinsics_mode: "per_folder" as const,
      is_spherical: false,
      rig_config: { rigs: [] },
      respect_exif_orientation: false,
      images: [{ name: "front/a.jpg", blob_sha: face.blob_sha }],
    };
    const first = await client.registerDataset(lease.lease_id, body);
    expect(first.reused).toBe(false);
    expect(first.dataset).toMatchObject({
      name: `faces-${submitted.json.task_ids[0]}`,
      project_id: pid,
      camera_model: "PINHOLE",
      is_spherical: false,
      rig_config_json: { rigs: [] },
    });
    const again = await client.registerDataset(lease.lease_id, body);
    expect(again).toEqual({ dataset: first.dataset, reused: true });
    const images = (await call("GET", `/v1/datasets/${first.dataset.dataset_id}/images`)).json.items;
    expect(images).toMatchObject([{ name: "front/a.jpg", content_sha: face.blob_sha, width: 1024, height: 768 }]);
  });

  it("refuses blobs the job did not upload, and tasks that register no dataset", async () => {
    const { did } = await photoDataset(true);
    const noDataset = await expectStatus(call("POST", `/v1/datasets/${did}:render_cubemap`, { output: { create_dataset: false } }), 202);
    const { client, lease } = await leaseProjection();
    const sha = await sha256Hex(new Uint8Array([1, 2, 3]));
    const post = (images: { name: string; blob_sha: string }[]) =>
      SELF.fetch(`${BASE}/v1/leases/${lease.lease_id}/datasets`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ camera_model: "PINHOLE", intrinsics_mode: "single_camera", is_spherical: false, images }),
      });
    expect((await post([{ name: "x.jpg", blob_sha: sha }])).status).toBe(409);
    await client.release(lease.lease_id, "test");
    await expectStatus(call("POST", `/v1/jobs/${noDataset.json.job_id}:cancel`), 200);

    const other = await photoDataset(true);
    await expectStatus(call("POST", `/v1/datasets/${other.did}:render_cubemap`, {}), 202);
    const second = await leaseProjection();
    const r = await SELF.fetch(`${BASE}/v1/leases/${second.lease.lease_id}/datasets`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        camera_model: "PINHOLE",
        intrinsics_mode: "single_camera",
        is_spherical: false,
        images: [{ name: "x.jpg", blob_sha: sha }],
      }),
    });
    expect(r.status).toBe(422);
    expect(((await r.json()) as { errors: { path: string; code: string }[] }).errors).toEqual([
      expect.objectContaining({ path: "images.0.blob_sha", code: "unknown_blob" }),
    ]);
  });
});

describe("the spherical pipeline and :to_cubemap on the wrong input (2.12, 4.13, 7)", () => {
  it("advertises them, and the legacy spherical.to_cubemap", async () => {
    const features = (await call("GET", "/v1/capabilities")).json.features;
    for (const name of ["map.spherical", "pipelines.spherical", "projection.cubemap_rig", "spherical.to_cubemap"])
      expect(features[name], name).toBe(true);
  });

  it("the spherical pipeline needs a spherical dataset; on one its extract and map tasks get the cube faces", async () => {
    const flat = await photoDataset(false);
    expectFieldError(
      await call("POST", `/v1/projects/${flat.pid}/pipelines/spherical`, { dataset_id: flat.did, spec: { kind: "spherical" } }),
      "dataset_id",
      "not_spherical",
    );
    const pano = await photoDataset(true);
    const r = await expectStatus(
      call("POST", `/v1/projects/${pano.pid}/pipelines/spherical`, { dataset_id: pano.did, spec: { kind: "spherical" } }),
      202,
    );
    const job = (await call("GET", `/v1/jobs/${r.json.job_id}`)).json;
    expect(job.tasks.map((t: { kind: string }) => t.kind)).toEqual(["extract", "match", "verify", "map"]);
    // Without panorama the panoramas are mapped as SPHERICAL images, no cube faces.
    await expectStatus(
      call("POST", `/v1/projects/${pano.pid}/pipelines/spherical`, { dataset_id: pano.did, spec: { kind: "spherical", panorama: false } }),
      202,
    );
  });

  it(":to_cubemap answers 404 for an unknown reconstruction, 422 when its dataset is not spherical, 409 before a snapshot", async () => {
    expectProblem(await call("POST", "/v1/reconstructions/01J00000000000000000000000:to_cubemap"), 404, "not_found");
    const sealed = await sealedReconstruction();
    expectFieldError(await call("POST", `/v1/reconstructions/${sealed.rid}:to_cubemap`), "dataset_id", "not_spherical");
    const pano = await photoDataset(true);
    const r = await expectStatus(
      call("POST", `/v1/projects/${pano.pid}/pipelines/spherical`, { dataset_id: pano.did, spec: { kind: "spherical" } }),
      202,
    );
    expectProblem(await call("POST", `/v1/reconstructions/${r.json.recon_id}:to_cubemap`, {}), 409, "conflict");
    expectFieldError(await call("POST", `/v1/reconstructions/${r.json.recon_id}:to_cubemap`, { face_size: 32 }), "face_size", "too_small");
  });
});

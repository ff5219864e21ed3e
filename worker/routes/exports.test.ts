import { SELF, env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { EXPORT_ARTIFACT_TYPES, EXPORT_FORMATS, StageArtifact } from "../../protocol";
import { readTar } from "../../protocol/wire/tar";
import { DEFAULT_TENANT } from "../context";
import { tenantStore } from "../services/stores";
import { BASE, call, deployment, expectFieldError, expectProblem, expectStatus, cancelLiveJobs } from "../test/helpers";
import { exportRunner, scene, sealedReconstruction } from "../test/scene";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const decoder = new TextDecoder();
let sealed: Awaited<ReturnType<typeof sealedReconstruction>>;

beforeAll(async () => {
  sealed = await sealedReconstruction(scene(40, 11));
});

afterEach(cancelLiveJobs);

const exportOf = (rid: string, body: unknown) => call("POST", `/v1/reconstructions/${rid}/export`, body);

/** Submits an export, has the real export executor run it, and answers the job and its artifacts. */
async function exported(rid: string, body: Record<string, unknown>) {
  const accepted = await expectStatus(exportOf(rid, body), 202);
  const runner = await exportRunner();
  await runner.drain();
  const job = (await call("GET", `/v1/jobs/${accepted.json.job_id}`)).json;
  const artifacts = (await call("GET", `/v1/jobs/${accepted.json.job_id}/artifacts`)).json.items as StageArtifact[];
  return { accepted, job, artifact: artifacts[0]!, artifacts };
}

const content = async (a: StageArtifact, query = "") =>
  new Uint8Array(await (await SELF.fetch(`${BASE}/v1/artifacts/${a.artifact_id}/content${query}`)).arrayBuffer());

describe("exports (1.2 export.*, task kind and phase `export`)", () => {
  it("every export format is advertised", async () => {
    const features = (await call("GET", "/v1/capabilities")).json.features;
    for (const format of EXPORT_FORMATS) expect(features[`export.${format}`], format).toBe(true);
  });

  it("exports the latest sealed snapshot as a job whose one export task produces the format's artifact", async () => {
    const { accepted, job, artifact, artifacts } = await exported(sealed.rid, { format: "colmap_text" });
    expect(accepted.headers.get("Location")).toBe(`/v1/jobs/${accepted.json.job_id}`);
    expect(accepted.json).toMatchObject({ task_ids: [expect.any(String)], recon_id: sealed.rid });
    expect(job).toMatchObject({
      recipe: "export",
      status: "succeeded",
      recon_id: sealed.rid,
      project_id: sealed.pid,
      tasks: [{ kind: "export", status: "succeeded" }],
    });
    expect(artifacts).toHaveLength(1);
    const snapshot = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?kind=reconstruction.snapshot`)).json.items[0];
    expect(artifact).toMatchObject({
      kind: "reconstruction.colmap_model",
      artifact_format: "colmap.model.text.v1",
      name: "colmap_text",
      recon_id: sealed.rid,
      dataset_id: sealed.did,
      task_id: accepted.json.task_ids[0],
      metadata: {
        format: "colmap_text",
        recon_id: sealed.rid,
        seq: 1,
        submodel_idx: null,
        source_artifact_id: snapshot.artifact_id,
        lossless: true,
        warnings: [],
      },
    });
    expect(artifact.summary).toMatchObject({ num_cameras: 1, num_images: 3, num_points3D: 40, num_observations: 120 });
    expect(artifact.files.map((f) => [f.path, f.media_type])).toEqual([
      ["cameras.txt", "text/plain"],
      ["images.txt", "text/plain"],
      ["points3D.txt", "text/plain"],
    ]);
    const tar = readTar(await content(artifact));
    expect(decoder.decode(tar.get("cameras.txt")!)).toMatch(
      /^# Camera list with one line of data per camera:\n.*\n# Number of cameras: 1\n1 PINHOLE 640 480 500 500 320 240\n$/s,
    );
    expect(
      decoder
        .decode(tar.get("points3D.txt")!)
        .trim()
        .split("\n")
        .filter((l) => !l.startsWith("#")),
    ).toHaveLength(40);
    // The reconstruction lists its exports too; the events name the export phase.
    const listed = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?task_id=${artifact.task_id}`)).json.items;
    expect(listed).toEqual([artifact]);
    const events = await (await SELF.fetch(`${BASE}/v1/jobs/${job.job_id}/events`)).text();
    expect(events).toContain('"kind":"phase_started","phase":"export"');
    expect(events).toContain('"kind":"phase_completed","phase":"export"');
  });

  it("every format runs; photo-carrying formats list the dataset's own image blobs (no copy)", async () => {
    for (const format of EXPORT_FORMATS) {
      const { job, artifact } = await exported(sealed.rid, { format, options: { allow_distorted_cameras: true } });
      expect(job.status, `${format}: ${job.error_message}`).toBe("succeeded");
      const type = EXPORT_ARTIFACT_TYPES[format];
      expect(artifact).toMatchObject({ kind: type.kind, artifact_format: type.artifact_format, media_type: type.media_type });
    }
    const { artifact } = await exported(sealed.rid, { format: "nerfstudio", name: "for training" });
    expect(artifact.name).toBe("for training");
    const photos = artifact.files.filter((f) => f.path.startsWith("images/"));
    expect(photos.map((f) => [f.path, f.blob_sha])).toEqual(sealed.photos.map((p) => [`images/${p.name}`, p.blob_sha]));
    const transforms = JSON.parse(decoder.decode(await content(artifact, "?path=transforms.json")));
    expect(transforms.frames.map((f: { file_path: string }) => f.file_path).sort()).toEqual(sealed.photos.map((p) => `images/${p.name}`));
    const photo = await content(artifact, `?path=images/${sealed.photos[0]!.name}`);
    expect(JSON.parse(decoder.decode(photo)).photo).toBe(sealed.photos[0]!.name);
    const without = await exported(sealed.rid, { format: "kapture", options: { include_images: false } });
    expect(without.artifact.files.some((f) => f.path.startsWith("sensors/records_data/"))).toBe(false);
    expect((without.artifact.metadata.warnings as string[]).join()).toMatch(/photos not included/);
  });

  it("a component is exported from its submodel artifact; the same export again is a cache hit with an artifact of its own", async () => {
    const first = await exported(sealed.rid, { format: "ply", seq: 1, submodel_idx: 0 });
    expect(first.artifact.metadata).toMatchObject({ seq: 1, submodel_idx: 0 });
    const submodel = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?kind=reconstruction.submodel`)).json.items[0];
    expect(first.artifact.metadata.source_artifact_id).toBe(submodel.artifact_id);
    const ply = await content(first.artifact);
    expect(decoder.decode(ply.subarray(0, 60))).toMatch(/^ply\nformat binary_little_endian 1.0\nelement vertex 40\n/);
    const again = await exported(sealed.rid, { format: "ply", seq: 1, submodel_idx: 0 });
    expect(again.job.tasks[0].cache_hit).toBe(true);
    expect(again.artifact.artifact_id).not.toBe(first.artifact.artifact_id);
    expect(again.artifact.files).toEqual(first.artifact.files);
  });

  it("a snapshot sealed before artifacts were recorded gets its artifact when first exported", async () => {
    const old = await sealedReconstruction(scene(10, 23));
    // As a tenant whose snapshots predate the artifact registry: no snapshot artifact rows.
    await runInDurableObject(tenantStore(env, DEFAULT_TENANT), (_o, state) => {
      for (const r of state.storage.sql
        .exec<{ artifact_id: string }>("SELECT artifact_id FROM artifacts WHERE recon_id = ? AND snapshot_seq IS NOT NULL", old.rid)
        .toArray()) {
        for (const b of state.storage.sql
          .exec<{ sha: string }>("SELECT sha FROM artifact_blobs WHERE artifact_id = ?", r.artifact_id)
          .toArray()) {
          state.storage.sql.exec("UPDATE blobs SET refcount = refcount - 1 WHERE sha = ?", b.sha);
        }
        state.storage.sql.exec("DELETE FROM artifact_blobs WHERE artifact_id = ?", r.artifact_id);
        state.storage.sql.exec("DELETE FROM artifacts WHERE artifact_id = ?", r.artifact_id);
      }
    });
    const snapshots = () => call("GET", `/v1/reconstructions/${old.rid}/artifacts?kind=reconstruction.snapshot`);
    expect((await snapshots()).json.items).toEqual([]);
    const { job, artifact } = await exported(old.rid, { format: "ply" });
    expect(job.status).toBe("succeeded");
    const [made] = (await snapshots()).json.items;
    expect(made).toMatchObject({ recon_id: old.rid, metadata: { seq: 1, submodel_idx: null } });
    expect(artifact.metadata.source_artifact_id).toBe(made.artifact_id);
  });

  it("a snapshot the format cannot hold fails the task with a ValidationError saying why", async () => {
    const radial = await sealedReconstruction(scene(20, 5, { radial: true }));
    const { job, artifacts } = await exported(radial.rid, { format: "gaussian_splatting" });
    expect(job).toMatchObject({ status: "failed", error_class: "ValidationError" });
    expect(job.error_message).toMatch(/gaussian_splatting.*unsupported_camera_model.*SIMPLE_RADIAL/);
    expect(artifacts).toEqual([]);
    const allowed = await exported(radial.rid, { format: "gaussian_splatting", options: { allow_distorted_cameras: true } });
    expect(allowed.job.status).toBe("succeeded");
    expect((allowed.artifact.metadata.warnings as string[]).join()).toMatch(/distorted/);
    expect(allowed.artifact.files.map((f) => f.path).filter((p) => p.startsWith("sparse/"))).toEqual([
      "sparse/0/cameras.bin",
      "sparse/0/images.bin",
      "sparse/0/points3D.bin",
    ]);
  });

  it("is refused before anything is queued: unknown reconstruction, snapshot or component (404), nothing sealed yet (409), a bad body (422)", async () => {
    const before = (await call("GET", "/v1/jobs?page_size=1")).json.total;
    expectProblem(await exportOf("01ARZ3NDEKTSV4RRFFQ69G5FAV", { format: "ply" }), 404, "not_found");
    expectProblem(await exportOf(sealed.rid, { format: "ply", seq: 9 }), 404, "not_found");
    expectProblem(await exportOf(sealed.rid, { format: "ply", submodel_idx: 4 }), 404, "not_found");
    expectFieldError(await exportOf(sealed.rid, { format: "obj" }), "format");
    expectFieldError(await exportOf(sealed.rid, { format: "instant_ngp", options: { aabb_scale: 0 } }), "options.aabb_scale");
    expectFieldError(await exportOf(sealed.rid, { format: "kapture", options: { keypoints_type: "../x" } }), "options.keypoints_type");
    expect((await call("GET", "/v1/jobs?page_size=1")).json.total).toBe(before);
    // A pipeline that has sealed nothing yet.
    const p = await expectStatus(call("POST", `/v1/projects`, { name: "unsealed" }), 201);
    const d = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: sealed.photos } }),
      201,
    );
    const pipeline = await expectStatus(
      call("POST", `/v1/projects/${p.json.project_id}/pipelines/incremental`, {
        dataset_id: d.json.dataset_id,
        spec: { kind: "incremental", seed: 7 },
      }),
      202,
    );
    expectProblem(await exportOf(pipeline.json.recon_id, { format: "ply" }), 409, "conflict");
    // Another tenant's reconstruction is absent.
    const apiKey = deployment({ SVC_AUTH_MODE: "api_key" });
    const key = (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: "exports-co" }), 201)).json.raw_key;
    expectProblem(
      await apiKey("POST", `/v1/reconstructions/${sealed.rid}/export`, { format: "ply" }, { Authorization: `Bearer ${key}` }),
      404,
      "not_found",
    );
  });
});

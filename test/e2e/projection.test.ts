/**
 * Projection jobs end to end (spec 4.14) over real HTTP with the Node runner: panoramas of a
 * spherical dataset rendered to cubemaps (the artifact, its manifest, the task result and the
 * derived dataset with its rig config), back to panoramas, and to perspective views; a retried
 * task reuses the dataset its first attempt registered (rule 4).
 */
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { packRgba, renderCubemapFace } from "../../engine-wasm/ts/projection";
import { CUBEMAP_FACES, ProjectionManifest, RunnerAbilities, type StageArtifact } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { encodePng, stripedPanorama, uploadPanoramaDataset } from "../support/panoramas";

let server: Server;
let http: ReturnType<typeof httpClient>;
let runner: Runner;

const artifactOf = async (jobId: string) => (await http("GET", `/v1/jobs/${jobId}/artifacts`)).json.items[0] as StageArtifact;
const fileOf = async (a: StageArtifact, path: string) =>
  (await http("GET", `/v1/artifacts/${a.artifact_id}/content?path=${encodeURIComponent(path)}`)).raw;

let pid: string;
let did: string;
const panoramas = [stripedPanorama(0), stripedPanorama(3)];

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  http = httpClient(server.base);
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("e2e-projection"), { stages: ["projection"] });
  await runner.register();
  pid = (await http("POST", "/v1/projects", { name: "panoramas" })).json.project_id;
  const files: [string, Uint8Array][] = [];
  for (const [i, p] of panoramas.entries()) files.push([`pano_${i}.png`, await encodePng(p)]);
  did = await uploadPanoramaDataset(http, pid, "street", files);
});
afterAll(async () => {
  await server?.stop();
});

describe("projection jobs (4.14) with the Node runner", () => {
  let cubemapDataset: string;

  it("renders cubemaps: the artifact, the manifest, the result and the derived dataset", async () => {
    const submitted = await http("POST", `/v1/datasets/${did}:render_cubemap?face_size=64`, {
      sampling: "cubic",
      output: { format: "png" },
    });
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
    expect(await runner.drain()).toBe(1);
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, job.error_message).toBe("succeeded");
    const result = job.tasks[0].outputs_ref.result;
    expect(result).toEqual({
      output_path: "images",
      num_files: 12,
      manifest_path: "projection_manifest.json",
      derived_dataset: { dataset_id: expect.any(String), project_id: pid, name: "street (cubemap)", reused: false },
    });

    const artifact = await artifactOf(submitted.json.job_id);
    expect(artifact).toMatchObject({ kind: "projection.images.v1", artifact_format: "svc.projection.images.v1", dataset_id: did });
    const names = CUBEMAP_FACES.flatMap((f) => [0, 1].map((i) => `images/${f}/pano_${i}.png`)).sort();
    expect(artifact.files.map((f) => f.path).sort()).toEqual([...names, "projection_manifest.json"].sort());

    const manifest = ProjectionManifest.parse(JSON.parse(new TextDecoder().decode(await fileOf(artifact, "projection_manifest.json"))));
    expect(manifest.source_images.map((s) => s.name)).toEqual(["pano_0.png", "pano_1.png"]);
    expect(manifest.output_images).toHaveLength(12);
    expect(manifest.geometry!.sensors.map((s) => s.name)).toEqual([...CUBEMAP_FACES]);
    expect(manifest.geometry!.sensors[1]).toMatchObject({ model: "PINHOLE", params: [32, 32, 32, 32] });
    // The right face is the panorama turned 90 degrees about its down axis.
    const q = (manifest.geometry!.sensors[1]!.sensor_from_rig as { rotation: Record<string, number> }).rotation;
    [q.w, q.x, q.y, q.z].forEach((v, i) => expect(v).toBeCloseTo([Math.SQRT1_2, 0, -Math.SQRT1_2, 0][i]!, 12));
    expect(manifest.derived_dataset).toEqual(result.derived_dataset);

    // The faces are the engine's, pixel for pixel (PNG is lossless).
    const engine = await loadEngine();
    const source = packRgba(panoramas[1]!.rgba, 512, 256, 4);
    const expected = renderCubemapFace(engine, source, "up", 64, "cubic");
    const stored = await sharp(await fileOf(artifact, "images/up/pano_1.png"))
      .ensureAlpha()
      .raw()
      .toBuffer();
    expect(new Uint32Array(stored.buffer, stored.byteOffset, 64 * 64)).toEqual(expected.data);

    cubemapDataset = result.derived_dataset.dataset_id;
    const ds = (await http("GET", `/v1/projects/${pid}/datasets/${cubemapDataset}`)).json;
    expect(ds).toMatchObject({ name: "street (cubemap)", camera_model: "PINHOLE", intrinsics_mode: "per_folder", is_spherical: false });
    expect(ds.rig_config_json.rigs[0].cameras.map((c: { image_prefix: string }) => c.image_prefix)).toEqual(
      CUBEMAP_FACES.map((f) => `${f}/`),
    );
    expect(ds.rig_config_json.rigs[0].cameras[0]).toMatchObject({
      ref_sensor: true,
      camera_model_name: "PINHOLE",
      camera_params: [32, 32, 32, 32],
    });
    const images = (await http("GET", `/v1/datasets/${cubemapDataset}/images?page_size=50`)).json.items;
    expect(images).toHaveLength(12);
    for (const image of images) expect(image).toMatchObject({ width: 64, height: 64, media_type: "image/png" });
  });

  it("renders the cubemaps back to panoramas close to the originals", async () => {
    const submitted = await http("POST", `/v1/datasets/${cubemapDataset}:render_equirectangular`, {
      width: 512,
      sampling: "linear",
      output: { format: "png" },
    });
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
    expect(await runner.drain()).toBe(1);
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, job.error_message).toBe("succeeded");
    const derived = job.tasks[0].outputs_ref.result.derived_dataset;
    const ds = (await http("GET", `/v1/projects/${pid}/datasets/${derived.dataset_id}`)).json;
    expect(ds).toMatchObject({ camera_model: "SPHERICAL", is_spherical: true });
    const artifact = await artifactOf(submitted.json.job_id);
    const back = await sharp(await fileOf(artifact, "images/pano_0.png"))
      .ensureAlpha()
      .raw()
      .toBuffer();
    // 64-pixel faces hold less than the 512-pixel panorama: compare the mean difference.
    let sum = 0;
    for (let i = 0; i < back.length; i++) if (i % 4 !== 3) sum += Math.abs(back[i]! - panoramas[0]!.rgba[i]!);
    expect(sum / ((back.length * 3) / 4)).toBeLessThan(6);
  });

  it("renders perspective views named by view", async () => {
    const submitted = await http("POST", `/v1/datasets/${did}:render_perspective`, {
      width: 80,
      height: 60,
      fov_deg: 60,
      views: [{ name: "ahead" }, { name: "sky", pitch_deg: 60, yaw_deg: 30 }],
      output: { create_dataset: false },
    });
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
    expect(await runner.drain()).toBe(1);
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, job.error_message).toBe("succeeded");
    expect(job.tasks[0].outputs_ref.result).toMatchObject({ num_files: 4, derived_dataset: null });
    const artifact = await artifactOf(submitted.json.job_id);
    expect(artifact.files.map((f) => f.path).sort()).toEqual([
      "images/ahead/pano_0.jpg",
      "images/ahead/pano_1.jpg",
      "images/sky/pano_0.jpg",
      "images/sky/pano_1.jpg",
      "projection_manifest.json",
    ]);
    const meta = await sharp(await fileOf(artifact, "images/sky/pano_1.jpg")).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([80, 60, "jpeg"]);
  });

  it("a retried task reuses the dataset its first attempt registered (4.14 rule 4)", async () => {
    const submitted = await http("POST", `/v1/datasets/${did}:render_cubemap`, {
      face_size: 64,
      faces: ["front"],
      output: { dataset_name: "retry" },
    });
    // A first attempt registers the dataset, then gives the task back unfinished (as a runner that dies would).
    const client = new RunnerClient({ baseUrl: server.base });
    const first = await client.register({
      name: "first-attempt",
      stages: ["projection"],
      runtime_versions: await localRuntimeVersions(),
      abilities: RunnerAbilities.parse({}),
    });
    const lease = (await client.lease(first.runner_id))!;
    const face = await client.writeBlob(lease.lease_id, await encodePng(panoramas[0]!), "image/png");
    const registered = await client.registerDataset(lease.lease_id, {
      camera_model: "PINHOLE",
      intrinsics_mode: "per_folder",
      is_spherical: false,
      rig_config: null,
      respect_exif_orientation: false,
      images: [{ name: "front/pano_0.jpg", blob_sha: face.blob_sha }],
    });
    await client.release(lease.lease_id, "simulated crash");
    expect(await runner.drain()).toBe(1);
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, job.error_message).toBe("succeeded");
    expect(job.tasks[0].attempts).toBe(2);
    expect(job.tasks[0].outputs_ref.result.derived_dataset).toEqual({
      dataset_id: registered.dataset.dataset_id,
      project_id: pid,
      name: "retry",
      reused: true,
    });
    // Another job asking for the same name gets its task's suffix instead of failing.
    const again = await http("POST", `/v1/datasets/${did}:render_cubemap`, {
      face_size: 64,
      faces: ["front"],
      output: { dataset_name: "retry" },
    });
    expect(await runner.drain()).toBe(1);
    const second = await waitForJob(http, again.json.job_id);
    expect(second.tasks[0].outputs_ref.result.derived_dataset.name).toBe(`retry-${again.json.task_ids[0]}`);
  });
});

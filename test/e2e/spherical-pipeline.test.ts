/**
 * The spherical pipeline (spec 2.12 `spherical`, 4.7) and `:to_cubemap` (4.13) end to end over
 * real HTTP with the Node runner, on equirectangular panoramas rendered from a textured room along
 * a known path (test/support/panoramas.ts), so the poses can be scored: with `panorama: true` each
 * panorama's features are found on its cube faces and it is adjusted as a 6-face cubemap rig; the
 * sealed snapshot holds one rig and one frame per panorama, whose poses must lie within 1 degree
 * of the truth (after a similarity alignment). With `panorama: false` the panoramas are mapped as
 * SPHERICAL images, and `:to_cubemap` seals that snapshot again as cubemap rigs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { type ImagePose, compareToReference } from "../../engine-wasm/ts/accuracy";
import { CUBEMAP_FACES, CamerasFile, FramesFile, ImagesFile, RigsFile } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { camFromWorld, encodeJpeg, renderRoomPanorama, roomPath, uploadPanoramaDataset } from "../support/panoramas";

let server: Server;
let http: ReturnType<typeof httpClient>;
let runner: Runner;
let pid: string;
let did: string;
const path = roomPath(8);
const truth: ImagePose[] = path.map((p) => {
  const pose = camFromWorld(p);
  return { name: p.name, qvec: pose.rotation, tvec: pose.translation };
});

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  http = httpClient(server.base);
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("e2e-spherical"));
  await runner.register();
  pid = (await http("POST", "/v1/projects", { name: "panorama walk" })).json.project_id;
  const files: [string, Uint8Array][] = [];
  for (const pose of path) files.push([pose.name, await encodeJpeg(renderRoomPanorama(pose, 768))]);
  did = await uploadPanoramaDataset(http, pid, "room", files);
}, 300_000);
afterAll(async () => {
  await server?.stop();
});

async function latest(reconId: string) {
  const seqs = (await http("GET", `/v1/reconstructions/${reconId}/snapshots`)).json.seqs as number[];
  const base = `/v1/reconstructions/${reconId}/snapshots/${seqs.at(-1)}`;
  const get = async (name: string) => (await http("GET", `${base}/${name}`)).json;
  return { seq: seqs.at(-1)!, get };
}

/** The frames' poses (rig_from_world = the panorama's cam_from_world), named by panorama. */
async function framePoses(reconId: string) {
  const { get } = await latest(reconId);
  const rigs = RigsFile.parse(await get("rigs.json"));
  const frames = FramesFile.parse(await get("frames.json"));
  const images = ImagesFile.parse(await get("images.json"));
  const cameras = CamerasFile.parse(await get("cameras.json"));
  const poses: ImagePose[] = frames.frames.map((f) => {
    const r = f.rig_from_world;
    return { name: path[f.frame_id - 1]!.name, qvec: [r.rotation.w, r.rotation.x, r.rotation.y, r.rotation.z], tvec: r.translation };
  });
  return { rigs, frames, images, cameras, poses };
}

async function run(body: unknown) {
  const submitted = await http("POST", `/v1/projects/${pid}/pipelines/spherical`, body);
  expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
  await runner.drain();
  const job = await waitForJob(http, submitted.json.job_id);
  expect(
    job.status,
    JSON.stringify(job.tasks.map((t: { kind: string; status: string; error_message: string }) => [t.kind, t.status, t.error_message])),
  ).toBe("succeeded");
  return { job, recon_id: submitted.json.recon_id as string };
}

describe("the spherical pipeline (2.12) and :to_cubemap (4.13)", () => {
  it("maps panoramas as cubemap rigs within 1 degree of the known path", async () => {
    const { job, recon_id } = await run({ dataset_id: did, spec: { kind: "spherical", panorama: true } });
    expect(job.tasks.map((t: { kind: string }) => t.kind)).toEqual(["extract", "match", "verify", "map"]);
    const { rigs, frames, images, cameras, poses } = await framePoses(recon_id);
    expect(rigs.rigs).toHaveLength(1);
    expect(Object.keys(rigs.rigs[0]!.sensor_from_rig)).toHaveLength(6);
    expect(cameras.cameras.every((c) => c.model === "PINHOLE" && c.width === 192)).toBe(true);
    expect(frames.frames).toHaveLength(path.length);
    for (const f of frames.frames) expect(Object.keys(f.data_ids)).toHaveLength(6);
    expect(images.images.filter((i) => i.name.startsWith("up/"))).toHaveLength(path.length);
    const report = compareToReference(poses, truth);
    console.log("spherical pipeline (cubemap rigs):", {
      maxRotationErrorDeg: report.maxRotationErrorDeg,
      medianRotationErrorDeg: report.medianRotationErrorDeg,
      maxCenterErrorFraction: report.maxCenterErrorFraction,
    });
    expect(report.numRegistered).toBe(path.length);
    expect(report.maxRotationErrorDeg).toBeLessThan(1);
    expect(report.maxCenterErrorFraction).toBeLessThan(0.01);
    const said = new TextDecoder().decode((await http("GET", `/v1/jobs/${job.job_id}/events`)).raw);
    expect(said).toContain("on each panorama's six 192-pixel cube faces");
    expect(said).toContain('"phase":"spherical"');
  }, 600_000);

  it("with panorama: false maps SPHERICAL images; :to_cubemap seals them again as cubemap rigs", async () => {
    const { recon_id } = await run({ dataset_id: did, spec: { kind: "spherical", panorama: false } });
    const before = await latest(recon_id);
    const spherical = CamerasFile.parse(await before.get("cameras.json"));
    expect(spherical.cameras.map((c) => c.model)).toEqual(["SPHERICAL"]);
    const sphericalImages = ImagesFile.parse(await before.get("images.json"));

    const submitted = await http("POST", `/v1/reconstructions/${recon_id}:to_cubemap`, { face_size: 128 });
    expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
    expect(await runner.drain()).toBe(1);
    const job = await waitForJob(http, submitted.json.job_id);
    expect(job.status, job.error_message).toBe("succeeded");
    expect(job.tasks[0]).toMatchObject({ kind: "to_cubemap", outputs_ref: { result: { snapshot_seq: before.seq + 1, face_size: 128 } } });
    const { rigs, frames, images, cameras, poses } = await framePoses(recon_id);
    expect(rigs.rigs[0]!.ref_sensor_id).toBe(1);
    expect(cameras.cameras.map((c) => [c.model, c.width, c.params])).toEqual(CUBEMAP_FACES.map(() => ["PINHOLE", 128, [64, 64, 64, 64]]));
    expect(frames.frames).toHaveLength(sphericalImages.images.length);
    // Every observation is kept, each on one face; the frames carry the panoramas' poses.
    const count = (f: { images: { points2D: { point3d_id: number | null }[] }[] }) =>
      f.images.flatMap((i) => i.points2D).filter((p) => p.point3d_id !== null).length;
    expect(count(images)).toBe(count(sphericalImages));
    const byId = (a: [number, unknown][]) => a.sort((x, y) => x[0] - y[0]);
    expect(byId(frames.frames.map((f) => [f.frame_id, f.rig_from_world]))).toEqual(
      byId(sphericalImages.images.map((i) => [i.image_id, i.cam_from_world])),
    );
    const report = compareToReference(poses, truth);
    console.log("spherical pipeline (SPHERICAL images):", {
      maxRotationErrorDeg: report.maxRotationErrorDeg,
      maxCenterErrorFraction: report.maxCenterErrorFraction,
    });
    expect(report.maxRotationErrorDeg).toBeLessThan(1);
    // The new snapshot is announced like any other.
    const said = new TextDecoder().decode((await http("GET", `/v1/jobs/${job.job_id}/events`)).raw);
    expect(said).toContain(`"snapshot_seq":${before.seq + 1}`);
  }, 600_000);
});

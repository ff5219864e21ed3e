import { SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { KaptureImportResult, StageArtifact } from "../../protocol";
import { readTar, tarArchive } from "../../protocol/wire/tar";
import { DigestRunner } from "../../scripts/digest-runner";
import { BASE, call, expectFieldError, expectProblem, expectStatus, selfFetch, uploadBlob, cancelLiveJobs } from "../test/helpers";
import { LUND_01, LUND_02, SACRE_COEUR } from "../test/photos";
import { splitScene } from "../../test/support/synthetic-model";
import { exportRunner, sealedReconstruction } from "../test/scene";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const enc = new TextEncoder();
const PHOTOS: Record<string, Uint8Array> = { "img0.jpg": LUND_01, "img1.jpg": LUND_02, "img2.jpg": SACRE_COEUR };

let sealed: Awaited<ReturnType<typeof sealedReconstruction>>;
/** Our kapture export of `sealed`, photos included, as the tar `/v1/artifacts/{id}/content` downloads. */
let exportTar: Uint8Array;

afterEach(cancelLiveJobs);

beforeAll(async () => {
  // Three cameras turned about y by different angles, so the round trip tests rotations too.
  const model = splitScene(3, 20).half([0, 1, 2], 10, { pose: (p) => p, point: (x) => x });
  sealed = await sealedReconstruction(model, undefined, { photo: (name) => PHOTOS[name]! });
  const e = await expectStatus(call("POST", `/v1/reconstructions/${sealed.rid}/export`, { format: "kapture" }), 202);
  await (await exportRunner()).drain();
  const artifact = (await call("GET", `/v1/jobs/${e.json.job_id}/artifacts`)).json.items[0] as StageArtifact;
  exportTar = new Uint8Array(await (await SELF.fetch(`${BASE}/v1/artifacts/${artifact.artifact_id}/content`)).arrayBuffer());
});

const importOf = (pid: string, body: unknown) => call("POST", `/v1/projects/${pid}/datasets:import_kapture`, body);
const newProject = async () => (await expectStatus(call("POST", "/v1/projects", { name: "kapture" }), 201)).json.project_id as string;
const datasetCount = async (pid: string) => (await call("GET", `/v1/projects/${pid}/datasets?page_size=500`)).json.items.length as number;

/** A zip of `files`, each deflated (CompressionStream), with its CRC-32. */
async function zipOf(files: Map<string, Uint8Array>): Promise<Uint8Array> {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc32 = (b: Uint8Array) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const local: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const [path, data] of files) {
    const packed = new Uint8Array(
      await new Response(new Blob([data as BlobPart]).stream().pipeThrough(new CompressionStream("deflate-raw"))).arrayBuffer(),
    );
    const name = enc.encode(path);
    const h = new Uint8Array(30 + name.length);
    const v = new DataView(h.buffer);
    v.setUint32(0, 0x04034b50, true);
    v.setUint16(4, 20, true);
    v.setUint16(8, 8, true);
    v.setUint32(14, crc32(data), true);
    v.setUint32(18, packed.length, true);
    v.setUint32(22, data.length, true);
    v.setUint16(26, name.length, true);
    h.set(name, 30);
    const c = new Uint8Array(46 + name.length);
    const cv = new DataView(c.buffer);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint16(10, 8, true);
    cv.setUint32(16, crc32(data), true);
    cv.setUint32(20, packed.length, true);
    cv.setUint32(24, data.length, true);
    cv.setUint16(28, name.length, true);
    cv.setUint32(42, offset, true);
    c.set(name, 46);
    local.push(h, packed);
    central.push(c);
    offset += h.length + packed.length;
  }
  const cdSize = central.reduce((s, c) => s + c.length, 0);
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, files.size, true);
  ev.setUint16(10, files.size, true);
  ev.setUint32(12, cdSize, true);
  ev.setUint32(16, offset, true);
  return new Uint8Array(await new Blob([...local, ...central, end] as BlobPart[]).arrayBuffer());
}

/** The export's files with some replaced (`null` removes one). */
function edited(changes: Record<string, string | null>): Map<string, Uint8Array> {
  const files = readTar(exportTar);
  for (const [path, text] of Object.entries(changes)) {
    if (text === null) files.delete(path);
    else files.set(path, enc.encode(text));
  }
  return files;
}

async function imported(pid: string, archive: Uint8Array) {
  const r = await expectStatus(importOf(pid, { archive_path: `blob:${await uploadBlob(archive)}` }), 202);
  expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
  const job = (await call("GET", `/v1/jobs/${r.json.job_id}`)).json;
  return { job, result: job.tasks[0].outputs_ref.result as KaptureImportResult };
}

describe("POST /v1/projects/{pid}/datasets:import_kapture (4.2, import.kapture)", () => {
  it("is advertised", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["import.kapture"]).toBe(true);
  });

  it("our kapture export imports back: the photos as images, the camera, and every pose as a pose prior", async () => {
    const pid = await newProject();
    const { job, result } = await imported(pid, exportTar);
    expect(job).toMatchObject({ status: "succeeded", recipe: "import_kapture", tasks: [{ kind: "import_kapture", status: "succeeded" }] });
    expect(result).toMatchObject({
      sensors: [{ sensor_id: "cam1", model: "PINHOLE", width: 640, height: 480, params: [500, 500, 320, 240], num_records: 3 }],
      records: 3,
      image_root: "sensors/records_data",
      "x-num_pose_priors": 3,
      "x-rig_config_skipped": [],
    });
    const did = result["x-derived_dataset"].dataset_id;
    const dataset = (await call("GET", `/v1/projects/${pid}/datasets/${did}`)).json;
    expect(dataset).toMatchObject({ camera_model: "PINHOLE", intrinsics_mode: "single_camera" });
    // The camera's intrinsics are kept in the dataset's rig_config (COLMAP's rig config): one camera names every image.
    expect(dataset.rig_config_json).toEqual({
      rigs: [
        {
          cameras: [
            {
              image_prefix: "",
              ref_sensor: true,
              cam_from_rig_rotation: [1, 0, 0, 0],
              cam_from_rig_translation: [0, 0, 0],
              camera_model_name: "PINHOLE",
              camera_params: [500, 500, 320, 240],
            },
          ],
        },
      ],
    });
    const images = (await call("GET", `/v1/datasets/${did}/images?page_size=500`)).json.items;
    // The same bytes as the reconstruction's dataset: the same content addresses.
    expect(images.map((i: { name: string; content_sha: string }) => [i.name, i.content_sha]).sort()).toEqual(
      sealed.photos.map((p) => [p.name, p.blob_sha]).sort(),
    );
    expect(images.find((i: { name: string }) => i.name === "img0.jpg")).toMatchObject({ width: 1024, height: 768 });
    const priors = (await call("GET", `/v1/datasets/${did}/pose_priors`)).json.pose_priors;
    for (const original of sealed.model.images.images) {
      const image = images.find((i: { name: string }) => i.name === original.name);
      const prior = priors[image.image_id];
      const [q, p] = [original.cam_from_world.rotation, prior.cam_from_world.rotation];
      expect(Math.abs(q.w * p.w + q.x * p.x + q.y * p.y + q.z * p.z)).toBeCloseTo(1, 6);
      original.cam_from_world.translation.forEach((t, k) => expect(prior.cam_from_world.translation[k]).toBeCloseTo(t, 6));
      expect(String(prior.timestamp_ns)).toBe(String(original.image_id));
    }
  });

  it("reads a zip and a kapture tree under one folder; poses through a rig; a second import gets a free name", async () => {
    const pid = await newProject();
    const files = edited({
      "sensors/rigs.txt": "# rig_device_id, sensor_device_id, qw, qx, qy, qz, tx, ty, tz\nrig, cam1, 1, 0, 0, 0, 0, 0, 1\n",
      "sensors/trajectories.txt": "# timestamp, device_id, qw, qx, qy, qz, tx, ty, tz\n2, rig, 1, 0, 0, 0, 5, 0, 0\n",
    });
    const zip = await zipOf(new Map([...files].map(([p, b]) => [`walk/${p}`, b])));
    const first = await imported(pid, zip);
    expect(first.result).toMatchObject({ records: 3, image_root: "walk/sensors/records_data", "x-num_pose_priors": 1 });
    expect(first.result["x-derived_dataset"].name).toBe("walk");
    const did = first.result["x-derived_dataset"].dataset_id;
    const images = (await call("GET", `/v1/datasets/${did}/images?page_size=500`)).json.items;
    const priors = (await call("GET", `/v1/datasets/${did}/pose_priors`)).json.pose_priors;
    const img1 = images.find((i: { name: string }) => i.name === "img1.jpg");
    // cam_from_world = cam_from_rig * rig_from_world: the translations add.
    expect(priors[img1.image_id].cam_from_world.translation).toEqual([5, 0, 1]);
    expect(Object.keys(priors)).toHaveLength(1);
    const second = await imported(pid, zip);
    expect(second.result["x-derived_dataset"].name).toBe("walk-2");
  });

  it("a malformed listing is a 422 naming each file and line, and nothing is imported", async () => {
    const pid = await newProject();
    const bad = edited({
      "sensors/trajectories.txt":
        "# kapture format: 1.1\n# timestamp, device_id, qw, qx, qy, qz, tx, ty, tz\n1, cam1, 2, 0, 0, 0, 0, 0, 0\n2, cam9, 1, 0, 0, 0, 0, 0, 0\n",
      "sensors/records_camera.txt": "# timestamp, device_id, image_path\n1, cam1, img0.jpg\n2, cam1, ../img1.jpg\n3, cam1, missing.jpg\n",
    });
    const r = await importOf(pid, { archive_path: `blob:${await uploadBlob(tarArchive(bad))}` });
    expectProblem(r, 422);
    expect(r.json.detail).toMatch(/nothing was imported/);
    expectFieldError(r, "sensors/trajectories.txt:3", "malformed_kapture");
    expectFieldError(r, "sensors/trajectories.txt:4", "malformed_kapture");
    expectFieldError(r, "sensors/records_camera.txt:3", "malformed_kapture");
    expectFieldError(r, "sensors/records_camera.txt:4", "malformed_kapture");
    expect(r.json.errors.find((e: { path: string }) => e.path === "sensors/trajectories.txt:3").message).toMatch(/unit quaternion/);
    expect(r.json.errors.find((e: { path: string }) => e.path === "sensors/records_camera.txt:4").message).toMatch(/not in the archive/);
    const noCamera = edited({ "sensors/sensors.txt": "cam1, , camera, PINHOLE, 640, 480, 500, 500, 320\n" });
    const r2 = await importOf(pid, { archive_path: `blob:${await uploadBlob(tarArchive(noCamera))}` });
    expectFieldError(r2, "sensors/sensors.txt:1", "malformed_kapture");
    expect(r2.json.errors[0].message).toMatch(/PINHOLE takes 4 numbers/);
    const notImage = edited({ "sensors/records_data/img2.jpg": "not a photo" });
    const r3 = await importOf(pid, { archive_path: `blob:${await uploadBlob(tarArchive(notImage))}` });
    expectFieldError(r3, "sensors/records_data/img2.jpg", "not_an_image");
    expect(await datasetCount(pid)).toBe(0);
    expect((await call("GET", "/v1/jobs?page_size=500")).json.items.filter((j: { project_id: string }) => j.project_id === pid)).toEqual(
      [],
    );
  });

  it("422 for an archive_path that is no blob: form, an unknown blob, or bytes that are no tar or zip; 404 for an unknown project", async () => {
    const pid = await newProject();
    expectFieldError(await importOf(pid, { archive_path: "/data/kapture.tar" }), "archive_path");
    expectFieldError(await importOf(pid, {}), "archive_path");
    expectFieldError(await importOf(pid, { archive_path: `blob:${"0".repeat(64)}` }), "archive_path", "unknown_blob");
    const junk = await uploadBlob(enc.encode("just some text, no archive"));
    const r = await importOf(pid, { archive_path: `blob:${junk}` });
    expectFieldError(r, "archive_path", "malformed_archive");
    expect(r.json.errors[0].message).toMatch(/neither a tar/);
    const gz = await uploadBlob(Uint8Array.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]));
    expect((await importOf(pid, { archive_path: `blob:${gz}` })).json.errors[0].message).toMatch(/gzip/);
    const noKapture = await uploadBlob(tarArchive([["readme.txt", enc.encode("hello")]]));
    expect((await importOf(pid, { archive_path: `blob:${noKapture}` })).json.errors[0].message).toMatch(/no sensors\/sensors.txt/);
    const truncated = await uploadBlob(exportTar.subarray(0, 1500));
    expectFieldError(await importOf(pid, { archive_path: `blob:${truncated}` }), "archive_path", "malformed_archive");
    expectProblem(await importOf("01ARZ3NDEKTSV4RRFFQ69G5FAV", { archive_path: `blob:${junk}` }), 404);
    expect(await datasetCount(pid)).toBe(0);
  });
});

describe("POST /v1/projects/{pid}/datasets:from_video (4.2, video.frame_extract)", () => {
  const videoOf = (pid: string, body: unknown) => call("POST", `/v1/projects/${pid}/datasets:from_video`, body);
  /** The start of an MP4: a `ftyp` box (the frames are decoded by a browser runner: test/e2e/video-frames.test.ts). */
  const MP4_HEAD = Uint8Array.from([0, 0, 0, 16, ...enc.encode("ftypisom"), 0, 0, 2, 0]);

  it("is advertised; a job of one frame_extract task that reads the video, for a runner with WebCodecs", async () => {
    expect((await call("GET", "/v1/capabilities")).json.features["video.frame_extract"]).toBe(true);
    const pid = await newProject();
    const sha = await uploadBlob(MP4_HEAD);
    const r = await expectStatus(videoOf(pid, { video_path: `blob:${sha}`, fps: 0.5, "x-skip_blurred": true }), 202);
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
    const job = (await call("GET", `/v1/jobs/${r.json.job_id}`)).json;
    expect(job).toMatchObject({
      recipe: "from_video",
      project_id: pid,
      status: "pending",
      tasks: [{ kind: "frame_extract", status: "pending" }],
    });
    // Leased to a runner that registered for the kind (as a browser with WebCodecs does), with the video readable.
    const runner = new DigestRunner({ base: BASE, fetch: selfFetch, name: "webcodecs", stages: ["frame_extract"] });
    await runner.register();
    const lease = (await runner.lease())!;
    expect(lease.task.task_id).toBe(r.json.task_ids[0]);
    expect(await runner.client.readBlob(lease.lease_id, sha)).toEqual(MP4_HEAD);
    expect(lease.task.params).toEqual({
      frame_extract: { video_sha: sha, fps: 0.5, max_frames: 300, skip_blurred: true },
      derived_dataset: { name: `video-${sha.slice(0, 12)}` },
    });
  });

  it("422 for a video_path that is no blob: form, an unknown blob or no MP4, and for bad fps and max_frames; 404 for an unknown project", async () => {
    const pid = await newProject();
    const mp4 = `blob:${await uploadBlob(MP4_HEAD)}`;
    expectFieldError(await videoOf(pid, { video_path: "/videos/walk.mp4" }), "video_path");
    expectFieldError(await videoOf(pid, { video_path: `blob:${"1".repeat(64)}` }), "video_path", "unknown_blob");
    expectFieldError(
      await videoOf(pid, { video_path: `blob:${await uploadBlob(enc.encode("not a video at all"))}` }),
      "video_path",
      "not_a_video",
    );
    expectFieldError(await videoOf(pid, { video_path: mp4, fps: 0 }), "fps");
    expectFieldError(await videoOf(pid, { video_path: mp4, max_frames: 1.5 }), "max_frames");
    expectFieldError(await videoOf(pid, { video_path: mp4, max_frames: 100_000 }), "max_frames");
    expectProblem(await videoOf("01ARZ3NDEKTSV4RRFFQ69G5FAV", { video_path: mp4 }), 404);
    expect((await call("GET", "/v1/jobs?page_size=500")).json.items.filter((j: { project_id: string }) => j.project_id === pid)).toEqual(
      [],
    );
  });
});

/**
 * Localization end to end over real HTTP (spec 4.13 localize, capability `localize.from_memory`),
 * computed by the Node runner: sacre-coeur reconstructed without one of its photos, then that photo
 * uploaded and localized against the reconstruction; its pose, brought into the COLMAP 3.8
 * reference's frame by the similarity that aligns the other nine cameras, is compared with the
 * reference's pose of the same photo (issue 19: rotation within 1 degree, camera centre within 2%
 * of the scene extent). A photo of another place is not localized (`success: false` with the
 * reason).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import {
  type ImagePose,
  type Quat,
  type Vec3,
  applySimilarity,
  compareToReference,
  projectionCenter,
  quatConj,
  quatMul,
  referencePoses,
  rotationAngleDeg,
} from "../../engine-wasm/ts/accuracy";
import { readColmapTextModel } from "../../engine-wasm/ts/colmap-text";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { ImagesFile, LocalizationResult, OneShotFeaturesResponse, OneShotLocalizeResponse } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { httpClient, uploadBytes, waitForJob } from "../support/http";
import { photoNames, submitFolder } from "../../scripts/photo-folder";
import { INTRINSICS, datasetDir } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
const HELD_BACK = "51091044_3486849416.jpg";
let localizedPose: LocalizationResult["cam_from_world"] | undefined;
let server: Server;
let runner: Runner;
let reconId: string;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("localize-node"));
  const http = httpClient(server.base);
  // The set without the held-back photo, as a folder of its own.
  const images = new URL("images/", datasetDir(SET)).pathname;
  const folder = mkdtempSync(join(tmpdir(), "localize-"));
  for (const name of photoNames(images).filter((n) => n !== HELD_BACK)) copyFileSync(join(images, name), join(folder, name));
  const { job_id, recon_id } = await submitFolder(http.client, folder, {
    name: SET,
    camera_model: "SIMPLE_RADIAL",
    intrinsics_mode: INTRINSICS[SET],
  });
  rmSync(folder, { recursive: true });
  await runner.drain();
  const job = await waitForJob(http, job_id);
  if (job.status !== "succeeded")
    throw new Error(
      `the reconstruction without ${HELD_BACK} failed: ${JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))}`,
    );
  reconId = recon_id;
}, 900_000);
afterAll(async () => {
  await server?.stop();
});

/** Submits the localization of `bytes`, has the runner compute it, and answers the job and its LocalizationResult. */
async function localized(bytes: Uint8Array) {
  const http = httpClient(server.base);
  const blob_sha = await uploadBytes(http, bytes);
  const accepted = await http("POST", `/v1/reconstructions/${reconId}/localize`, { blob_sha });
  expect(accepted.status, JSON.stringify(accepted.json)).toBe(202);
  expect(await runner.drain()).toBe(1);
  const job = await waitForJob(http, accepted.json.job_id);
  expect(job, JSON.stringify(job.tasks?.map((t: any) => [t.kind, t.status, t.error_message]))).toMatchObject({
    recipe: "localize",
    status: "succeeded",
    tasks: [{ kind: "relocalize", status: "succeeded" }],
  });
  return { job, blob_sha, result: LocalizationResult.parse(job.tasks[0].outputs_ref.result) };
}

describe(`localize on ${SET} (Node runner)`, () => {
  it(`localizes the held-back photo within 1 degree and 2% of the scene extent of COLMAP's pose`, async () => {
    const http = httpClient(server.base);
    const photo = new Uint8Array(readFileSync(new URL(`images/${HELD_BACK}`, datasetDir(SET))));
    const { result, blob_sha } = await localized(photo);
    expect(result.success, String(result.diagnostics.reason)).toBe(true);
    const seq = (await http("GET", `/v1/reconstructions/${reconId}/snapshots`)).json.seqs.at(-1);
    expect(result.diagnostics).toMatchObject({
      query_path: `blobs/${blob_sha}`,
      sparse_dir: `/v1/reconstructions/${reconId}/snapshots/${seq}`,
    });
    // Every inlier names a query keypoint and a point of the snapshot.
    const images = ImagesFile.parse((await http("GET", `/v1/reconstructions/${reconId}/snapshots/${seq}/images.json`)).json);
    const pointIds = new Set(images.images.flatMap((im) => im.points2D.map((p) => p.point3d_id)));
    expect(result.inlier_matches).toHaveLength(result.num_inliers);
    for (const [k, id] of result.inlier_matches) {
      expect(k).toBeLessThan(Number(result.diagnostics.num_keypoints));
      expect(pointIds.has(id)).toBe(true);
    }

    // The nine mapped cameras give the similarity into the reference's frame; the query goes through it.
    const reference = referencePoses(await readColmapTextModel(new URL("reference/", datasetDir(SET)).pathname));
    const ours: ImagePose[] = images.images.map((im) => ({
      name: im.name,
      qvec: [im.cam_from_world.rotation.w, im.cam_from_world.rotation.x, im.cam_from_world.rotation.y, im.cam_from_world.rotation.z],
      tvec: im.cam_from_world.translation,
    }));
    const report = compareToReference(
      ours,
      reference.filter((r) => r.name !== HELD_BACK),
    );
    const align = report.alignment;
    const q = result.cam_from_world.rotation;
    const query: Quat = [q.w, q.x, q.y, q.z];
    const centre = applySimilarity(align, projectionCenter({ qvec: query, tvec: result.cam_from_world.translation as Vec3 }));
    const truth = reference.find((r) => r.name === HELD_BACK)!;
    const truthCentre = projectionCenter(truth);
    // cam_from_ref = cam_from_ours * ours_from_ref.
    const rotationErrorDeg = rotationAngleDeg(quatMul(query, quatConj(align.rotation)), truth.qvec);
    const centreErrorFraction =
      Math.hypot(centre[0] - truthCentre[0], centre[1] - truthCentre[1], centre[2] - truthCentre[2]) / report.sceneExtent;
    console.log(
      `${SET} localize ${HELD_BACK}: ${JSON.stringify({ rotationErrorDeg, centreErrorFraction, num_inliers: result.num_inliers, diagnostics: result.diagnostics, mapped: report.numRegistered, alignment_inliers: report.numAlignmentInliers })}`,
    );
    expect(rotationErrorDeg).toBeLessThan(1);
    expect(centreErrorFraction).toBeLessThan(0.02);
    localizedPose = result.cam_from_world;
  }, 600_000);

  it("a photo of another place is not localized: success false, with the reason", async () => {
    const elsewhere = new Uint8Array(readFileSync(new URL("images/01.jpg", datasetDir("opensfm-lund"))));
    const { result } = await localized(elsewhere);
    expect(result).toMatchObject({ success: false, num_inliers: 0, inlier_matches: [] });
    expect(String(result.diagnostics.reason)).toMatch(/descriptor matches|no pose/);
  }, 600_000);

  it("the one-shot routes answer the held-back photo's features and pose within the request, leaving no job", async () => {
    const http = httpClient(server.base);
    const photo = new Uint8Array(readFileSync(new URL(`images/${HELD_BACK}`, datasetDir(SET))));
    const jobsBefore = (await http("GET", "/v1/jobs?page_size=500")).json.items.length;
    const serving = runner.run();
    try {
      const f = await http("POST", "/v1/oneshot/features", photo, { "Content-Type": "image/jpeg" });
      expect(f.status, JSON.stringify(f.json)).toBe(200);
      const features = OneShotFeaturesResponse.parse(f.json);
      expect(features).toMatchObject({ width: 761, height: 1015, descriptor_kind: "sift_l1_root" });
      expect(features.num_keypoints).toBeGreaterThan(1000);
      expect(features.keypoints).toHaveLength(features.num_keypoints);
      expect(Buffer.from(features.descriptors, "base64").byteLength).toBe(128 * features.num_keypoints);

      const l = await http("POST", `/v1/oneshot/localize?recon_id=${reconId}`, photo, { "Content-Type": "image/jpeg" });
      expect(l.status, JSON.stringify(l.json)).toBe(200);
      const located = OneShotLocalizeResponse.parse(l.json);
      expect(located).toMatchObject({ success: true, recon_id: reconId });
      // The same computation as the localize job's: the same pose.
      const q = located.cam_from_world.rotation;
      const p = localizedPose!.rotation;
      expect(rotationAngleDeg([q.w, q.x, q.y, q.z], [p.w, p.x, p.y, p.z])).toBeLessThan(0.01);
    } finally {
      runner.stop();
      await serving;
    }
    expect((await http("GET", "/v1/jobs?page_size=500")).json.items.length).toBe(jobsBefore);
  }, 600_000);
});

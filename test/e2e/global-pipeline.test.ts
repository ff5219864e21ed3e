/**
 * The global recipe (spec 2.12 `global`, 4.7) end to end over real HTTP, computed by the Node
 * runner: real photos uploaded, SIFT, exhaustive matching, verification, then the global mapper
 * (view-graph filter and rotation averaging, global positioning, global bundle adjustment with
 * retriangulation). On opensfm-lund (one camera, EXIF focal length) the incremental fallback is
 * switched off, so what is scored is the global model itself: every photo registered and issue
 * 5's bars against the COLMAP 3.8 reference after a similarity alignment
 * (scripts/reference-sets.ts), and the progress phases of the global mapper reported by the map
 * task. On sacre-coeur (a camera per photo, no EXIF focal length: verification gives no relative
 * pose to average) the fallback maps incrementally, and the artifact says so. On sceaux-castle with
 * a camera per photo and the EXIF of two photos taken away (a collection of several sources), the
 * global mapper places the nine with a focal length and those of the two their partners' rotations
 * calibrate, and the incremental mapper registers the others into its model.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import type { StageArtifact } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { eventLog, httpClient, waitForJob } from "../support/http";
import { datasetDir, scoreAgainstReference, submitSet } from "../../scripts/reference-sets";
import { submitFolder } from "../../scripts/photo-folder";

/** The JPEG without its APP1 segments (EXIF, XMP): a photo as some sites serve it. */
function withoutApp1(jpeg: Uint8Array): Uint8Array {
  const kept: Uint8Array[] = [jpeg.subarray(0, 2)];
  let at = 2;
  // Marker segments up to the start of scan, each FF xx and a big-endian length that counts itself.
  while (at + 4 <= jpeg.length && jpeg[at] === 0xff && jpeg[at + 1] !== 0xda) {
    const end = at + 2 + ((jpeg[at + 2]! << 8) | jpeg[at + 3]!);
    if (jpeg[at + 1] !== 0xe1) kept.push(jpeg.subarray(at, end));
    at = end;
  }
  kept.push(jpeg.subarray(at));
  return Buffer.concat(kept);
}

let server: Server;
let runner: Runner;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("global-node"));
});
afterAll(async () => {
  await server?.stop();
});

describe("global recipe on real photos (Node runner)", () => {
  it("opensfm-lund: every photo registered by the global mapper itself, within issue 5's bars against COLMAP", async () => {
    const http = httpClient(server.base);
    const set = "opensfm-lund";
    const { job_id, recon_id } = await submitSet(http.client, set, { use_incremental_quality_fallback: false }, undefined, "global");
    await runner.drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    const result = await scoreAgainstReference(http.client, set, recon_id);
    console.log(`${set} (global): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.numRegistered).toBe(result.report.numReferenceImages);
    expect(result.failures).toEqual([]);

    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as StageArtifact[];
    const sparse = artifacts.find((a) => a.kind === "reconstruction.sparse.v1")!;
    expect(sparse.summary).toMatchObject({ "x-mapper": "global", num_models: 1 });
    const phases = new Set(
      (await eventLog(http.client, job_id)).flatMap((e) => (e.kind === "phase_progress" ? [(e as { phase: string }).phase] : [])),
    );
    for (const phase of ["global_rotation_avg", "global_positioning", "global_ba"]) expect(phases).toContain(phase);
  }, 1_200_000);

  it("sacre-coeur: no relative rotation to average (one camera per photo, no EXIF focal length), so the incremental fallback maps it and says so", async () => {
    const http = httpClient(server.base);
    const set = "sacre-coeur";
    const { job_id, recon_id } = await submitSet(http.client, set, {}, undefined, "global");
    await runner.drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as StageArtifact[];
    const sparse = artifacts.find((a) => a.kind === "reconstruction.sparse.v1")!;
    expect(sparse.summary).toMatchObject({ "x-mapper": "incremental", "x-global_fallback": "no model" });
    const result = await scoreAgainstReference(http.client, set, recon_id);
    expect(result.failures).toEqual([]);
  }, 900_000);

  it("sceaux-castle, two photos without EXIF: the global mapper places the others (and one of them), the incremental mapper registers the rest into its model", async () => {
    const http = httpClient(server.base);
    const set = "sceaux-castle";
    const images = fileURLToPath(new URL("images", datasetDir(set)));
    const folder = mkdtempSync(join(tmpdir(), "edgesfm-sceaux-"));
    try {
      readdirSync(images)
        .sort()
        .forEach((name, i) => {
          const jpeg = new Uint8Array(readFileSync(join(images, name)));
          writeFileSync(join(folder, name), i % 5 === 4 ? withoutApp1(jpeg) : jpeg);
        });
      const { job_id, recon_id } = await submitFolder(http.client, folder, { name: set, intrinsics_mode: "per_image", mapper: "global" });
      await runner.drain();
      const job = await waitForJob(http, job_id);
      expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
      const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as StageArtifact[];
      const sparse = artifacts.find((a) => a.kind === "reconstruction.sparse.v1")!;
      expect(sparse.summary).toMatchObject({ "x-mapper": "global", num_models: 1 });
      // The nine with EXIF, and those of the two their partners' rotations calibrate, placed globally; the others
      // registered incrementally.
      const positioned = (sparse.summary["x-global_positioning"] as { imagesPositioned: number }).imagesPositioned;
      expect(positioned).toBeGreaterThanOrEqual(9);
      expect(positioned + ((sparse.summary["x-registered_incrementally"] as number | undefined) ?? 0)).toBe(11);
      const result = await scoreAgainstReference(http.client, set, recon_id);
      console.log(
        `${set} (global, two photos without EXIF): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`,
      );
      expect(result.report.numRegistered).toBe(result.report.numReferenceImages);
      expect(result.failures).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 900_000);
});

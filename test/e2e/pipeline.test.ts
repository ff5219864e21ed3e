/**
 * The incremental recipe end to end over real HTTP, computed by the Node runner (the same Runner
 * class the browser runs): photos uploaded, the pipeline submitted, every task (extract, match,
 * verify, map) leased and computed, the sealed snapshot read back through the 4.9 routes and
 * scored against the COLMAP 3.8 reference with issue 5's bars. Then that reconstruction is
 * exported in every format (1.2 `export.*`) by the same runner, each artifact downloaded through
 * `/v1/artifacts/{id}/content` and read back: by Debian COLMAP's `model_analyzer` and
 * `model_converter` for the COLMAP text, binary and Gaussian-splatting layouts, by format readers
 * for the others.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import {
  analyzeModel,
  COLMAP_ABSENT,
  colmapAvailable,
  convertModel,
  readText,
  sortedDataLines,
  writeFiles,
} from "../../browser-runtime/stages/export/testing/colmap-cli";
import { EXPORT_ARTIFACT_TYPES, EXPORT_FORMATS, type ExportFormat, type StageArtifact } from "../../protocol";
import { ImagesFile, SummaryFile } from "../../protocol/schemas/snapshot";
import { decodeMatches } from "../../protocol/wire/matches";
import { decodePointsHeader } from "../../protocol/wire/points";
import type { CorrespondenceGraph } from "../../browser-runtime/runner/executors/correspondence-graph";
import { readTar } from "../../protocol/wire/tar";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { datasetDir, scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
let server: Server;
let runner: Runner;
let reconId: string | undefined;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("pipeline-node"));
});
afterAll(async () => {
  await server?.stop();
});

describe(`incremental recipe on ${SET} (Node runner)`, () => {
  it("reconstructs every image within issue 5's bars against COLMAP", async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id } = await submitSet(http.client, SET);
    const leases = await runner.drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    // One lease a shard (match and verify shards packed by the photos' real keypoints), one for the map task.
    expect(leases).toBe(job.tasks.reduce((n: number, t: any) => n + (t["x-shards"]?.total ?? 1), 0));
    const result = await scoreAgainstReference(http.client, SET, recon_id);
    console.log(`${SET}: ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.failures).toEqual([]);
    expect(result.numPoints).toBeGreaterThan(0.5 * result.colmap.points3D);
    reconId = recon_id;

    // correspondence_graph.json (2.14) holds exactly the match task's raw pairs, in dataset image ids.
    const graph = (await http("GET", `/v1/reconstructions/${recon_id}/correspondence_graph.json`)).json as CorrespondenceGraph;
    const names = new Map(graph["x-images"].map((im) => [im.image_id, im.name]));
    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as StageArtifact[];
    const raw = new Map<string, [number, number][]>();
    for (const a of artifacts.filter((x) => x.kind === "matches.indexed.v1")) {
      for (const f of a.files) {
        const bytes = new Uint8Array(
          await (await fetch(`${server.base}/v1/artifacts/${a.artifact_id}/content?path=${encodeURIComponent(f.path)}`)).arrayBuffer(),
        );
        for (const p of decodeMatches(bytes)) {
          raw.set(
            `${p.imageName1}|${p.imageName2}`,
            Array.from({ length: p.matches.length / 2 }, (_, k) => [p.matches[2 * k]!, p.matches[2 * k + 1]!]),
          );
        }
      }
    }
    expect(raw.size).toBeGreaterThan(0);
    const served = new Map(graph.pairs.map((p) => [`${names.get(p.image_id1)}|${names.get(p.image_id2)}`, p]));
    expect([...served.keys()].sort()).toEqual([...raw.keys()].sort());
    for (const [pair, matches] of raw) {
      expect(served.get(pair)!.matches, pair).toEqual(matches);
      expect(served.get(pair)!.num_matches, pair).toBe(matches.length);
    }
  }, 900_000);

  it("a mapping that reconstructs no model fails its job with a NoModelError, sealing nothing", async () => {
    const http = httpClient(server.base);
    // No pair has a million matches, so no initial pair exists; the other stages are the first test's (cache hits).
    const { job_id, recon_id } = await submitSet(http.client, SET, { min_num_matches: 1_000_000 });
    await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("pipeline-node")).drain();
    const job = await waitForJob(http, job_id);
    expect(job.status).toBe("failed");
    expect(job.tasks.at(-1)).toMatchObject({
      kind: "map",
      status: "failed",
      error_class: "NoModelError",
      error_message: expect.stringMatching(/reconstructed no model/),
    });
    expect((await http("GET", `/v1/reconstructions/${recon_id}/snapshots`)).json.seqs).toEqual([]);
    expect((await http("GET", `/v1/reconstructions/${recon_id}`)).json.status).toBe("failed");
  }, 900_000);
});

describe(`exports of the ${SET} reconstruction (export.*, 4.10)`, () => {
  const decoder = new TextDecoder();
  const dataLines = (bytes: Uint8Array | undefined) =>
    decoder
      .decode(bytes)
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"));

  /** What the first test downloaded, for the checks by COLMAP's own tools. */
  let exported:
    | {
        downloads: Map<ExportFormat, { artifact: StageArtifact; files: Map<string, Uint8Array> }>;
        images: ImagesFile;
        summary: SummaryFile;
        numPoints: number;
        numObservations: number;
      }
    | undefined;

  it("every format is computed by the runner and downloaded through /content", async () => {
    if (!reconId) throw new Error("the reconstruction above did not succeed");
    const http = httpClient(server.base);
    const base = `/v1/reconstructions/${reconId}/snapshots`;
    const seq = (await http("GET", base)).json.seqs.at(-1);
    const images = ImagesFile.parse((await http("GET", `${base}/${seq}/images.json`)).json);
    const summary = SummaryFile.parse((await http("GET", `${base}/${seq}/summary.json`)).json);
    const numPoints = decodePointsHeader((await http("GET", `${base}/${seq}/points.bin`)).raw).count;
    const numObservations = images.images.reduce((s, im) => s + im.points2D.filter((p) => p.point3d_id !== null).length, 0);

    // The reference 3DGS trainer reads undistorted cameras only: our SIMPLE_RADIAL cameras are refused unless allowed.
    const jobs = new Map<ExportFormat, string>();
    for (const format of EXPORT_FORMATS) {
      const r = await http("POST", `/v1/reconstructions/${reconId}/export`, { format, options: { allow_distorted_cameras: true } });
      expect(r.status, JSON.stringify(r.json)).toBe(202);
      jobs.set(format, r.json.job_id);
    }
    const refused = await http("POST", `/v1/reconstructions/${reconId}/export`, { format: "gaussian_splatting" });
    expect(await runner.drain()).toBe(EXPORT_FORMATS.length + 1);
    const refusal = await waitForJob(http, refused.json.job_id);
    expect(refusal).toMatchObject({ status: "failed", error_class: "ValidationError" });
    expect(refusal.error_message).toMatch(/unsupported_camera_model.*SIMPLE_RADIAL/);

    const photos = new Map(
      images.images.map((im) => [im.name, new Uint8Array(readFileSync(new URL(`images/${im.name}`, datasetDir(SET))))]),
    );
    const downloads = new Map<ExportFormat, { artifact: StageArtifact; files: Map<string, Uint8Array> }>();
    for (const [format, jobId] of jobs) {
      const job = await waitForJob(http, jobId);
      expect(job.status, `${format}: ${job.error_message}`).toBe("succeeded");
      const artifact: StageArtifact = (await http("GET", `/v1/jobs/${jobId}/artifacts`)).json.items[0];
      expect(artifact).toMatchObject({
        kind: EXPORT_ARTIFACT_TYPES[format].kind,
        artifact_format: EXPORT_ARTIFACT_TYPES[format].artifact_format,
        recon_id: reconId,
      });
      const got = await http("GET", `/v1/artifacts/${artifact.artifact_id}/content?download=true`);
      expect(got.status).toBe(200);
      expect(got.headers.get("Content-Disposition")).toMatch(/^attachment; filename="/);
      const files = artifact.files.length === 1 ? new Map([[artifact.files[0]!.path, got.raw]]) : readTar(got.raw);
      expect([...files.keys()]).toEqual(artifact.files.map((f) => f.path));
      downloads.set(format, { artifact, files });
    }

    exported = { downloads, images, summary, numPoints, numObservations };
    const splatFiles = downloads.get("gaussian_splatting")!.files;
    for (const [name, bytes] of photos) expect(Buffer.from(splatFiles.get(`images/${name}`)!).equals(bytes), name).toBe(true);

    const ply = downloads.get("ply")!.files.get("points3D.ply")!;
    expect(decoder.decode(ply.subarray(0, 200))).toMatch(
      new RegExp(`^ply\\nformat binary_little_endian 1.0\\nelement vertex ${numPoints}\\n`),
    );
    const nvm = dataLines(downloads.get("nvm")!.files.get("model.nvm"));
    expect(nvm[0]).toBe("NVM_V3");
    expect(Number(nvm[1])).toBe(images.images.length);
    for (const format of ["nerfstudio", "instant_ngp"] as const) {
      const { files } = downloads.get(format)!;
      const transforms = JSON.parse(decoder.decode(files.get("transforms.json")));
      expect(transforms.frames, format).toHaveLength(images.images.length);
      for (const frame of transforms.frames)
        expect(files.get(frame.file_path.replace(/^\.\//, "")), `${format} ${frame.file_path}`).toBeDefined();
    }
    const kapture = downloads.get("kapture")!.files;
    expect(dataLines(kapture.get("sensors/records_camera.txt"))).toHaveLength(images.images.length);
    expect(dataLines(kapture.get("reconstruction/points3d.txt"))).toHaveLength(numPoints);
    for (const [name, bytes] of photos) expect(Buffer.from(kapture.get(`sensors/records_data/${name}`)!).equals(bytes), name).toBe(true);
  }, 300_000);

  it("COLMAP reads the COLMAP text and binary exports (model_analyzer, model_converter) and the 3DGS export's sparse/0", async (ctx) => {
    ctx.skip(!colmapAvailable, COLMAP_ABSENT);
    if (!exported) throw new Error("the exports above were not downloaded");
    const { downloads, images, summary, numPoints, numObservations } = exported;
    // COLMAP text and binary: model_analyzer counts what the snapshot holds, with the reprojection error the export
    // computed as COLMAP defines it (the mean of the points' mean errors; the mapper's summary averages observations).
    for (const format of ["colmap_text", "txt", "colmap_bin", "bin"] as const) {
      const { artifact, files } = downloads.get(format)!;
      const stats = analyzeModel(writeFiles(files));
      expect(stats, format).toMatchObject({
        Cameras: String(images.images.length),
        Images: String(images.images.length),
        Points: String(numPoints),
        Observations: String(numObservations),
      });
      expect(Number(stats["Mean reprojection error"])).toBeCloseTo(artifact.summary.mean_reproj_err as number, 5);
      expect(Number(stats["Mean reprojection error"])).toBeCloseTo(summary.mean_reproj_err, 1);
    }
    // model_converter turns the binary export into the text export's rows. (COLMAP normalises each quaternion as it
    // reads one, which can move the last of its 17 digits: numbers agree to 1e-14.)
    const text = convertModel(writeFiles(downloads.get("colmap_bin")!.files), "TXT");
    const tokens = (t: string) => sortedDataLines(t).map((l) => l.split(" ").map((v) => (Number.isNaN(Number(v)) ? v : Number(v))));
    for (const name of ["cameras.txt", "images.txt", "points3D.txt"]) {
      const theirs = tokens(readText(join(text, name)));
      const ours = tokens(decoder.decode(downloads.get("colmap_text")!.files.get(name)));
      expect(theirs.length, name).toBe(ours.length);
      theirs.forEach((row, r) => {
        expect(row.length, `${name} row ${r}`).toBe(ours[r]!.length);
        row.forEach((v, k) => {
          const o = ours[r]![k]!;
          if (typeof v === "number" && typeof o === "number")
            expect(Math.abs(v - o), `${name} row ${r}`).toBeLessThanOrEqual(1e-14 * Math.max(1, Math.abs(o)));
          else expect(v, `${name} row ${r}`).toBe(o);
        });
      });
    }
    // 3DGS: sparse/0 is a COLMAP binary model.
    const splat = writeFiles(downloads.get("gaussian_splatting")!.files);
    expect(analyzeModel(join(splat, "sparse/0"))).toMatchObject({ Images: String(images.images.length), Points: String(numPoints) });
  });
});

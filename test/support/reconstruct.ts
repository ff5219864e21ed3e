/**
 * @module One photo set through the incremental recipe over HTTP, and the sealed result compared
 * with the set's COLMAP 3.8 reference (issue 5's bars). Shared by the end-to-end suites and the
 * benchmarks; whoever computes (a Node runner, a headless browser) is the caller's choice.
 */
import { readFileSync, readdirSync } from "node:fs";
import { type AccuracyReport, type ImagePose, barFailures, compareToReference, parseColmapResultsTsv, referencePoses } from "../../engine-wasm/ts/accuracy";
import { readColmapTextModel } from "../../engine-wasm/ts/colmap-text";
import { ImagesFile, SummaryFile } from "../../protocol";
import { decodePointsHeader } from "../../protocol/wire/points";
import { type HttpResult, httpClient, uploadBytes } from "./http";

export const datasetDir = (set: string) => new URL(`../../../shared/datasets/${set}/`, import.meta.url);

/** The reference's camera setup: one shared camera, except sacre-coeur (one per photo). */
export const INTRINSICS: Record<string, "single_camera" | "per_image"> = { "sacre-coeur": "per_image" };

export interface Submitted {
  job_id: string;
  recon_id: string;
}

/** Uploads the set, creates its dataset and submits the incremental pipeline. */
export async function submitSet(http: ReturnType<typeof httpClient>, set: string, spec: Record<string, unknown> = {}): Promise<Submitted> {
  const dir = datasetDir(set);
  const project = await http("POST", "/v1/projects", { name: set });
  const entries = [];
  for (const name of readdirSync(new URL("images/", dir)).sort()) {
    entries.push({ name, blob_sha: await uploadBytes(http, new Uint8Array(readFileSync(new URL(`images/${name}`, dir)))) });
  }
  const ds = await must(
    http("POST", `/v1/projects/${project.json.project_id}/datasets`, {
      name: set,
      source: { kind: "upload", entries },
      camera_model: "SIMPLE_RADIAL",
      intrinsics_mode: INTRINSICS[set] ?? "single_camera",
    }),
    201,
  );
  const job = await must(http("POST", `/v1/projects/${project.json.project_id}/pipelines/incremental`, { dataset_id: ds.json.dataset_id, spec: { kind: "incremental", ...spec } }), 202);
  return { job_id: job.json.job_id, recon_id: job.json.recon_id };
}

async function must(p: Promise<HttpResult>, status: number): Promise<HttpResult> {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.json)}`);
  return r;
}

/** Polls the job until it ends; answers the final JobDetail. */
export async function waitForJob(http: ReturnType<typeof httpClient>, jobId: string, timeoutMs = 900_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const job = (await http("GET", `/v1/jobs/${jobId}`)).json;
    if (!["pending", "running"].includes(job.status) || Date.now() > until) return job;
    await new Promise((r) => setTimeout(r, 500));
  }
}

export interface SetResult {
  report: AccuracyReport;
  failures: string[];
  numPoints: number;
  meanReprojectionError: number;
  colmap: { points3D: number; mean_reproj_px: number; total_s: number };
}

/** Reads the reconstruction's last sealed snapshot and scores it against the reference. */
export async function scoreAgainstReference(http: ReturnType<typeof httpClient>, set: string, reconId: string): Promise<SetResult> {
  const seqs = (await http("GET", `/v1/reconstructions/${reconId}/snapshots`)).json.seqs as number[];
  const last = seqs.at(-1);
  if (last === undefined) throw new Error("no sealed snapshot");
  const base = `/v1/reconstructions/${reconId}/snapshots/${last}`;
  const images = ImagesFile.parse((await http("GET", `${base}/images.json`)).json);
  const summary = SummaryFile.parse((await http("GET", `${base}/summary.json`)).json);
  const points = decodePointsHeader((await http("GET", `${base}/points.bin`)).raw);
  const ours: ImagePose[] = images.images.map((im) => {
    const q = im.cam_from_world.rotation;
    return { name: im.name, qvec: [q.w, q.x, q.y, q.z], tvec: im.cam_from_world.translation };
  });
  const dir = datasetDir(set);
  const reference = await readColmapTextModel(new URL("reference/", dir).pathname);
  const row = parseColmapResultsTsv(readFileSync(new URL("reference/colmap-3.8-results.tsv", dir), "utf8"))[0]!;
  const colmap = { points3D: Number(row.points3D), mean_reproj_px: Number(row.mean_reproj_px), total_s: Number(row.total_s) };
  const report = compareToReference(ours, referencePoses(reference));
  return {
    report,
    failures: barFailures(report, summary.mean_reproj_err, colmap.mean_reproj_px),
    numPoints: points.count,
    meanReprojectionError: summary.mean_reproj_err,
    colmap,
  };
}

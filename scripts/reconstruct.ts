// `npm run reconstruct -- <folder of photos> [--out DIR] [--server URL] [--key KEY]`: photos to a
// sparse model through the API. Uploads in chunks (resumable; photos the server already holds
// are not sent again), creates a dataset, runs the `incremental` recipe with a progress bar from
// the job's SSE stream, and writes the final model as COLMAP text files and a PLY into --out.
// Without --server it starts a local stack in this process, with one Node runner to compute.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, extname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { localRuntimeVersions, nodeRunnerHost } from "../browser-runtime/runner/node-host";
import { Runner } from "../browser-runtime/runner/runner";
import { exportSnapshot } from "../browser-runtime/stages/export";
import { RunnerClient } from "../client/index";
import { CamerasFile, type Dataset, ImagesFile, type JobAccepted, type JobDetail, type Project, type Upload } from "../protocol";
import { startServer } from "../test/conformance/server";
import { openSse } from "../test/runner/sse-client";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: "string", default: "reconstruction" },
    server: { type: "string" },
    key: { type: "string", default: process.env.EDGESFM_API_KEY },
    "camera-model": { type: "string", default: "SIMPLE_RADIAL" },
    "per-image-cameras": { type: "boolean", default: false },
  },
});
const folder = positionals[0];
if (!folder) {
  console.error("usage: npm run reconstruct -- <folder of photos> [--out DIR] [--server URL] [--key KEY] [--per-image-cameras]");
  process.exit(2);
}
const PHOTO = new Set([".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff"]);
const CHUNK = 8 * 1024 * 1024;

const local = values.server ? null : await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
const base = (values.server ?? local!.base).replace(/\/$/, "");
const auth: Record<string, string> = values.key ? { Authorization: `Bearer ${values.key}` } : {};

/** One request; answers the JSON body as `T` (the resource the route returns), throwing on an error. */
async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const binary = body instanceof Uint8Array;
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, ...(body === undefined || binary ? {} : { "Content-Type": "application/json" }), ...headers },
    body: binary ? (body as BodyInit) : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json?.title ?? ""}: ${json?.detail ?? text}`);
  return json;
}

/** Uploads one photo; the Idempotency-Key names its bytes, so a retry or a second run resumes or skips. */
async function upload(bytes: Uint8Array): Promise<string> {
  const sha = createHash("sha256").update(bytes).digest("hex");
  let up = await api<Upload>("POST", "/v1/uploads", { expected_size: bytes.byteLength, expected_sha: sha }, { "Idempotency-Key": `sha256:${sha}:${bytes.byteLength}` });
  if (up.state === "finalized" && up.blob_sha) return up.blob_sha;
  for (let start = up.received_bytes; start < bytes.byteLength; start += CHUNK) {
    const end = Math.min(start + CHUNK, bytes.byteLength) - 1;
    up = await api<Upload>("PATCH", `/v1/uploads/${up.upload_id}`, bytes.subarray(start, end + 1), { "Content-Range": `bytes ${start}-${end}/${bytes.byteLength}` });
  }
  return (await api<Upload & { blob_sha: string }>("POST", `/v1/uploads/${up.upload_id}:finalize`)).blob_sha;
}

function bar(fraction: number, label: string): void {
  const width = 30;
  const done = Math.round(fraction * width);
  process.stdout.write(`\r[${"#".repeat(done)}${".".repeat(width - done)}] ${(100 * fraction).toFixed(0).padStart(3)}% ${label.padEnd(40).slice(0, 40)}`);
}

const names = readdirSync(folder).filter((n) => PHOTO.has(extname(n).toLowerCase())).sort();
if (names.length === 0) throw new Error(`no photos in ${folder}`);
const project = await api<Project>("POST", "/v1/projects", { name: resolve(folder).split("/").at(-1) });
const entries = [];
for (const [i, name] of names.entries()) {
  bar(i / names.length, `uploading ${name}`);
  entries.push({ name, blob_sha: await upload(new Uint8Array(readFileSync(join(folder, name)))) });
}
bar(1, `${names.length} photos uploaded`);
process.stdout.write("\n");
const dataset = await api<Dataset>("POST", `/v1/projects/${project.project_id}/datasets`, {
  name: project.name,
  source: { kind: "upload", entries },
  camera_model: values["camera-model"],
  intrinsics_mode: values["per-image-cameras"] ? "per_image" : "single_camera",
});
const job = await api<JobAccepted>("POST", `/v1/projects/${project.project_id}/pipelines/incremental`, { dataset_id: dataset.dataset_id, spec: { kind: "incremental" } });
console.log(`job ${job.job_id}, reconstruction ${job.recon_id}`);

const runner = local ? new Runner(new RunnerClient({ baseUrl: base }), await nodeRunnerHost("reconstruct")) : null;
const computing = runner?.run();

// Progress from the event stream: each task is a quarter of the recipe; phase_progress fills it.
const KINDS = ["extract", "match", "verify", "map"];
const taskKind = new Map<string, string>((await api<JobDetail>("GET", `/v1/jobs/${job.job_id}`)).tasks.map((t) => [t.task_id, t.kind]));
const stream = await openSse((url, init) => fetch(url, { ...init, headers: { ...auth, ...(init?.headers ?? {}) } }), `${base}/v1/jobs/${job.job_id}/events`);
let status = "pending";
for (let frame = await stream.next(); frame; frame = await stream.next()) {
  if (!("data" in frame)) continue;
  const e = frame.data;
  const k = KINDS.indexOf(taskKind.get(e.task_id) ?? "");
  if (e.kind === "phase_progress" && k >= 0 && e.total) bar((k + e.current / e.total) / KINDS.length, `${e.phase} ${e.current}/${e.total}`);
  if (e.kind === "phase_completed" && k >= 0) bar((k + 1) / KINDS.length, `${e.phase} done`);
  if (e.kind === "error") process.stdout.write(`\n${e.error_class}: ${e.message}\n`);
  if (e.kind === "job_status") status = e.status;
}
process.stdout.write("\n");
runner?.stop();
await computing;
if (status !== "succeeded") {
  console.error(`the job ended ${status}`);
  await local?.stop();
  process.exit(1);
}

const seqs = (await api<{ seqs: number[] }>("GET", `/v1/reconstructions/${job.recon_id}/snapshots`)).seqs;
const snap = `/v1/reconstructions/${job.recon_id}/snapshots/${seqs.at(-1)}`;
const points = new Uint8Array(await (await fetch(`${base}${snap}/points.bin`, { headers: auth })).arrayBuffer());
const snapshot = { cameras: CamerasFile.parse(await api<unknown>("GET", `${snap}/cameras.json`)), images: ImagesFile.parse(await api<unknown>("GET", `${snap}/images.json`)), points };
for (const [format, dir] of [["colmap_text", "sparse/0"], ["ply", "."]] as const) {
  for (const [path, bytes] of exportSnapshot(format, snapshot).files) {
    const file = join(values.out!, dir, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes);
  }
}
console.log(`${snapshot.images.images.length}/${names.length} images registered; model in ${values.out}/sparse/0 (COLMAP text) and ${values.out}/ (PLY)`);
await local?.stop();

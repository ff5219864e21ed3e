// `npm run reconstruct -- <folder of photos> [--out DIR] [--server URL] [--key KEY]`: photos to a
// sparse model through the API with the typed client (client/). Uploads in chunks (resumable;
// photos the server already holds are not sent again), creates a dataset, runs the `incremental`
// recipe (or, with --mapper global|hierarchical, that one; hierarchical's clusters sized by --cluster-max-size N and
// --cluster-overlap N) with a progress bar (the job's fraction, the running stage's progress and its time left
// at the stage's rate), and writes the final models as COLMAP text files and PLYs into --out: sparse/0 and
// points3D.ply the largest (or the models joined by shared photos), sparse/1, 2, ... and points3D-1.ply, ... each
// model of photos that do not connect with it, as COLMAP's mapper writes them.
// Without --server it starts a local stack in this process, with one Node runner to compute.
// --pairs chooses the pair strategy (2.12): exhaustive (default), sequential (--overlap N),
// retrieval (the dataset's similarity index, --retrieval-strategy vlad|dhash, default vlad; --retrieval-k N),
// vocabtree (bags of words in the shipped tree, or --vocab-tree blob:<sha256> of an uploaded one; --retrieval-k N)
// spatial (EXIF GPS, --overlap-distance M metres) or explicit (--pairs-file FILE: `image1 image2` rows, uploaded;
// the service checks it against the photos' names and answers 422 naming each bad line).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { localRuntimeVersions, nodeRunnerHost } from "../browser-runtime/runner/node-host";
import { Runner } from "../browser-runtime/runner/runner";
import { exportSnapshot } from "../browser-runtime/stages/export";
import { EdgeSfmClient, type JobProgressUpdate, ProblemError, RunnerClient, describeError, formatEta, sha256Hex } from "../client/index";
import { PairsSpec } from "../protocol";
import { startLocalStack } from "./local-stack";
import { type SubmitOptions, photoNames, sealedModels, submitFolder } from "./photo-folder";

const USAGE =
  "usage: npm run reconstruct -- <folder of photos> [--out DIR] [--server URL] [--key KEY] [--camera-model MODEL] [--per-image-cameras] [--pairs exhaustive|sequential|retrieval|vocabtree|spatial|explicit] [--overlap N] [--retrieval-strategy vlad|dhash] [--retrieval-k N] [--vocab-tree blob:SHA256] [--overlap-distance M] [--pairs-file FILE] [--mapper incremental|global|hierarchical] [--cluster-max-size N] [--cluster-overlap N]";
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: "string", default: "reconstruction" },
    server: { type: "string" },
    key: { type: "string", default: process.env.EDGESFM_API_KEY },
    "camera-model": { type: "string", default: "SIMPLE_RADIAL" },
    "per-image-cameras": { type: "boolean", default: false },
    pairs: { type: "string", default: "exhaustive" },
    overlap: { type: "string" },
    "retrieval-k": { type: "string" },
    "retrieval-strategy": { type: "string" },
    "vocab-tree": { type: "string" },
    "overlap-distance": { type: "string" },
    "pairs-file": { type: "string" },
    mapper: { type: "string", default: "incremental" },
    "cluster-max-size": { type: "string" },
    "cluster-overlap": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const folder = positionals[0];
if (!folder) {
  console.error(USAGE);
  process.exit(2);
}
// An explicit pair list is uploaded as it is; its blob_sha is its SHA-256 (4.3), known before the upload.
const pairsFile = values["pairs-file"] === undefined ? null : new Uint8Array(readFileSync(values["pairs-file"]));
const pairs = PairsSpec.safeParse({
  strategy: values.pairs,
  ...(values["retrieval-strategy"] !== undefined ? { retrieval_strategy: values["retrieval-strategy"] } : {}),
  ...(values["vocab-tree"] !== undefined ? { vocab_tree_path: values["vocab-tree"] } : {}),
  ...(values.overlap !== undefined ? { overlap: Number(values.overlap) } : {}),
  ...(values["retrieval-k"] !== undefined ? { retrieval_k: Number(values["retrieval-k"]) } : {}),
  ...(values["overlap-distance"] !== undefined ? { overlap_distance_m: Number(values["overlap-distance"]) } : {}),
  ...(pairsFile ? { pairs_blob_sha: await sha256Hex(pairsFile) } : {}),
});
if (!pairs.success) {
  console.error(`${USAGE}\n${pairs.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("\n")}`);
  process.exit(2);
}
const mapper = values.mapper;
if (mapper !== "incremental" && mapper !== "global" && mapper !== "hierarchical") {
  console.error(`${USAGE}\n--mapper: incremental, global or hierarchical, not ${mapper}`);
  process.exit(2);
}
// The hierarchical recipe's cluster sizes (2.12); the service checks them (422 naming the field).
const clusters = {
  ...(values["cluster-max-size"] !== undefined ? { cluster_max_size: Number(values["cluster-max-size"]) } : {}),
  ...(values["cluster-overlap"] !== undefined ? { cluster_overlap: Number(values["cluster-overlap"]) } : {}),
};
if (Object.keys(clusters).length > 0 && mapper !== "hierarchical") {
  console.error(`${USAGE}\n--cluster-max-size and --cluster-overlap size the clusters of --mapper hierarchical`);
  process.exit(2);
}
const names = photoNames(folder);
if (names.length === 0) {
  console.error(`no photos in ${folder}`);
  process.exit(2);
}

/** One line, redrawn in place: a bar of `fraction` and what is happening. */
function bar(fraction: number, label: string): void {
  const width = 30;
  const done = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  process.stdout.write(
    `\r[${"#".repeat(done)}${".".repeat(width - done)}] ${(100 * fraction).toFixed(0).padStart(3)}% ${label.padEnd(48).slice(0, 48)}`,
  );
}

/** The running stage as a label: `match pairs 120/300, 1 min 05 s left` (the time left at the stage's rate). */
function stageLabel(p: JobProgressUpdate): string {
  const s = p.stage;
  if (!s) return `${p.status}, ${p.completed_tasks}/${p.total_tasks} tasks done`;
  const count = s.total !== null ? `${s.current}/${s.total}` : String(s.current);
  const eta = s.eta_seconds !== null && s.current < (s.total ?? 0) ? `, ${formatEta(s.eta_seconds)} left` : "";
  return `${s.kind ?? ""} ${s.phase} ${count}${eta}`.trim();
}

/** An error as the user can act on it: the problem's title and detail, and each field a 422 names. */
function explain(e: unknown): string {
  const fields = e instanceof ProblemError ? (e.problem.errors ?? []) : [];
  return [describeError(e), ...fields.map((f) => `  ${f.path}: ${f.message}`)].join("\n");
}

const local = values.server ? null : await startLocalStack({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
let runner: Runner | null = null;
let computing: Promise<void> | undefined;
try {
  const baseUrl = values.server ?? local!.base;
  const client = new EdgeSfmClient({ baseUrl, authorization: values.key ? `Bearer ${values.key}` : undefined });

  if (pairsFile) await client.upload(pairsFile);
  const { job_id, recon_id } = await submitFolder(client, folder, {
    name: resolve(folder).split("/").at(-1)!,
    // Any name: the service checks it against the spec's models and answers a 422 naming the field.
    camera_model: values["camera-model"] as SubmitOptions["camera_model"],
    intrinsics_mode: values["per-image-cameras"] ? "per_image" : "single_camera",
    pairs: pairs.data,
    mapper,
    spec: clusters,
    onUpload: (i, name, p) => bar((i + (p.phase === "hashing" ? 0 : p.done / Math.max(1, p.total))) / names.length, `${p.phase} ${name}`),
  });
  bar(1, `${names.length} photos uploaded`);
  process.stdout.write(`\njob ${job_id}, reconstruction ${recon_id}\n`);

  if (local) {
    runner = new Runner(new RunnerClient({ baseUrl }), await nodeRunnerHost("reconstruct"));
    computing = runner.run();
  }
  const job = await client.waitForJob(job_id, {
    onProgress: (p) => bar(p.fraction, stageLabel(p)),
    onEvent: (e) => {
      if (e.kind === "error") process.stdout.write(`\n${String(e.error_class)}: ${String(e.message)}\n`);
    },
    onState: (state, detail) => state === "reconnecting" && bar(0, `reconnecting: ${detail ?? ""}`),
  });
  process.stdout.write("\n");
  if (job.status !== "succeeded") {
    console.error(`the job ended ${job.status}${job.error_message ? `: ${job.error_message}` : ""}`);
    process.exitCode = 1;
  } else {
    // As COLMAP writes the models of photos that do not connect: sparse/0, 1, ..., largest first.
    const models = await sealedModels(client, recon_id);
    const plyName = (k: number) => `points3D${k ? `-${k}` : ""}.ply`;
    const write = (path: string, bytes: Uint8Array) => {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, bytes);
    };
    for (const [k, model] of models.entries()) {
      for (const [path, bytes] of exportSnapshot("colmap_text", model).files) write(join(values.out!, `sparse/${k}`, path), bytes);
      for (const bytes of exportSnapshot("ply", model).files.values()) write(join(values.out!, plyName(k)), bytes);
    }
    const counts = models.map((m) => m.images.images.length);
    console.log(
      models.length === 1
        ? `${counts[0]}/${names.length} images registered; model in ${values.out}/sparse/0 (COLMAP text) and ${values.out}/ (PLY)`
        : `${models.length} models (photos that do not connect) of ${counts.join(", ")} of ${names.length} images; in ${values.out}/sparse/0..${models.length - 1} (COLMAP text) and ${models.map((_, k) => `${values.out}/${plyName(k)}`).join(", ")}`,
    );
  }
} catch (e) {
  process.stdout.write("\n");
  console.error(explain(e));
  process.exitCode = 1;
} finally {
  runner?.stop();
  await computing;
  await local?.stop();
}

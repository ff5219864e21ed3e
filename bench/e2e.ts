// `npm run bench -- e2e [set...]`: photos to final snapshot over HTTP on the local stack (workerd)
// with one runner (Node by default; --browser for headless Chromium), beside COLMAP's own
// pipeline (feature_extractor, exhaustive_matcher, mapper; CPU) run on the same machine in the
// same invocation. Prints wall times, ratios and accuracy; writes bench/results/e2e.json.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { launchChromium } from "../browser-runtime/headless/chromium";
import { RunnerClient } from "../browser-runtime/runner/client";
import { localRuntimeVersions, nodeRunnerHost } from "../browser-runtime/runner/node-host";
import { Runner } from "../browser-runtime/runner/runner";
import { startServer } from "../test/conformance/server";
import { httpClient } from "../test/support/http";
import { INTRINSICS, datasetDir, scoreAgainstReference, submitSet, waitForJob } from "../test/support/reconstruct";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { browser: { type: "boolean", default: false }, "skip-colmap": { type: "boolean", default: false } } });
const sets = positionals.length ? positionals : ["sacre-coeur", "sceaux-castle", "opensfm-lund"];

/** COLMAP 3.8's CLI pipeline as the references were made (CPU SIFT, exhaustive matching, mapper). */
function colmapSeconds(set: string): number | null {
  if (spawnSync("bash", ["scripts/system-deps.sh", "colmap"], { stdio: "inherit" }).status !== 0) return null;
  const work = mkdtempSync(join(tmpdir(), `colmap-${set}-`));
  const images = new URL("images/", datasetDir(set)).pathname;
  const db = join(work, "db.sqlite");
  mkdirSync(join(work, "sparse"));
  const run = (args: string[]) => {
    const r = spawnSync("colmap", args, { stdio: "ignore", env: { ...process.env, QT_QPA_PLATFORM: "offscreen" } });
    if (r.status !== 0) throw new Error(`colmap ${args[0]} failed`);
  };
  const t0 = performance.now();
  run(["feature_extractor", "--database_path", db, "--image_path", images, "--ImageReader.camera_model", "SIMPLE_RADIAL",
    "--ImageReader.single_camera", INTRINSICS[set] === "per_image" ? "0" : "1", "--SiftExtraction.use_gpu", "0"]);
  run(["exhaustive_matcher", "--database_path", db, "--SiftMatching.use_gpu", "0"]);
  run(["mapper", "--database_path", db, "--image_path", images, "--output_path", join(work, "sparse")]);
  const seconds = (performance.now() - t0) / 1000;
  rmSync(work, { recursive: true, force: true });
  return seconds;
}

const server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
const http = httpClient(server.base);
const browser = values.browser ? await launchChromium() : null;
if (browser) await (await browser.context.newPage()).goto(`${server.base}/runner.html?name=bench`);
const rows = [];
try {
  for (const set of sets) {
    const t0 = performance.now();
    const { job_id, recon_id } = await submitSet(http, set);
    if (!browser) await new Runner(new RunnerClient({ base: server.base }), await nodeRunnerHost("bench-node")).drain();
    const job = await waitForJob(http, job_id);
    const ours = (performance.now() - t0) / 1000;
    if (job.status !== "succeeded") throw new Error(`${set}: job ${job.status}: ${job.error_message}`);
    const r = await scoreAgainstReference(http, set, recon_id);
    const colmap = values["skip-colmap"] ? null : colmapSeconds(set);
    rows.push({
      set,
      images: readdirSync(new URL("images/", datasetDir(set))).length,
      registered: `${r.report.numRegistered}/${r.report.numReferenceImages}`,
      ours_s: Number(ours.toFixed(1)),
      colmap_s: colmap === null ? null : Number(colmap.toFixed(1)),
      ratio: colmap === null ? null : Number((ours / colmap).toFixed(2)),
      points: r.numPoints,
      colmap_points: r.colmap.points3D,
      median_rot_deg: Number(r.report.medianRotationErrorDeg.toFixed(3)),
      max_center_pct: Number((100 * r.report.maxCenterErrorFraction).toFixed(3)),
      reproj_px: Number(r.meanReprojectionError.toFixed(3)),
      colmap_reproj_px: r.colmap.mean_reproj_px,
      bars: r.failures.length === 0 ? "pass" : r.failures.join("; "),
    });
    console.table(rows.slice(-1));
  }
} finally {
  await browser?.close();
  await server.stop();
}
console.table(rows);
mkdirSync("bench/results", { recursive: true });
writeFileSync("bench/results/e2e.json", JSON.stringify({ runner: browser ? "headless-chromium" : "node", date: new Date().toISOString(), rows }, null, 2));

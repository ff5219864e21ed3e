/**
 * `npm run bench -- memory [--set gum] [--images N] [--pairs sequential|exhaustive] [--mapper incremental|global]`: peak runner memory per
 * stage (issue 18, Memory). One local stack and one runner process (browser-runtime/runner/node-main.ts, wasm) per stage
 * of the pipeline (RUNNER_STAGES), each computing on its own thread's one engine (RUNNER_ENGINE_WORKERS=1), so each
 * process's figures are its stage's alone: the engine's wasm heap after the stage (a heap never shrinks: its peak) and the
 * process's peak resident set, as each runner logs them with every completed task. Reports them beside the set's size
 * (photos, keypoints, pairs, verified pairs, inlier matches). Writes bench/results/memory.json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { createInterface } from "node:readline";
import { EdgeSfmClient, unwrap } from "../client/index";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { PairsSpec } from "../protocol";
import { startLocalStack } from "../scripts/local-stack";
import { datasetDir } from "../scripts/reference-sets";
import { photoNames, submitFolder } from "../scripts/photo-folder";
import { arg, root } from "./_args";

const SET = arg("set", "gum");
const PAIRS = arg("pairs", "sequential") as "exhaustive" | "sequential";
const MAPPER = arg("mapper", "incremental") as "incremental" | "global";
const STAGES = ["extract", "match", "verify", "map"] as const;

interface Reported {
  heap_mib: number;
  peak_rss_mib: number;
}

/** A runner process for one stage; `reported` holds the memory its last completed task logged. */
function startRunner(base: string, stage: string, reported: Map<string, Reported>): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "browser-runtime/runner/node-main.ts", base, `memory-${stage}`], {
    cwd: root,
    env: { ...process.env, RUNNER_ENGINE_WORKERS: "1", RUNNER_STAGES: stage },
    stdio: ["ignore", "pipe", "inherit"],
  });
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const done = /\] completed \S+ \S+ \(engine heap (\d+) MiB, rss \d+ MiB, peak rss (\d+) MiB\)/.exec(line);
    if (done) reported.set(stage, { heap_mib: Number(done[1]), peak_rss_mib: Number(done[2]) });
    if (/\] (registered|cannot start)/.test(line)) child.emit("registered", line);
  });
  return child;
}

/** `--images N`: the set's first N photos (by name), to see how memory grows with the photos and their pairs. */
const IMAGES = Number(arg("images", "0"));
const setFolder = join(datasetDir(SET).pathname, "images");
const folder = IMAGES > 0 ? mkdtempSync(join(tmpdir(), "memory-bench-")) : setFolder;
for (const name of IMAGES > 0 ? photoNames(setFolder).slice(0, IMAGES) : []) symlinkSync(join(setFolder, name), join(folder, name));
const server = await startLocalStack({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
const reported = new Map<string, Reported>();
const runners = STAGES.map((stage) => startRunner(server.base, stage, reported));
const sizes: Record<string, number> = { photos: photoNames(folder).length };
try {
  await Promise.all(runners.map((r) => new Promise((resolve) => r.once("registered", resolve))));
  const client = new EdgeSfmClient({ baseUrl: server.base });
  const { job_id } = await submitFolder(client, folder, { name: SET, pairs: PairsSpec.parse({ strategy: PAIRS }), mapper: MAPPER });
  const job = await client.waitForJob(job_id);
  if (job.status !== "succeeded") throw new Error(`job ${job_id}: ${job.status} ${job.error_message ?? ""}`);
  const artifacts = await unwrap(
    client.api.GET("/v1/jobs/{jid}/artifacts", { params: { path: { jid: job_id }, query: { page_size: 100 } } }),
  );
  for (const a of artifacts.items)
    for (const key of ["num_keypoints", "num_pairs", "num_verified_pairs", "num_inlier_matches", "num_reg_images", "num_points3D"])
      if (typeof a.summary[key] === "number" && !(key === "num_pairs" && a.kind !== "matches.indexed.v1")) sizes[key] = a.summary[key];
} finally {
  // One process each (its engine workers are threads): nothing else to stop.
  for (const r of runners) r.kill("SIGKILL");
  await server.stop();
}

const machine = { cpus: availableParallelism(), loadavg_1m: Number(loadavg()[0]!.toFixed(1)) };
console.log(`memory benchmark: ${SET}, ${PAIRS} pairs, ${MAPPER} mapper; ${machine.cpus} cpus, load ${machine.loadavg_1m}`);
console.log(
  Object.entries(sizes)
    .map(([k, v]) => `${k} ${v}`)
    .join(", "),
);
console.log("stage     engine heap MiB  peak rss MiB");
for (const stage of STAGES) {
  const r = reported.get(stage);
  console.log(`${stage.padEnd(9)} ${String(r?.heap_mib ?? "-").padStart(15)} ${String(r?.peak_rss_mib ?? "-").padStart(13)}`);
}
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/memory.json"),
  `${JSON.stringify({ machine, set: SET, pairs: PAIRS, mapper: MAPPER, sizes, stages: Object.fromEntries(reported) }, null, 2)}\n`,
);

/**
 * `npm run bench -- e2e [set...] [--browser [--threads off]] [--skip-colmap] [--engines N] [--pairs STRATEGY]
 * [--overlap N] [--mapper incremental|global]`: photos to final
 * snapshot over HTTP on the local stack (workerd) with one runner (Node by default; --browser for
 * headless Chromium), beside COLMAP's own pipeline (feature_extractor, exhaustive_matcher, mapper;
 * CPU, its default threads) run on the same machine in the same invocation. The Node runner
 * computes extract, match and verify on one engine worker per core (`--engines 1`: in its own
 * thread, the single-core path).
 *
 * Both sides are timed in wall seconds and in CPU seconds (user + system): ours is this process
 * (the runner and its engine workers), workerd and, with --browser, Chromium; COLMAP's is each
 * process under /usr/bin/time. On a machine shared with other work CPU time is the fairer
 * comparison; wall time also shows how well each side uses the cores (COLMAP's threads, our
 * engine workers; our mapper is single-threaded, except in a browser runner on the threaded engine,
 * which the runner page loads where it is cross-origin isolated: `--threads off` opens it with the
 * plain one). `--pairs` and `--mapper` choose our recipe (2.12 PairsSpec strategy, `--overlap` its sequential window; the mapper kind); COLMAP's side stays exhaustive + incremental,
 * the baseline issue 18 compares against on large sets (`e2e gum --pairs sequential --mapper global`). Our time is
 * split by stage (upload, extract, match, verify, map), each with the part the runner spent
 * waiting on HTTP (transfer: blob reads and writes, seals, checkpoints). Prints the tables; writes bench/results/e2e.json.
 */
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { launchChromium } from "../browser-runtime/headless/chromium";
import { localRuntimeVersions, nodeRunnerHost } from "../browser-runtime/runner/node-host";
import { Runner } from "../browser-runtime/runner/runner";
import { EdgeSfmClient, RunnerClient, collect } from "../client/index";
import { PairsSpec, type ProgressEvent, type TaskKind } from "../protocol";
import { startLocalStack } from "../scripts/local-stack";
import { INTRINSICS, datasetDir, scoreAgainstReference, submitSet } from "../scripts/reference-sets";
import { processTreeCpuSeconds, root } from "./_args";
import { type ProcessTiming, colmapPipeline, ensureColmap } from "./_colmap";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    browser: { type: "boolean", default: false },
    threads: { type: "string", default: "on" },
    "skip-colmap": { type: "boolean", default: false },
    engines: { type: "string" },
    pairs: { type: "string" },
    overlap: { type: "string" },
    mapper: { type: "string", default: "incremental" },
  },
});
const pairs =
  values.pairs === undefined
    ? undefined
    : PairsSpec.parse({ strategy: values.pairs, ...(values.overlap !== undefined ? { overlap: Number(values.overlap) } : {}) });
if (values.mapper !== "incremental" && values.mapper !== "global") throw new Error(`--mapper ${values.mapper}: incremental or global`);
const mapper = values.mapper;
const engineWorkers = values.engines === undefined ? undefined : Number(values.engines);
const sets = positionals.length ? positionals : ["sacre-coeur", "sceaux-castle", "opensfm-lund"];
process.env.QT_QPA_PLATFORM ??= "offscreen";

const round = (x: number, digits = 1) => Number(x.toFixed(digits));

/** Wall, CPU and HTTP-wait seconds of one stretch of our pipeline. */
interface Span {
  wall_s: number;
  cpu_s: number;
  transfer_s: number;
}

/**
 * Splits a run into spans as the runner moves between tasks: call `enter(name)` at each
 * boundary; the time spent inside `fetch` is counted as the current span's transfer.
 */
class Stopwatch {
  readonly spans: Record<string, Span> = {};
  private current: { name: string; wall: number; cpu: number; transfer: number } | null = null;
  private transfer = 0;

  enter(name: string | null): void {
    const now = { wall: performance.now() / 1000, cpu: processTreeCpuSeconds(), transfer: this.transfer };
    if (this.current) {
      const s = (this.spans[this.current.name] ??= { wall_s: 0, cpu_s: 0, transfer_s: 0 });
      s.wall_s += now.wall - this.current.wall;
      s.cpu_s += now.cpu - this.current.cpu;
      s.transfer_s += now.transfer - this.current.transfer;
    }
    this.current = name === null ? null : { name, ...now };
  }

  /**
   * `fetch`, with the wait for the whole response body counted as transfer; heartbeats and event
   * posts are not counted: they run beside the executor, which does not wait for them.
   */
  readonly fetch = async (request: Request): Promise<Response> => {
    if (/(:heartbeat|\/events)$/.test(request.url)) return fetch(request);
    const t0 = performance.now();
    try {
      const res = await fetch(request);
      const body = res.status === 204 || res.status === 304 ? null : await res.arrayBuffer();
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    } finally {
      this.transfer += (performance.now() - t0) / 1000;
    }
  };
}

const server = await startLocalStack({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
const client = new EdgeSfmClient({ baseUrl: server.base });
const browser = values.browser ? await launchChromium() : null;
if (browser)
  await (await browser.context.newPage()).goto(`${server.base}/runner.html?name=bench${values.threads === "off" ? "&threads=0" : ""}`);
const haveColmap = !values["skip-colmap"] && ensureColmap(root);
const load = { before: loadavg().map((l) => round(l, 2)), after: [] as number[] };
const rows: Record<string, unknown>[] = [];
const stages: Record<string, unknown>[] = [];
try {
  for (const set of sets) {
    const watch = new Stopwatch();
    const t0 = performance.now();
    const cpu0 = processTreeCpuSeconds();
    watch.enter("upload");
    const { job_id, recon_id } = await submitSet(client, set, {}, pairs, mapper);
    // A browser runner's job is one span here; its stages are the service's task times (below).
    if (browser) watch.enter("job");
    else {
      watch.enter("queue");
      const onStatus = (s: { state: string; kind?: TaskKind }) => watch.enter(s.state === "working" ? s.kind! : "queue");
      await new Runner(
        new RunnerClient({ baseUrl: server.base, fetch: watch.fetch }),
        await nodeRunnerHost("bench-node", { engineWorkers }),
        { onStatus },
      ).drain();
    }
    const job = await client.waitForJob(job_id);
    watch.enter(null);
    const ours = { wall_s: (performance.now() - t0) / 1000, cpu_s: processTreeCpuSeconds() - cpu0 };
    // A failed job still gets its row (and COLMAP's column): the failed task's own words are printed.
    let failure: string | null = null;
    if (job.status !== "succeeded") {
      const failed = job.tasks.find((t) => t.status === "failed");
      const said = ((await collect(client.events(job_id, { reconnect: false }))) as ProgressEvent[]).flatMap((e) =>
        (e.kind === "log_line" || e.kind === "warning" || e.kind === "error") && e.task_id === failed?.task_id
          ? [`  ${e.kind}: ${e.message}${"detail" in e && e.detail ? ` ${JSON.stringify(e.detail)}` : ""}`]
          : [],
      );
      failure = `job ${job.status} in ${failed?.kind}: ${failed?.error_class}: ${failed?.error_message ?? job.error_message}`;
      console.error(`${set}: ${failure}\n${said.join("\n")}`);
    }
    const r = failure ? null : await scoreAgainstReference(client, set, recon_id);
    // A browser runner's stages are timed by the service (task start to finish), without CPU.
    if (browser) {
      for (const t of job.tasks)
        watch.spans[t.kind] = {
          wall_s: (Date.parse(t.finished_at ?? "") - Date.parse(t.started_at ?? "")) / 1000,
          cpu_s: NaN,
          transfer_s: NaN,
        };
    }
    const colmap = haveColmap ? colmapPipeline(new URL("images/", datasetDir(set)).pathname, INTRINSICS[set] !== "per_image") : null;
    const colmapTotal = colmap && {
      wall_s: colmap.extract.wallSeconds + colmap.match.wallSeconds + colmap.map.wallSeconds,
      cpu_s: colmap.extract.cpuSeconds + colmap.match.cpuSeconds + colmap.map.cpuSeconds,
    };
    rows.push({
      set,
      images: readdirSync(new URL("images/", datasetDir(set))).length,
      recipe: `${pairs?.strategy ?? "exhaustive"} + ${mapper}`,
      registered: r && `${r.report.numRegistered}/${r.report.numReferenceImages}`,
      ours_wall_s: round(ours.wall_s),
      colmap_wall_s: colmapTotal && round(colmapTotal.wall_s),
      wall_ratio: colmapTotal && round(ours.wall_s / colmapTotal.wall_s, 2),
      ours_cpu_s: round(ours.cpu_s),
      colmap_cpu_s: colmapTotal && round(colmapTotal.cpu_s),
      cpu_ratio: colmapTotal && round(ours.cpu_s / colmapTotal.cpu_s, 2),
      points: r?.numPoints ?? null,
      colmap_points: r?.colmap.points3D ?? null,
      median_rot_deg: r && round(r.report.medianRotationErrorDeg, 3),
      max_rot_deg: r && round(r.report.maxRotationErrorDeg, 3),
      max_center_pct: r && round(100 * r.report.maxCenterErrorFraction, 3),
      reproj_px: r && round(r.meanReprojectionError, 3),
      colmap_reproj_px: r?.colmap.mean_reproj_px ?? null,
      bars: failure ?? (r!.failures.length === 0 ? "pass" : r!.failures.join("; ")),
      colmap_result: colmap ? (colmap.map.error ?? "model") : null,
    });
    // Where the time goes: our stages (COLMAP's exhaustive_matcher also verifies; its mapper maps).
    const colmapOf: Record<string, ProcessTiming | undefined> = { extract: colmap?.extract, match: colmap?.match, map: colmap?.map };
    for (const [stage, s] of Object.entries(watch.spans)) {
      stages.push({
        set,
        stage,
        wall_s: round(s.wall_s, 2),
        cpu_s: round(s.cpu_s, 2),
        transfer_s: round(s.transfer_s, 2),
        colmap_wall_s: colmapOf[stage] ? round(colmapOf[stage].wallSeconds, 2) : null,
        colmap_cpu_s: colmapOf[stage] ? round(colmapOf[stage].cpuSeconds, 2) : null,
      });
    }
    console.table(rows.slice(-1));
    console.table(stages.filter((s) => s.set === set));
    save();
  }
} finally {
  await browser?.close();
  await server.stop();
}
console.table(rows);
console.log(`load average (1, 5, 15 min) before ${load.before.join(", ")}, after ${load.after.join(", ")}; ${cpus().length} cores`);

/** Writes what is measured so far (after each set, so a long run keeps its finished sets). */
function save(): void {
  load.after = loadavg().map((l) => round(l, 2));
  mkdirSync("bench/results", { recursive: true });
  writeFileSync(
    "bench/results/e2e.json",
    JSON.stringify(
      {
        runner: browser ? "headless-chromium" : "node",
        engines: browser ? null : (engineWorkers ?? availableParallelism()),
        date: new Date().toISOString(),
        cores: cpus().length,
        load_average: load,
        rows,
        stages,
      },
      null,
      2,
    ),
  );
}

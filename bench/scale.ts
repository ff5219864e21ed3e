/**
 * `npm run bench -- scale [--set gum] [--runners 1,2,4] [--pairs exhaustive|sequential] [--lanes 1] [--stages features] [--cpu]`: one job's
 * extraction and matching spread over several runners (issue 17). For each runner count, a fresh
 * local stack (so nothing is a cache hit), that many runner processes (browser-runtime/runner/node-main.ts,
 * wasm) each limited to `--lanes` engines (RUNNER_ENGINE_WORKERS: one lane shows distribution rather
 * than the cores one runner already uses), the set's features then its matches as stage jobs.
 * Reports per stage: wall time (the task's started_at..finished_at), speed-up over the first
 * runner count, shards and how they were spread, and the per-shard overhead: runner time not spent
 * computing a shard (leasing, waiting on dependencies, the tail), (runners x wall - sum of the
 * shards' leased..completed times) / shards. `--repeat N` runs the counts N times interleaved
 * (1, 2, 1, 2, ...) and reports each row's median: wall times on a shared VM vary by up to a third
 * between identical runs, more than the effect measured. `--cpu` adds each stage's CPU seconds by thread
 * (/proc, bench/_threads.ts): each runner's main thread (its one lane: the engine runs there) and the
 * share of the stage it computed, waited for a CPU or idled, its other threads (decoder, GC), workerd,
 * this process: what a shared machine's noisy wall times hide. Writes bench/results/scale.json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { availableParallelism, loadavg } from "node:os";
import { createInterface } from "node:readline";
import { EdgeSfmClient, unwrap } from "../client/index";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { startLocalStack } from "../scripts/local-stack";
import { datasetDir } from "../scripts/reference-sets";
import { photoNames } from "../scripts/photo-folder";
import { arg, root } from "./_args";
import { descendants, threadCpu, threadCpuDelta } from "./_threads";

const SET = arg("set", "gum");
const COUNTS = arg("runners", "1,2,4").split(",").map(Number);
const PAIRS = arg("pairs", "exhaustive") as "exhaustive" | "sequential";
const LANES = arg("lanes", "1");
const REPEAT = Math.max(1, Number(arg("repeat", "1")));
/** `--stages features`: extraction alone (matching needs it first). */
const STAGES = arg("stages", "features,matches").split(",") as ("features" | "matches")[];
/** `--cpu`: each stage's CPU seconds per thread of the runners, of workerd and of this process (/proc, Linux). */
const CPU = process.argv.includes("--cpu");

/** A runner process that records when each of its tasks (a shard lease) was leased and completed. */
function startRunner(base: string, name: string, shardSeconds: number[]): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "browser-runtime/runner/node-main.ts", base, name], {
    cwd: root,
    env: { ...process.env, RUNNER_ENGINE_WORKERS: LANES, RUNNER_STAGES: "extract,match" },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  const leasedAt = new Map<string, number>();
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const leased = /\] leased \S+ (\S+)/.exec(line);
    if (leased) leasedAt.set(leased[1]!, performance.now());
    const ended = /\] (?:completed \S+|failed \S+|released) ([^\s:]+)/.exec(line);
    if (ended && leasedAt.has(ended[1]!)) shardSeconds.push((performance.now() - leasedAt.get(ended[1]!)!) / 1000);
    if (/\] (registered|cannot start)/.test(line)) child.emit("registered", line);
  });
  return child;
}

const kill = (c: ChildProcess) => {
  try {
    process.kill(-c.pid!, "SIGKILL");
  } catch {
    // already gone
  }
};

type CpuReading = { at: number; runners: ReturnType<typeof threadCpu>[]; workerd: ReturnType<typeof threadCpu>[]; bench: number };
const cpuReading = (runners: ChildProcess[]): CpuReading => ({
  at: performance.now(),
  runners: runners.map((r) => threadCpu(r.pid!)),
  workerd: descendants("workerd").map(threadCpu),
  bench: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
});
const sum = (r: Record<string, number>) => Object.entries(r).reduce((a, [k, v]) => (k === "main_wait" ? a : a + v), 0);
/** What was spent between two readings: from the stage's submission to its job's end (a little more than its wall time). */
const cpuSpent = (a: CpuReading, b: CpuReading): NonNullable<Run["cpu"]> => ({
  seconds: Number(((b.at - a.at) / 1000).toFixed(1)),
  runners: b.runners.map((after, i) => threadCpuDelta(a.runners[i]!, after)),
  workerd: Number(b.workerd.reduce((total, after, i) => total + sum(threadCpuDelta(a.workerd[i] ?? new Map(), after)), 0).toFixed(2)),
  bench: Number((b.bench - a.bench).toFixed(2)),
});

const images = photoNames(join(datasetDir(SET).pathname, "images"));
interface Run {
  /** Which of the `--repeat` rounds (each runs every count once). */
  round: number;
  stage: "features" | "matches";
  runners: number;
  wall_s: number;
  shards: number | null;
  by_runner: number[] | null;
  overhead_per_shard_s: number | null;
  /** With `--cpu`: CPU seconds by thread name of each runner process, of workerd and of this process (the bench's client). */
  cpu?: { seconds: number; runners: Record<string, number>[]; workerd: number; bench: number };
}
const runs: Run[] = [];
const versions = JSON.stringify(await localRuntimeVersions());
for (const [round, count] of Array.from({ length: REPEAT }, (_, round) => COUNTS.map((c) => [round, c] as const)).flat()) {
  const server = await startLocalStack({ SVC_RUNTIME_VERSIONS: versions });
  const shardSeconds: number[] = [];
  const runners = Array.from({ length: count }, (_, i) => startRunner(server.base, `scale-${count}-${i}`, shardSeconds));
  try {
    await Promise.all(runners.map((r) => new Promise((resolve) => r.once("registered", resolve))));
    const client = new EdgeSfmClient({ baseUrl: server.base });
    const { api } = client;
    const project = await unwrap(api.POST("/v1/projects", { body: { name: `scale ${count}` } }));
    const entries = [];
    for (const name of images) {
      const { blob_sha } = await client.upload(new Uint8Array(readFileSync(join(datasetDir(SET).pathname, "images", name))));
      entries.push({ name, blob_sha });
    }
    const dataset = await unwrap(
      api.POST("/v1/projects/{pid}/datasets", {
        params: { path: { pid: project.project_id } },
        body: { name: SET, source: { kind: "upload", entries }, camera_model: "SIMPLE_RADIAL", intrinsics_mode: "single_camera" },
      }),
    );
    const did = { path: { did: dataset.dataset_id } };
    for (const stage of STAGES) {
      const before = shardSeconds.length;
      const cpuBefore = CPU ? cpuReading(runners) : null;
      const submitted =
        stage === "features"
          ? await unwrap(api.POST("/v1/datasets/{did}/features", { params: did, body: {} }))
          : await unwrap(api.POST("/v1/datasets/{did}/matches", { params: did, body: { pairs: { strategy: PAIRS } } }));
      const job = await client.waitForJob(submitted.job_id);
      const task = job.tasks.at(-1)!;
      if (job.status !== "succeeded" || !task.started_at || !task.finished_at) throw new Error(`${stage} job ${job.job_id}: ${job.status}`);
      const wall = (Date.parse(task.finished_at) - Date.parse(task.started_at)) / 1000;
      const shards = task["x-shards"];
      const busy = shardSeconds.slice(before).reduce((a, b) => a + b, 0);
      const cpu = cpuBefore ? cpuSpent(cpuBefore, cpuReading(runners)) : undefined;
      runs.push({
        round,
        stage,
        runners: count,
        wall_s: Number(wall.toFixed(1)),
        shards: shards?.total ?? null,
        by_runner: shards ? Object.values(shards.by_runner).sort((a, b) => b - a) : null,
        overhead_per_shard_s: shards?.total ? Number(((count * wall - busy) / shards.total).toFixed(2)) : null,
        ...(cpu ? { cpu } : {}),
      });
    }
  } finally {
    runners.forEach(kill);
    await server.stop();
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return Number((mid % 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2).toFixed(1));
};
const rows = runs
  .filter((r, i) => runs.findIndex((q) => q.stage === r.stage && q.runners === r.runners) === i)
  .map((r) => {
    const same = runs.filter((q) => q.stage === r.stage && q.runners === r.runners);
    const walls = same.map((q) => q.wall_s);
    const wall = median(walls);
    // The shard spread and overhead shown are those of the run closest to the median.
    const closest = same.reduce((a, q) => (Math.abs(q.wall_s - wall) < Math.abs(a.wall_s - wall) ? q : a));
    return { ...closest, wall_s: wall, walls_s: walls, speedup: 1 };
  });
for (const row of rows) {
  const first = rows.find((r) => r.stage === row.stage && r.runners === COUNTS[0]);
  row.speedup = Number((first!.wall_s / row.wall_s).toFixed(2));
}
const machine = { cpus: availableParallelism(), loadavg_1m: Number(loadavg()[0]!.toFixed(1)) };
console.log(
  `scale benchmark: ${SET} (${images.length} photos, ${PAIRS} pairs), ${LANES} engine lane(s) per runner, median of ${REPEAT} run(s); ${machine.cpus} cpus, load ${machine.loadavg_1m}`,
);
console.log("stage     runners  wall s  speed-up  shards  by runner          overhead/shard s  runs' wall s");
for (const r of rows)
  console.log(
    `${String(r.stage).padEnd(9)} ${String(r.runners).padStart(7)} ${String(r.wall_s).padStart(7)} ${String(r.speedup).padStart(9)} ${String(r.shards).padStart(7)}  ${JSON.stringify(r.by_runner).padEnd(18)} ${String(r.overhead_per_shard_s).padEnd(17)} ${r.walls_s.join(", ")}`,
  );
if (CPU) {
  // With one lane the engine computes in the runner's main thread (pool/engine-pool.ts): over the stage's wall time, the
  // share it computed, waited for a CPU (taken by another process) and was idle (waiting on the service, the network, a decode).
  console.log("CPU seconds per stage (--cpu): each runner's threads and its main thread's (the lane's) time; workerd; the bench");
  const pct = (s: number, wall: number) => `${((s / wall) * 100).toFixed(0)}%`;
  for (const r of runs)
    console.log(
      `${String(r.stage).padEnd(9)} ${String(r.runners).padStart(2)} runner(s) ${String(r.cpu!.seconds).padStart(6)} s: ${r
        .cpu!.runners.map(
          (t) =>
            `${JSON.stringify(t)} lane on CPU ${pct(t.main ?? 0, r.cpu!.seconds)}, waiting for one ${pct(t.main_wait ?? 0, r.cpu!.seconds)}, idle ${pct(r.cpu!.seconds - (t.main ?? 0) - (t.main_wait ?? 0), r.cpu!.seconds)}`,
        )
        .join("; ")}; workerd ${r.cpu!.workerd}; bench ${r.cpu!.bench}`,
    );
}
const extractMatch = (n: number) => rows.filter((r) => r.runners === n).reduce((a, r) => a + r.wall_s, 0);
// Each round's own 2-against-1 ratio too: its two stacks ran back to back, so they shared the machine's state of the moment.
const roundRatios = !(COUNTS.includes(1) && COUNTS.includes(2))
  ? null
  : Array.from({ length: REPEAT }, (_, round) => {
      const total = (n: number) => runs.filter((r) => r.round === round && r.runners === n).reduce((a, r) => a + r.wall_s, 0);
      return Number((total(2) / total(1)).toFixed(3));
    });
if (roundRatios)
  console.log(
    `2 runners take ${(extractMatch(2) / extractMatch(1)).toFixed(2)} of 1 runner's extraction + matching wall time (issue 17: <= 0.6): sum of the stages' medians; each round's own ratio ${roundRatios.join(", ")}`,
  );
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/scale.json"),
  `${JSON.stringify({ machine, set: SET, pairs: PAIRS, lanes: LANES, repeat: REPEAT, round_ratios_2_to_1: roundRatios, rows, runs }, null, 2)}\n`,
);

/**
 * `npm run bench -- dispatch [--runners N] [--jobs N] [--images N] [--shards N] [--leases N] [--no-batch] [--whole-leases]
 * [--idle-runners N --idle-seconds S]`: the dispatcher's
 * capacity on the local stack (wrangler's workerd). `--runners` simulated runners (in-process clients
 * of the real protocol, client/runner.ts) long-poll for leases and complete tiny shards at once, as
 * the deployment's own runners (the operator runner token, whose scope is spread over `--shards`
 * dispatcher objects, SVC_DISPATCH_SHARDS, default 4; `--shards 0`: the tenant's own scope, one
 * object, with the tenant's key as credential): `--jobs` features
 * jobs on a dataset of `--images` images (8 to a shard), each item answered with the image's own blob
 * (an input of the job, so nothing is uploaded). Each completion leases the runner's next shard in the
 * same request (`x-lease_next`, runners.md "Batching"), as the runners of this build do; `--no-batch`
 * measures the protocol without it (a lease request per shard). `--leases N` (N > 1): each runner asks for N shards
 * per request (`x-max_leases`) and completes them in one (`:complete_leases`, which leases the next N), as a runner
 * with N engine lanes does (runners.md "Batching"), a task's further leases carrying their inputs by reference to its
 * first's (`x-inputs_by_ref`, runners.md "Inputs by reference"); `--whole-leases`: every lease whole, as runners that
 * predate it ask. Measures lease+complete operations per second (one
 * operation = one shard leased and completed) and lease latency, and checks that no shard was lost or
 * done twice. Prints a table; writes bench/results/dispatch.json.
 *
 * On a shared machine the rate follows the CPU share the stack gets, so it also reports the CPU
 * time workerd (the whole service: Worker and Durable Objects) and this process (the simulated
 * runners) spent per operation, read from /proc (Linux; null elsewhere): the service's capacity on
 * N idle cores is about N x 1000 / (workerd CPU ms per operation).
 *
 * `--idle-runners N [--idle-seconds S]`: the idle mode. N registered runners long-poll (`:lease?wait=25`, as the
 * runners of this build do when idle) with nothing to do, their loops started spread over one wait so they do not
 * poll in step; after that spread, over S seconds (default 60), it measures workerd's CPU seconds per second of wall
 * time and the lease requests answered per second, beside the same stack's CPU with no runner (10 s before they
 * register). Reports them per 1,000 runners; writes bench/results/dispatch-idle.json.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { EdgeSfmClient, type Lease, ProblemError, RunnerClient, unwrap } from "../client/index";
import { startLocalStack } from "../scripts/local-stack";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const RUNNERS = arg("runners", 200);
const JOBS = arg("jobs", 8);
const IMAGES = arg("images", 1000);
const SHARDS = arg("shards", 4);
const BATCH = !process.argv.includes("--no-batch");
const LEASES = Math.max(1, arg("leases", 1));
const INPUTS_BY_REF = !process.argv.includes("--whole-leases");
const IDLE_RUNNERS = arg("idle-runners", 0);
const IDLE_SECONDS = arg("idle-seconds", 60);
/** The long poll of the runners of this build (runners.md "Long poll"). */
const WAIT_SECONDS = 25;

const operatorToken = `sfo_dispatch-bench-${Date.now()}`;
const server = await startLocalStack({
  SVC_TEST_CAPABILITIES: "features.extract.sift",
  SVC_LEASE_TTL_SECONDS: "600",
  SVC_OPERATOR_RUNNER_TOKEN: operatorToken,
  SVC_DISPATCH_SHARDS: String(Math.max(1, SHARDS)),
});
const runnerAuth = SHARDS > 0 ? { authorization: `Bearer ${operatorToken}` } : {};
const base = server.base;
const client = new EdgeSfmClient({ baseUrl: base });
const { api } = client;
/** CPU milliseconds of the workerd processes this process started (utime + stime, /proc), or null where there is no /proc. */
function workerdCpuMs(): number | null {
  try {
    const stat = (pid: string) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    let total = 0;
    for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("workerd")) continue;
        const s = stat(pid);
        if (s[1] !== String(process.pid)) continue;
        total += ((Number(s[11]) + Number(s[12])) * 1000) / 100;
      } catch {
        // The process ended meanwhile.
      }
    }
    return total;
  } catch {
    return null;
  }
}
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0;

// One blob under IMAGES names (unsized bytes weigh 1 MP: 8 images to an extraction shard).
const project = await unwrap(api.POST("/v1/projects", { body: { name: "dispatch bench" } }));
const dataset = await unwrap(
  api.POST("/v1/projects/{pid}/datasets", {
    params: { path: { pid: project.project_id } },
    body: { name: "bench", source: { kind: "upload", entries: [] } },
  }),
);
const did = { path: { did: dataset.dataset_id } };
const image = new TextEncoder().encode(`dispatch bench image ${Date.now()}`);
const blob = (await client.upload(image)).blob_sha;
for (let i = 0; i < IMAGES; i += 1000) {
  const items = Array.from({ length: Math.min(1000, IMAGES - i) }, (_, k) => ({
    name: `img${String(i + k).padStart(6, "0")}.jpg`,
    blob_sha: blob,
  }));
  await unwrap(api.POST("/v1/datasets/{did}/images:batchCreate", { params: did, body: { requests: items } }));
}

const runtime = await new RunnerClient({ baseUrl: base }).serviceRuntimeVersions();
/** Requests sent again after a 503 of wrangler's dev proxy. */
let proxyRetries = 0;
/**
 * wrangler's dev proxy now and then answers a POST 503 "worker restarted mid-request" under many concurrent
 * requests though workerd did not restart (workers-sdk#14641): `send` again, up to 5 times. For registrations and
 * lease requests only (a lease granted but whose answer was lost would stay held until its expiry and the run would
 * not finish: the bench then fails rather than hides it).
 */
async function againAfterProxy503<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (e) {
      if (!(e instanceof ProblemError && e.status === 503) || attempt === 5) throw e;
      proxyRetries++;
    }
  }
}
/** Registers `n` simulated extraction runners, `chunk` at a time. */
async function registerRunners(n: number, chunk = n) {
  const registered: { client: RunnerClient; id: string }[] = [];
  for (let from = 0; from < n; from += chunk) {
    registered.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(chunk, n - from) }, async (_, k) => {
          const client = new RunnerClient({ baseUrl: base, ...runnerAuth }, { inputsByRef: INPUTS_BY_REF });
          const body = {
            name: `sim-${from + k}`,
            stages: ["extract" as const],
            runtime_versions: runtime,
            abilities: { webgpu: null, wasm: { simd: true, threads: false }, memory_bytes: 1024 ** 3, hardware_concurrency: 1 },
          };
          return { client, id: (await againAfterProxy503(() => client.register(body))).runner_id };
        }),
      )),
    );
  }
  return registered;
}
if (IDLE_RUNNERS > 0) await idleBench();
const clients = await registerRunners(RUNNERS);

const jobs: string[] = [];
for (let j = 0; j < JOBS; j++)
  jobs.push((await unwrap(api.POST("/v1/datasets/{did}/features", { params: did, body: { spec: { seed: j + 1 } } }))).job_id);
const expected = JOBS * Math.ceil(IMAGES / 8);

const completions = new Map<string, number>();
const leaseMs: number[] = [];
/** Latency of each batch completion (`:complete_leases`, with the next leases when `x-lease_next`). */
const completeMs: number[] = [];
/** Leases that came with a completion (`x-lease_next`) rather than from a lease request. */
let leasedWithCompletion = 0;
/** Leases per answer (1 without `--leases`). */
const batches: number[] = [];
let done = 0;
const cpu0 = { workerd: workerdCpuMs(), runners: process.cpuUsage() };
const t0 = performance.now();
/** One artifact per item of a shard, each answered with the image's own blob (an input of the job). */
const outputsOf = (lease: Lease) => ({
  artifacts: lease.shard!.items.map((it) => ({
    kind: "digests.image_sha256",
    name: "bench",
    uri: null,
    artifact_format: "testrunner.image_digests.v1",
    schema_version: 1,
    media_type: "application/octet-stream",
    summary: { images: 1 },
    metadata: {},
    files: [{ path: it.path, blob_sha: blob, byte_size: image.byteLength }],
  })),
  result: null,
});
const completed = (lease: Lease) => {
  completions.set(lease.shard!.shard_id, (completions.get(lease.shard!.shard_id) ?? 0) + 1);
  done++;
};
await Promise.all(
  clients.map(async ({ client, id }) => {
    let next: Lease[] = [];
    while (done < expected && performance.now() - t0 < 600_000) {
      const asked = performance.now();
      const leases = next.length > 0 ? next : await againAfterProxy503(() => client.leaseBatch(id, 2, LEASES));
      if (leases.length === 0) continue;
      if (next.length > 0) leasedWithCompletion += leases.length;
      else leaseMs.push(performance.now() - asked);
      batches.push(leases.length);
      if (LEASES === 1) {
        const lease = leases[0]!;
        const following = await client.complete(lease.lease_id, outputsOf(lease), { leaseNext: BATCH });
        next = following ? [following] : [];
        completed(lease);
        continue;
      }
      const sent = performance.now();
      const answer = await client.completeLeases(
        id,
        leases.map((l) => ({ lease_id: l.lease_id, outputs: outputsOf(l) })),
        { leaseNext: BATCH, maxLeases: LEASES },
      );
      const refused = answer.problems.find((p) => p !== null);
      if (refused) throw new Error(`a completion was refused: ${refused.detail}`);
      completeMs.push(performance.now() - sent);
      leases.forEach(completed);
      next = answer.next;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
const workerdMs = cpu0.workerd === null ? null : workerdCpuMs()! - cpu0.workerd;
const runnersCpu = process.cpuUsage(cpu0.runners);

const statuses = await Promise.all(jobs.map((jid) => unwrap(api.GET("/v1/jobs/{jid}", { params: { path: { jid } } }))));
const twice = [...completions.values()].filter((n) => n > 1).length;
const results = {
  runners: RUNNERS,
  scope: SHARDS > 0 ? `operator, ${SHARDS} dispatcher shards` : "tenant (one dispatcher)",
  protocol: BATCH ? "x-lease_next (completion leases the next shard)" : "a lease request per shard",
  leases_per_request: LEASES,
  inputs_by_ref: LEASES > 1 && INPUTS_BY_REF,
  mean_leases_per_answer: batches.reduce((a, b) => a + b, 0) / Math.max(1, batches.length),
  leased_with_completion: leasedWithCompletion,
  jobs: JOBS,
  shards: expected,
  seconds,
  ops_per_second: expected / seconds,
  lease_ms_p50: quantile(leaseMs, 0.5),
  lease_ms_p99: quantile(leaseMs, 0.99),
  complete_ms_p50: quantile(completeMs, 0.5),
  complete_ms_p99: quantile(completeMs, 0.99),
  shards_completed: completions.size,
  shards_done_twice: twice,
  proxy_503_retries: proxyRetries,
  workerd_cpu_ms_per_op: workerdMs === null ? null : workerdMs / expected,
  runners_cpu_ms_per_op: (runnersCpu.user + runnersCpu.system) / 1000 / expected,
  jobs_succeeded: statuses.filter((s) => s.status === "succeeded" && s.tasks[0]?.["x-shards"]?.done === s.tasks[0]?.["x-shards"]?.total)
    .length,
  cores: availableParallelism(),
  load_average: loadavg()[0] ?? 0,
};
console.table([
  ["simulated runners", RUNNERS],
  ["runner scope", results.scope],
  ["protocol", results.protocol],
  ["leases asked per request (x-max_leases) / mean got", `${LEASES} / ${results.mean_leases_per_answer.toFixed(1)}`],
  ["further leases' inputs by reference (x-inputs_by_ref)", results.inputs_by_ref],
  ["shards (lease + complete each)", expected],
  ["shards leased by a completion (x-lease_next)", leasedWithCompletion],
  ["lease+complete operations / s", results.ops_per_second.toFixed(1)],
  ["lease request latency p50 / p99 (ms)", `${results.lease_ms_p50.toFixed(0)} / ${results.lease_ms_p99.toFixed(0)}`],
  [
    "batch completion latency p50 / p99 (ms, --leases > 1)",
    `${results.complete_ms_p50.toFixed(0)} / ${results.complete_ms_p99.toFixed(0)}`,
  ],
  [
    "CPU ms per operation: service (workerd) / simulated runners",
    `${results.workerd_cpu_ms_per_op?.toFixed(1) ?? "n/a"} / ${results.runners_cpu_ms_per_op.toFixed(1)}`,
  ],
  ["shards completed / done twice", `${results.shards_completed} / ${twice}`],
  ["requests sent again after a proxy 503", proxyRetries],
  ["jobs succeeded", `${results.jobs_succeeded} / ${JOBS}`],
  ["load average (1 min) at the end", results.load_average.toFixed(1)],
]);
mkdirSync(new URL("results/", import.meta.url), { recursive: true });
writeFileSync(new URL("results/dispatch.json", import.meta.url), JSON.stringify(results, null, 2));
await server.stop();
if (results.shards_completed !== expected || twice > 0 || results.jobs_succeeded !== JOBS) {
  console.error("a shard was lost or done twice");
  process.exit(1);
}

/** `--idle-runners N`: N runners long-polling with nothing to do; what they cost the service per second. */
async function idleBench(): Promise<never> {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const baselineSeconds = 10;
  const b0 = workerdCpuMs();
  await sleep(baselineSeconds * 1000);
  const b1 = workerdCpuMs();
  const tr = performance.now();
  const runners = await registerRunners(IDLE_RUNNERS, 50);
  const registerSeconds = (performance.now() - tr) / 1000;
  let stopped = false;
  let answered = 0;
  let leased = 0;
  const errors: string[] = [];
  // Each loop starts at a random point of one wait, as runners that came up at different times.
  const loops = runners.map(async ({ client, id }) => {
    await sleep(Math.random() * WAIT_SECONDS * 1000);
    while (!stopped) {
      try {
        leased += (await client.leaseBatch(id, WAIT_SECONDS, 1)).length;
        answered++;
      } catch (e) {
        if (!stopped) errors.push(String(e));
        if (!stopped) await sleep(1000);
      }
    }
  });
  await sleep(WAIT_SECONDS * 1000);
  const c0 = { workerd: workerdCpuMs(), runners: process.cpuUsage(), answered };
  const t0 = performance.now();
  await sleep(IDLE_SECONDS * 1000);
  const seconds = (performance.now() - t0) / 1000;
  const workerdMs = c0.workerd === null ? null : workerdCpuMs()! - c0.workerd;
  const runnersCpu = process.cpuUsage(c0.runners);
  const requests = answered - c0.answered;
  const per1000 = 1000 / IDLE_RUNNERS;
  const results = {
    idle_runners: IDLE_RUNNERS,
    scope: SHARDS > 0 ? `operator, ${SHARDS} dispatcher shards` : "tenant (one dispatcher)",
    wait_seconds: WAIT_SECONDS,
    register_seconds: registerSeconds,
    proxy_503_retries: proxyRetries,
    seconds,
    lease_requests_answered: requests,
    requests_per_second: requests / seconds,
    requests_per_second_per_1000_runners: (requests / seconds) * per1000,
    workerd_cpu_seconds_per_second: workerdMs === null ? null : workerdMs / 1000 / seconds,
    workerd_cpu_seconds_per_second_per_1000_runners: workerdMs === null ? null : (workerdMs / 1000 / seconds) * per1000,
    workerd_cpu_ms_per_request: workerdMs === null ? null : workerdMs / Math.max(1, requests),
    workerd_cpu_seconds_per_second_without_runners: b0 === null ? null : (b1! - b0) / 1000 / baselineSeconds,
    runners_cpu_seconds_per_second: (runnersCpu.user + runnersCpu.system) / 1e6 / seconds,
    leases_granted: leased,
    errors: errors.length,
    first_error: errors[0] ?? null,
    cores: availableParallelism(),
    load_average: loadavg()[0] ?? 0,
  };
  const f = (x: number | null, digits: number) => x?.toFixed(digits) ?? "n/a";
  console.table([
    ["idle runners (long poll, wait 25 s)", IDLE_RUNNERS],
    ["runner scope", results.scope],
    ["registration of all (s) / sent again after a proxy 503", `${registerSeconds.toFixed(1)} / ${proxyRetries}`],
    ["measured (s)", seconds.toFixed(1)],
    [
      "lease requests answered / s (per 1,000 runners)",
      `${results.requests_per_second.toFixed(1)} (${results.requests_per_second_per_1000_runners.toFixed(1)})`,
    ],
    [
      "workerd CPU s / s (per 1,000 runners)",
      `${f(results.workerd_cpu_seconds_per_second, 3)} (${f(results.workerd_cpu_seconds_per_second_per_1000_runners, 3)})`,
    ],
    ["workerd CPU s / s with no runner", f(results.workerd_cpu_seconds_per_second_without_runners, 3)],
    ["workerd CPU ms per lease request", f(results.workerd_cpu_ms_per_request, 2)],
    ["simulated runners' CPU s / s", results.runners_cpu_seconds_per_second.toFixed(3)],
    ["leases granted / failed lease requests", `${leased} / ${errors.length}`],
    ["load average (1 min) at the end", results.load_average.toFixed(1)],
  ]);
  if (errors[0]) console.error(`first error: ${errors[0]}`);
  mkdirSync(new URL("results/", import.meta.url), { recursive: true });
  writeFileSync(new URL("results/dispatch-idle.json", import.meta.url), JSON.stringify(results, null, 2));
  stopped = true;
  // The loops' last long polls are still open: stop the stack under them rather than wait up to 25 s.
  await Promise.race([server.stop().then(() => Promise.all(loops)), sleep(10_000)]);
  // An idle runner must get nothing; failed polls are shown, not fatal (the proxy's 503s above).
  process.exit(leased > 0 ? 1 : 0);
}

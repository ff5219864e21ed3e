/**
 * `npm run bench -- events [--events N] [--rounds N]`: the job event path on the local stack
 * (wrangler's workerd, from wrangler.toml): events appended per second to one job's log (one per
 * request, and batched), post-to-receipt latency to 1, 10 and 100 concurrent SSE clients, and
 * lease/complete round trips per second. Prints a table; writes bench/results/events.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { EdgeSfmClient, type Lease, type ProgressEvent, unwrap } from "../client/index";
import { DigestRunner } from "../scripts/digest-runner";
import { startLocalStack } from "../scripts/local-stack";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const EVENTS_PER_CLIENT_RUN = arg("events", 40);
const ROUNDS = arg("rounds", 40);
const APPEND_SECONDS = 3;

const server = await startLocalStack({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "600" });
const base = server.base;
const client = new EdgeSfmClient({ baseUrl: base });
const { api } = client;

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

// One dataset with one image; each job differs by its seed, so none is a cache hit.
const project = await unwrap(api.POST("/v1/projects", { body: { name: "bench" } }));
const dataset = await unwrap(
  api.POST("/v1/projects/{pid}/datasets", {
    params: { path: { pid: project.project_id } },
    body: { name: "bench", source: { kind: "upload", entries: [] } },
  }),
);
const did = { path: { did: dataset.dataset_id } };
const image = new TextEncoder().encode(`bench image ${Date.now()}`);
const { blob_sha } = await client.upload(image);
await unwrap(api.POST("/v1/datasets/{did}/images", { params: did, body: { name: "a.jpg", blob_sha } }));
let seed = 0;
const submit = async () =>
  (await unwrap(api.POST("/v1/datasets/{did}/features", { params: did, body: { spec: { seed: ++seed } } }))).job_id;

const runner = new DigestRunner({ base, name: "bench" });
await runner.register();
/** A fresh job, leased by the bench runner. */
async function leasedJob() {
  const jobId = await submit();
  const lease = (await runner.lease())!;
  if (lease.task.job_id !== jobId) throw new Error("unexpected lease");
  return { jobId, lease };
}
/** Completes the lease (a features task is sharded: the digest runner answers each item). */
const finish = (lease: Lease) => runner.work(lease);

// 1. Appends per second into one job's log.
const machine = { cpus: availableParallelism(), loadavg_1m: loadavg()[0]! };
const appended = { one_per_request: 0, batches_of_100: 0 };
{
  const { lease } = await leasedJob();
  const rate = async (batch: number) => {
    const events = Array.from({ length: batch }, (_, i) => ({ kind: "metric" as const, key: "bench.i", value: i }));
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < APPEND_SECONDS * 1000) {
      await runner.events(lease, events);
      n += batch;
    }
    return n / ((performance.now() - t0) / 1000);
  };
  appended.one_per_request = await rate(1);
  appended.batches_of_100 = await rate(100);
  await finish(lease);
}

// 2. Post-to-receipt latency to concurrent SSE clients.
const fanout: Record<string, { p50_ms: number; p99_ms: number; receipts: number }> = {};
for (const clients of [1, 10, 100]) {
  const { jobId, lease } = await leasedJob();
  const streams = Array.from({ length: clients }, () => client.events(jobId, { reconnect: false }));
  // Drain the backlog (job_status, phase_started) so every client is live.
  for (const s of streams) for (let i = 0; i < 3; i++) await s.next();
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const readers = streams.map(async (s) => {
    for await (const e of s as AsyncIterable<ProgressEvent>) {
      const k = e.kind === "log_line" ? Number(e.message) : NaN;
      if (Number.isFinite(k)) latencies.push(performance.now() - sentAt.get(k)!);
    }
  });
  for (let k = 0; k < EVENTS_PER_CLIENT_RUN; k++) {
    sentAt.set(k, performance.now());
    await runner.events(lease, [{ kind: "log_line", level: "DEBUG", message: String(k) }]);
  }
  await finish(lease); // the terminal event closes every stream
  await Promise.all(readers);
  fanout[String(clients)] = { p50_ms: quantile(latencies, 0.5), p99_ms: quantile(latencies, 0.99), receipts: latencies.length };
}

// 3. Lease/complete round trips per second (jobs submitted beforehand).
let roundTripsPerSecond: number;
{
  const pending = [];
  for (let i = 0; i < ROUNDS; i++) pending.push(await submit());
  const t0 = performance.now();
  for (let i = 0; i < ROUNDS; i++) await finish((await runner.lease())!);
  roundTripsPerSecond = ROUNDS / ((performance.now() - t0) / 1000);
}

await server.stop();

const results = {
  machine,
  append_events_per_second: appended,
  sse_post_to_receipt: fanout,
  lease_complete_round_trips_per_second: roundTripsPerSecond,
};
const rows = [
  ["events appended / s (1 per request)", appended.one_per_request.toFixed(0)],
  ["events appended / s (batches of 100)", appended.batches_of_100.toFixed(0)],
  ...Object.entries(fanout).map(([n, f]) => [
    `SSE post->receipt, ${n} clients: p50 / p99 ms`,
    `${f.p50_ms.toFixed(1)} / ${f.p99_ms.toFixed(1)} (${f.receipts} receipts)`,
  ]),
  ["lease+complete round trips / s", roundTripsPerSecond.toFixed(1)],
];
const width = Math.max(...rows.map((x) => x[0]!.length));
console.log(`events benchmark (wrangler local workerd; ${machine.cpus} cpus, load ${machine.loadavg_1m.toFixed(1)})`);
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
mkdirSync(new URL("results/", import.meta.url), { recursive: true });
writeFileSync(new URL("results/events.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);

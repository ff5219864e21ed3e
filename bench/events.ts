/**
 * `npm run bench -- events [--events N] [--rounds N]`: the job event path on the local stack
 * (wrangler's workerd, from wrangler.toml): events appended per second to one job's log (one per
 * request, and batched), post-to-receipt latency to 1, 10 and 100 concurrent SSE clients, and
 * lease/complete round trips per second. Prints a table; writes bench/results/events.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { startServer } from "../test/conformance/server";
import type { Lease } from "../protocol";
import { DigestRunner } from "../test/runner/digest-runner";
import { openSse } from "../test/runner/sse-client";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const EVENTS_PER_CLIENT_RUN = arg("events", 40);
const ROUNDS = arg("rounds", 40);
const APPEND_SECONDS = 3;

const server = await startServer({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "600" });
const base = server.base;

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const binary = body instanceof Uint8Array;
  const res = await fetch(`${base}${path}`, {
    method,
    headers: binary ? headers : { "Content-Type": "application/json", ...headers },
    body: binary ? (body as BodyInit) : body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

// One dataset with one image; each job differs by its seed, so none is a cache hit.
const project = await api("POST", "/v1/projects", { name: "bench" });
const dataset = await api("POST", `/v1/projects/${project.project_id}/datasets`, { name: "bench", source: { kind: "upload", entries: [] } });
const image = new TextEncoder().encode(`bench image ${Date.now()}`);
const up = await api("POST", "/v1/uploads", { expected_size: image.byteLength });
await api("PATCH", `/v1/uploads/${up.upload_id}`, image, { "Content-Range": `bytes 0-${image.byteLength - 1}/${image.byteLength}` });
const blob = await api("POST", `/v1/uploads/${up.upload_id}:finalize`);
await api("POST", `/v1/datasets/${dataset.dataset_id}/images`, { name: "a.jpg", blob_sha: blob.blob_sha });
let seed = 0;
const submit = async () => (await api("POST", `/v1/datasets/${dataset.dataset_id}/features`, { spec: { seed: ++seed } })).job_id as string;

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
  const streams = await Promise.all(Array.from({ length: clients }, () => openSse(fetch, `${base}/v1/jobs/${jobId}/events`)));
  // Drain the backlog (job_status, phase_started) so every client is live.
  for (const s of streams) for (let i = 0; i < 3; i++) await s.event();
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const readers = streams.map(async (s) => {
    for (let e = await s.event(); e; e = await s.event()) {
      const k = e.data.kind === "log_line" ? Number(e.data.message) : NaN;
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

const results = { machine, append_events_per_second: appended, sse_post_to_receipt: fanout, lease_complete_round_trips_per_second: roundTripsPerSecond };
const rows = [
  ["events appended / s (1 per request)", appended.one_per_request.toFixed(0)],
  ["events appended / s (batches of 100)", appended.batches_of_100.toFixed(0)],
  ...Object.entries(fanout).map(([n, f]) => [`SSE post->receipt, ${n} clients: p50 / p99 ms`, `${f.p50_ms.toFixed(1)} / ${f.p99_ms.toFixed(1)} (${f.receipts} receipts)`]),
  ["lease+complete round trips / s", roundTripsPerSecond.toFixed(1)],
];
const width = Math.max(...rows.map((x) => x[0]!.length));
console.log(`events benchmark (wrangler local workerd; ${machine.cpus} cpus, load ${machine.loadavg_1m.toFixed(1)})`);
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
mkdirSync(new URL("results/", import.meta.url), { recursive: true });
writeFileSync(new URL("results/events.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);

/**
 * `npm run bench -- load [--uploads N] [--chunk-kib N] [--sse N] [--ws N] [--events N] [--read-seconds N]
 * [--read-connections N] [--runners N] [--lease-jobs N]`: the service under many clients at once
 * (issue 22, Load), on the local stack (wrangler's workerd):
 * 1. `--uploads` (50) concurrent chunked uploads of real photos (the shared sets' images, each made
 *    distinct by a trailer after its JPEG end, so none is deduplicated), `--chunk-kib` (256) per PATCH:
 *    throughput, per-upload p50/p99, errors, and every blob's SHA-256 checked.
 * 2. `--sse` (100) SSE and `--ws` (50) WebSocket clients on one running job while its runner posts
 *    `--events` (200) events: post-to-receipt p50/p99 per transport, and every client's log checked
 *    (ids 1..N, none lost or duplicated).
 * 3. Read routes (project, dataset images, job, progress) under `--read-connections` (32) closed-loop
 *    clients for `--read-seconds` (10): requests/s, p50/p99, non-2xx.
 * 4. Leases: `--runners` (20) digest runners lease and complete `--lease-jobs` (60) one-shard jobs at once:
 *    lease-to-complete cycles/s, lease p50/p99, every job succeeded.
 * Prints a table; writes bench/results/load.json. The run itself is scripts/load.ts (test/e2e/load-smoke.test.ts runs it small).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { type LoadOptions, loadFailures, runLoad } from "../scripts/load";
import { startLocalStack } from "../scripts/local-stack";
import { arg } from "./_args";

const o: LoadOptions = {
  uploads: Number(arg("uploads", "50")),
  chunkKib: Number(arg("chunk-kib", "256")),
  sse: Number(arg("sse", "100")),
  ws: Number(arg("ws", "50")),
  events: Number(arg("events", "200")),
  readSeconds: Number(arg("read-seconds", "10")),
  readConnections: Number(arg("read-connections", "32")),
  runners: Number(arg("runners", "20")),
  leaseJobs: Number(arg("lease-jobs", "60")),
};
const server = await startLocalStack({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "600" });
const r = await runLoad(server.base, o).finally(() => server.stop());
const machine = { cpus: availableParallelism(), loadavg_1m: loadavg()[0]! };
const failures = loadFailures(r);
const rows = [
  [
    `${r.uploads.uploads} chunked uploads (${r.uploads.megabytes} MB, ${r.uploads.chunk_kib} KiB chunks)`,
    `${r.uploads.megabytes_per_second} MB/s, ${r.uploads.seconds} s; per upload p50/p99 ${r.uploads.per_upload.p50_ms}/${r.uploads.per_upload.p99_ms} ms; ${r.uploads.errors} errors`,
  ],
  [
    `${r.fanout.sse_clients} SSE clients, ${r.fanout.events_posted} events`,
    `post->receipt p50/p99 ${r.fanout.sse.p50_ms}/${r.fanout.sse.p99_ms} ms (${r.fanout.sse.receipts} receipts)`,
  ],
  [
    `${r.fanout.ws_clients} WebSocket clients`,
    `post->receipt p50/p99 ${r.fanout.ws.p50_ms}/${r.fanout.ws.p99_ms} ms (${r.fanout.ws.receipts} receipts)`,
  ],
  ["clients with a lost or duplicated event", String(r.fanout.clients_with_lost_or_duplicated_events)],
  [
    `read routes, ${r.reads.connections} connections`,
    `${r.reads.requests_per_second} req/s; p50/p99 ${r.reads.p50_ms}/${r.reads.p99_ms} ms; ${r.reads.non_2xx} non-2xx`,
  ],
  [
    `leases, ${r.leases.runners} runners, ${r.leases.jobs} jobs`,
    `${r.leases.cycles_per_second} lease->complete/s; lease p50/p99 ${r.leases.lease.p50_ms}/${r.leases.lease.p99_ms} ms; ${r.leases.succeeded} succeeded`,
  ],
];
const width = Math.max(...rows.map((x) => x[0]!.length));
console.log(`load benchmark (wrangler local workerd; ${machine.cpus} cpus, load ${machine.loadavg_1m.toFixed(1)})`);
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
if (failures.length > 0) console.log(`FAILED: ${failures.join("; ")}`);
mkdirSync(new URL("results/", import.meta.url), { recursive: true });
writeFileSync(new URL("results/load.json", import.meta.url), `${JSON.stringify({ machine, options: o, ...r, failures }, null, 2)}\n`);
process.exit(failures.length > 0 ? 1 : 0);

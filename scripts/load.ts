/**
 * @module The load run of issue 22 (Load), shared by `npm run bench -- load` (bench/load.ts, full
 * sizes) and test/e2e/load-smoke.test.ts (small): many clients of one local stack at once:
 * concurrent chunked uploads of real photos, SSE and WebSocket clients on one running job, read
 * routes under closed-loop load, many runners leasing at once; every promise checked (hashes, no
 * event lost or duplicated for any client, every job done), figures measured.
 */
import { readFileSync, readdirSync } from "node:fs";
import { WebSocket as NodeWebSocket } from "undici";
import { EdgeSfmClient, type JobEvent, sha256Hex, unwrap } from "../client/index";
import { DigestRunner } from "./digest-runner";

const datasets = new URL("../../shared/datasets/", import.meta.url).pathname;

export interface LoadOptions {
  uploads: number;
  chunkKib: number;
  sse: number;
  ws: number;
  events: number;
  readSeconds: number;
  readConnections: number;
  runners: number;
  leaseJobs: number;
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0;
const ms = (xs: number[]) => ({ p50_ms: +quantile(xs, 0.5).toFixed(1), p99_ms: +quantile(xs, 0.99).toFixed(1) });

/** `n` distinct photos of the shared sets: each set's JPEGs in turn, a trailer after the end marker making repeats distinct. */
function photos(n: number): Uint8Array[] {
  const files = ["sacre-coeur", "opensfm-lund", "sceaux-castle"].flatMap((set) =>
    readdirSync(`${datasets}/${set}/images`)
      .filter((f) => /\.jpe?g$/i.test(f))
      .map((f) => `${datasets}/${set}/images/${f}`),
  );
  return Array.from({ length: n }, (_, i) => {
    const jpeg = readFileSync(files[i % files.length]!);
    const trailer = new TextEncoder().encode(`load bench ${i} ${Date.now()} ${Math.random()}`);
    const out = new Uint8Array(jpeg.byteLength + trailer.byteLength);
    out.set(jpeg);
    out.set(trailer, jpeg.byteLength);
    return out;
  });
}

export async function runLoad(base: string, o: LoadOptions) {
  const client = new EdgeSfmClient({
    baseUrl: base,
    webSocket: (url, headers) => new NodeWebSocket(url, { headers }) as unknown as WebSocket,
  });
  const { api } = client;
  const project = await unwrap(api.POST("/v1/projects", { body: { name: "load bench" } }));
  const dataset = await unwrap(
    api.POST("/v1/projects/{pid}/datasets", {
      params: { path: { pid: project.project_id } },
      body: { name: "load", source: { kind: "upload", entries: [] } },
    }),
  );
  const did = { path: { did: dataset.dataset_id } };

  // 1. Concurrent chunked uploads.
  const bytes = photos(o.uploads);
  const uploadMs: number[] = [];
  let uploadErrors = 0;
  let wrongSha = 0;
  const t0 = performance.now();
  const shas = await Promise.all(
    bytes.map(async (b) => {
      const start = performance.now();
      try {
        const r = await client.upload(b, { chunkBytes: o.chunkKib * 1024, contentType: "image/jpeg" });
        uploadMs.push(performance.now() - start);
        if (r.blob_sha !== (await sha256Hex(b))) wrongSha++;
        return r.blob_sha;
      } catch {
        uploadErrors++;
        return null;
      }
    }),
  );
  const uploadSeconds = (performance.now() - t0) / 1000;
  const totalBytes = bytes.reduce((s, b) => s + b.byteLength, 0);
  const uploads = {
    uploads: o.uploads,
    chunk_kib: o.chunkKib,
    megabytes: +(totalBytes / 1e6).toFixed(1),
    seconds: +uploadSeconds.toFixed(2),
    megabytes_per_second: +(totalBytes / 1e6 / uploadSeconds).toFixed(2),
    per_upload: ms(uploadMs),
    errors: uploadErrors,
    wrong_sha: wrongSha,
  };
  const first = shas.find((s) => s !== null)!;
  await unwrap(api.POST("/v1/datasets/{did}/images", { params: did, body: { name: "photo.jpg", blob_sha: first } }));

  // 2. Many SSE and WebSocket clients on one running job.
  const runner = new DigestRunner({ base, name: "load" });
  await runner.register();
  const jobId = (await unwrap(api.POST("/v1/datasets/{did}/features", { params: did, body: { spec: { seed: 1 } } }))).job_id;
  const lease = (await runner.lease())!;
  const sentAt = new Map<number, number>();
  const receipts = { sse: [] as number[], ws: [] as number[] };
  const logs: { transport: "sse" | "ws"; ids: number[] }[] = [];
  const follow = async (transport: "sse" | "ws", stream: AsyncGenerator<JobEvent>) => {
    const log = { transport, ids: [] as number[] };
    logs.push(log);
    for await (const e of stream) {
      log.ids.push(e.event_id);
      const k = e.kind === "log_line" ? Number(e.message) : NaN;
      if (Number.isFinite(k) && sentAt.has(k)) receipts[transport].push(performance.now() - sentAt.get(k)!);
    }
  };
  const readers = [
    ...Array.from({ length: o.sse }, () => follow("sse", client.events(jobId, { reconnect: false }))),
    ...Array.from({ length: o.ws }, () => follow("ws", client.socket(jobId, { reconnect: false }))),
  ];
  // Every client has its backlog (job_status, phase_started) before the events start.
  for (let i = 0; i < 600 && logs.filter((l) => l.ids.length >= 2).length < o.sse + o.ws; i++) await new Promise((r) => setTimeout(r, 50));
  const connected = logs.filter((l) => l.ids.length >= 2).length;
  for (let k = 0; k < o.events; k++) {
    sentAt.set(k, performance.now());
    await runner.events(lease, [{ kind: "log_line", level: "DEBUG", message: String(k) }]);
  }
  await runner.work(lease); // completes the job: the terminal event closes every stream
  await Promise.all(readers);
  const total = Math.max(...logs.map((l) => l.ids.length));
  const broken = logs.filter((l) => l.ids.length !== total || l.ids.some((id, i) => id !== i + 1)).length;
  const fanout = {
    sse_clients: o.sse,
    ws_clients: o.ws,
    connected_before_events: connected,
    events_posted: o.events,
    events_per_log: total,
    sse: { ...ms(receipts.sse), receipts: receipts.sse.length },
    ws: { ...ms(receipts.ws), receipts: receipts.ws.length },
    clients_with_lost_or_duplicated_events: broken,
  };

  // 3. Read routes under closed-loop load.
  const paths = [
    `/v1/projects/${project.project_id}`,
    `/v1/datasets/${dataset.dataset_id}/images`,
    `/v1/jobs/${jobId}`,
    `/v1/jobs/${jobId}/progress`,
  ];
  const readMs: number[] = [];
  let non2xx = 0;
  let n = 0;
  const end = performance.now() + o.readSeconds * 1000;
  await Promise.all(
    Array.from({ length: o.readConnections }, async (_, c) => {
      for (let i = c; performance.now() < end; i++) {
        const start = performance.now();
        const res = await fetch(`${base}${paths[i % paths.length]}`);
        await res.arrayBuffer();
        readMs.push(performance.now() - start);
        if (res.status >= 300) non2xx++;
        n++;
      }
    }),
  );
  const reads = {
    connections: o.readConnections,
    seconds: o.readSeconds,
    requests: n,
    requests_per_second: +(n / o.readSeconds).toFixed(1),
    ...ms(readMs),
    non_2xx: non2xx,
  };

  // 4. Leases: many runners at once, one-shard jobs.
  const jobs: string[] = [];
  for (let i = 0; i < o.leaseJobs; i++) {
    jobs.push((await unwrap(api.POST("/v1/datasets/{did}/features", { params: did, body: { spec: { seed: 100 + i } } }))).job_id);
  }
  const leaseMs: number[] = [];
  const l0 = performance.now();
  await Promise.all(
    Array.from({ length: o.runners }, async (_, i) => {
      const r = new DigestRunner({ base, name: `load-${i}` });
      await r.register();
      for (;;) {
        const start = performance.now();
        const next = await r.lease();
        if (!next) return;
        leaseMs.push(performance.now() - start);
        await r.work(next);
      }
    }),
  );
  const leaseSeconds = (performance.now() - l0) / 1000;
  const statuses = await Promise.all(
    jobs.map(async (jid) => (await unwrap(api.GET("/v1/jobs/{jid}", { params: { path: { jid } } }))).status),
  );
  const leases = {
    runners: o.runners,
    jobs: o.leaseJobs,
    cycles_per_second: +(leaseMs.length / leaseSeconds).toFixed(1),
    lease: ms(leaseMs),
    succeeded: statuses.filter((s) => s === "succeeded").length,
  };
  return { uploads, fanout, reads, leases };
}

/** Whether the run kept every promise: no error, no wrong hash, no lost or duplicated event, every job done. */
export function loadFailures(r: Awaited<ReturnType<typeof runLoad>>): string[] {
  const f: string[] = [];
  if (r.uploads.errors > 0 || r.uploads.wrong_sha > 0) f.push(`uploads: ${r.uploads.errors} errors, ${r.uploads.wrong_sha} wrong SHA-256`);
  if (r.fanout.clients_with_lost_or_duplicated_events > 0)
    f.push(`${r.fanout.clients_with_lost_or_duplicated_events} clients lost or duplicated events`);
  if (r.fanout.sse.receipts !== r.fanout.sse_clients * r.fanout.events_posted) f.push(`SSE receipts ${r.fanout.sse.receipts}`);
  if (r.fanout.ws.receipts !== r.fanout.ws_clients * r.fanout.events_posted) f.push(`WebSocket receipts ${r.fanout.ws.receipts}`);
  if (r.reads.non_2xx > 0) f.push(`${r.reads.non_2xx} reads not 2xx`);
  if (r.leases.succeeded !== r.leases.jobs) f.push(`${r.leases.jobs - r.leases.succeeded} lease jobs not succeeded`);
  return f;
}

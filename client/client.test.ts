// The client against the real service (the local stack in workerd): uploads that skip, resume and
// retry; problem+json errors; a job's events over SSE (resumed after a cut) and WebSocket; waiting
// for a job with its stage's progress and time left. Jobs are computed by the test's digest runner.
import { WebSocket as NodeWebSocket } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TERMINAL_STATUSES as PROTOCOL_TERMINAL } from "../protocol/events";
import { type Server, startServer } from "../test/conformance/server";
import { DigestRunner } from "../scripts/digest-runner";
import {
  EdgeSfmClient,
  type FetchLike,
  type JobEvent,
  type JobProgressUpdate,
  ProblemError,
  TERMINAL_STATUSES,
  sha256Hex,
  unwrap,
} from "./index.js";

let server: Server;
let client: EdgeSfmClient;
beforeAll(async () => {
  server = await startServer({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "30" });
  client = new EdgeSfmClient({
    baseUrl: server.base,
    webSocket: (url, headers) => new NodeWebSocket(url, { headers }) as unknown as WebSocket,
  });
});
afterAll(async () => {
  await server?.stop();
});

const bytes = (n: number, salt = Math.random()) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + Math.floor(salt * 251)) & 255);

/** A client whose fetch is `wrap`ped around the real one. */
const clientWith = (wrap: (real: FetchLike) => FetchLike) => new EdgeSfmClient({ baseUrl: server.base, fetch: wrap((r) => fetch(r)) });

describe("uploads (4.3)", () => {
  it("chunked; a second upload of the same bytes sends nothing; the blob is the bytes' SHA-256", async () => {
    const data = bytes(50_000);
    const phases = new Set<string>();
    const first = await client.upload(data, { chunkBytes: 16_384, onProgress: (p) => phases.add(p.phase) });
    expect(first).toEqual({ blob_sha: await sha256Hex(data), skipped: false, sent: 50_000 });
    expect([...phases]).toEqual(["hashing", "uploading", "finalizing"]);
    expect(await client.upload(data)).toEqual({ blob_sha: first.blob_sha, skipped: true, sent: 0 });
    // A file (Blob) is hashed in slices and sent the same way.
    expect((await client.upload(new Blob([data as BlobPart]))).blob_sha).toBe(first.blob_sha);
  });

  it("an upload interrupted after its first chunk resumes from received_bytes, in another session", async () => {
    const data = bytes(40_000);
    const sha = await sha256Hex(data);
    // The first session: created with the bytes' key, one chunk sent, then it died.
    const up = await unwrap(
      client.api.POST("/v1/uploads", {
        body: { expected_size: data.byteLength, expected_sha: sha },
        params: { header: { "idempotency-key": `sha256:${sha}:${data.byteLength}` } },
      }),
    );
    const res = await client.fetch(`/v1/uploads/${up.upload_id}`, {
      method: "PATCH",
      body: data.slice(0, 10_000),
      headers: { "Content-Range": `bytes 0-9999/${data.byteLength}` },
    });
    expect(res.status).toBe(200);
    const resumed = await client.upload(data, { chunkBytes: 16_384 });
    expect(resumed).toEqual({ blob_sha: sha, skipped: false, sent: 30_000 });
  });

  it("a chunk the server fails (503) is sent again after re-reading the upload", async () => {
    let failed = 0;
    const flaky = clientWith(
      (real) => async (r) => (r.method === "PATCH" && failed++ === 0 ? new Response("overloaded", { status: 503 }) : real(r)),
    );
    const data = bytes(20_000);
    expect((await flaky.upload(data, { chunkBytes: 8_192 })).sent).toBe(20_000);
    expect(failed).toBeGreaterThan(1);
  });
});

describe("errors (7)", () => {
  it("a non-2xx answer is a ProblemError with the problem+json body", async () => {
    const absent = await client.fetch("/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV").catch((e: unknown) => e);
    expect(absent).toBeInstanceOf(ProblemError);
    expect(absent).toMatchObject({ status: 404, slug: "not_found", problem: { instance: "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV" } });
    const invalid = await unwrap(client.api.POST("/v1/projects", { body: { name: 42 as never } })).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 422, slug: "validation" });
    expect((invalid as ProblemError).problem.errors?.map((e) => e.path)).toContain("name");
  });

  it("the client's terminal statuses are the protocol's", () => {
    expect([...TERMINAL_STATUSES].sort()).toEqual([...PROTOCOL_TERMINAL].sort());
  });
});

/**
 * A features job of `n` shards (8 images each: images without a decoded size weigh 1 MP, 8 MP to a
 * shard), and a digest runner to compute it (`run`, pausing `delayMs` per image).
 */
async function featuresJob(n: number) {
  const project = await unwrap(client.api.POST("/v1/projects", { body: { name: "client" } }));
  const entries = [];
  for (let i = 0; i < 8 * n; i++) entries.push({ name: `img${i}.jpg`, blob_sha: (await client.upload(bytes(2_000 + i))).blob_sha });
  const dataset = await unwrap(
    client.api.POST("/v1/projects/{pid}/datasets", {
      params: { path: { pid: project.project_id } },
      body: { name: "d", source: { kind: "upload", entries } },
    }),
  );
  const job = await unwrap(
    client.api.POST("/v1/datasets/{did}/features", {
      params: { path: { did: dataset.dataset_id } },
      body: { spec: { seed: Math.floor(Math.random() * 1e6) } },
    }),
  );
  const runner = new DigestRunner({ base: server.base, name: "client-test", stages: ["extract"] });
  await runner.register();
  return {
    jobId: job.job_id,
    async run(delayMs = 0) {
      for (let shard = 0; shard < n; shard++) {
        const lease = await runner.lease();
        if (!lease || lease.task.job_id !== job.job_id) throw new Error("the job's shard was not leased");
        await runner.work(lease, () => new Promise((r) => setTimeout(r, delayMs)));
      }
    },
  };
}

async function all(events: AsyncIterable<JobEvent>): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe("events (6)", () => {
  it("SSE and WebSocket deliver the same events, in order, and end after the terminal job_status", async () => {
    const job = await featuresJob(3);
    await job.run();
    const sse = await all(client.events(job.jobId));
    expect(sse.map((e) => e.event_id)).toEqual(sse.map((_, i) => i + 1));
    expect(sse.at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
    expect(sse.filter((e) => e.kind === "phase_progress").length).toBe(3);
    expect(await all(client.socket(job.jobId))).toEqual(sse);
    // Resumed after an event id: only what follows.
    expect((await all(client.socket(job.jobId, { after: 2 }))).map((e) => e.event_id)).toEqual(sse.slice(2).map((e) => e.event_id));
    // Resumed after the last event of the ended job: nothing more, and the iteration ends.
    const last = sse.at(-1)!.event_id;
    expect(await all(client.events(job.jobId, { after: last }))).toEqual([]);
    expect(await all(client.socket(job.jobId, { after: last }))).toEqual([]);
  });

  it("a stream cut mid-job is resumed with Last-Event-ID: no event lost or repeated", async () => {
    const job = await featuresJob(4);
    const resumedFrom: (string | null)[] = [];
    // Every SSE connection is cut after its first chunk of events.
    const cutting = clientWith((real) => async (r) => {
      const res = await real(r);
      if (!r.url.endsWith("/events")) return res;
      resumedFrom.push(r.headers.get("Last-Event-ID"));
      const reader = res.body!.getReader();
      const first = await reader.read();
      void reader.cancel();
      return new Response(first.done ? null : first.value, { status: res.status, headers: res.headers });
    });
    const states: string[] = [];
    const received = all(cutting.events(job.jobId, { onState: (s) => states.push(s) }));
    await job.run(50);
    const events = await received;
    expect(events.map((e) => e.event_id)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
    expect(resumedFrom.length).toBeGreaterThan(1);
    expect(resumedFrom[0]).toBeNull();
    // (A connection cut before a whole event arrived resumes from where the previous one stood.)
    expect(resumedFrom.some((id) => Number(id) > 0)).toBe(true);
    expect(states).toContain("reconnecting");
  });

  it("a stream closed before its first event while the job ended is resumed, not taken for the end", async () => {
    const job = await featuresJob(1);
    await job.run();
    let connections = 0;
    // The first connection closes before any event arrives (the job has ended meanwhile).
    const closing = clientWith((real) => async (r) => {
      const res = await real(r);
      if (!r.url.endsWith("/events") || connections++ > 0) return res;
      await res.body?.cancel();
      return new Response("retry: 2000\n\n", { status: res.status, headers: res.headers });
    });
    const events = await all(closing.events(job.jobId));
    expect(connections).toBe(2);
    expect(events.map((e) => e.event_id)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
  });

  it("a job resumed after it ended: its stream goes past the earlier terminal status to the end", async () => {
    const job = await featuresJob(1);
    const path = { params: { path: { jid: job.jobId } } };
    await unwrap(client.api.POST("/v1/jobs/{jid}:cancel", path));
    await unwrap(client.api.POST("/v1/jobs/{jid}:resume", path));
    await job.run();
    const statuses = (await all(client.events(job.jobId))).flatMap((e) => (e.kind === "job_status" ? [e.status] : []));
    expect(statuses).toContain("cancelled");
    expect(statuses.at(-1)).toBe("succeeded");
    expect((await all(client.socket(job.jobId))).at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
  });

  it("an abort ends the stream at once", async () => {
    const job = await featuresJob(1);
    const abort = new AbortController();
    const received = all(client.events(job.jobId, { signal: abort.signal }));
    setTimeout(() => abort.abort(new Error("enough")), 200);
    await expect(received).rejects.toThrow("enough");
    await unwrap(client.api.POST("/v1/jobs/{jid}:cancel", { params: { path: { jid: job.jobId } } }));
  });
});

describe("waiting for a job (4.8)", () => {
  it("reports the stage's progress, rate and time left, and answers the final job", async () => {
    const job = await featuresJob(4);
    const updates: JobProgressUpdate[] = [];
    const waiting = client.waitForJob(job.jobId, { onProgress: (p) => updates.push(structuredClone(p)) });
    await job.run(40);
    const done = await waiting;
    expect(done.status).toBe("succeeded");
    const stages = updates.map((u) => u.stage).filter((s) => s !== null);
    expect(stages.map((s) => s.current)).toEqual([1, 2, 3, 4]);
    expect(stages[0]).toMatchObject({ kind: "extract", phase: "feature_extraction", total: 4, rate: null, eta_seconds: null });
    // Measured from the events' timestamps (shards report no rate): about 3 shards a second.
    const third = stages[2]!;
    expect(third.rate).toBeGreaterThan(0.5);
    expect(third.rate).toBeLessThan(10);
    expect(third.eta_seconds).toBeCloseTo(1 / third.rate!, 6);
    expect(stages[3]!.eta_seconds).toBe(0);
    expect(updates.at(-1)).toMatchObject({ status: "succeeded", fraction: 1, completed_tasks: 1 });
  });
});

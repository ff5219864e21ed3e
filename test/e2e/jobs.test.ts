/**
 * Jobs end to end over real HTTP (issue 3, "done when"): the local stack from wrangler.toml, a
 * runner as a separate process (scripts/digest-runner.ts), live SSE, a cache hit on the
 * second identical submission, and a runner killed mid-task whose task another runner reclaims
 * and finishes, with no lost or duplicated events.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Server, startServer } from "../conformance/server";
import { type Http, httpClient, uploadBytes } from "../support/http";

let server: Server;
/** Raw requests of the server (statuses and bodies under test). */
let api: Http;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  // Test capabilities: the compute stages do not run in a real runner yet (worker/services/capabilities.ts).
  server = await startServer({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "2" });
  api = httpClient(server.base);
});

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await server?.stop();
});

async function datasetWith(images: number) {
  const p = await api("POST", "/v1/projects", { name: "e2e" });
  const d = await api("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "photos", source: { kind: "upload", entries: [] } });
  for (let i = 0; i < images; i++) {
    const bytes = new TextEncoder().encode(`e2e image ${i} ${Date.now()} ${Math.random()}`);
    expect(
      (await api("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: `img${i}.jpg`, blob_sha: await uploadBytes(api, bytes) }))
        .status,
    ).toBe(201);
  }
  return d.json.dataset_id as string;
}

/** A runner process; `lines` yields its stdout lines (registered, leased, progress, completed). */
function startRunner(name: string, imageDelayMs: number) {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/digest-runner.ts", server.base, name], {
    env: { ...process.env, RUNNER_IMAGE_DELAY_MS: String(imageDelayMs) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.add(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return {
    child,
    async waitFor(prefix: string): Promise<string> {
      for (;;) {
        const { value, done } = await lines.next();
        if (done) throw new Error(`runner ${name} exited before '${prefix}'`);
        if (value.startsWith(prefix)) return value;
      }
    },
    kill() {
      child.kill("SIGKILL");
      children.delete(child);
    },
  };
}

/** All events of a job as a live SSE client sees them, until the stream closes after the terminal event. */
async function collect(jobId: string, lastEventId = 0) {
  const events: { id: number; data: any }[] = [];
  for await (const e of api.client.events(jobId, { after: lastEventId, reconnect: false })) events.push({ id: e.event_id, data: e });
  return events;
}

describe("jobs over HTTP with runner processes", () => {
  it("a stage job is leased by a runner process, streams live events, completes with outputs; resubmitting is a cache hit", async () => {
    const did = await datasetWith(4);
    const runner = startRunner("e2e-1", 0);
    await runner.waitFor("registered");
    const accepted = await api("POST", `/v1/datasets/${did}/features`, { spec: { max_num_features: 2048 } });
    expect(accepted.status).toBe(202);
    const jid = accepted.json.job_id;
    const events = await collect(jid);
    runner.kill();
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    // Four small images are one extraction shard: the task's progress counts shards (the runner's per-image progress stays with it).
    expect(events.filter((e) => e.data.kind === "phase_progress").map((e) => [e.data.current, e.data.total])).toEqual([[1, 1]]);
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "succeeded" });

    const job = (await api("GET", `/v1/jobs/${jid}`)).json;
    expect(job.status).toBe("succeeded");
    expect(job.tasks[0].outputs_ref.artifacts[0].summary.images).toBe(4);

    const again = await api("POST", `/v1/datasets/${did}/features`, { spec: { max_num_features: 2048 } });
    const hit = (await api("GET", `/v1/jobs/${again.json.job_id}`)).json;
    expect(hit.status).toBe("succeeded");
    expect(hit.tasks[0]).toMatchObject({ cache_hit: true, cache_key: job.tasks[0].cache_key, outputs_ref: job.tasks[0].outputs_ref });
  });

  it("a runner killed mid-task: its lease expires, another runner reclaims and finishes; no event lost or duplicated", async () => {
    const did = await datasetWith(3);
    const slow = startRunner("e2e-doomed", 60_000);
    await slow.waitFor("registered");
    const jid = (await api("POST", `/v1/datasets/${did}/features`, { spec: { seed: 42 } })).json.job_id;
    const live = collect(jid);
    await slow.waitFor("progress");
    slow.kill();

    const rescuer = startRunner("e2e-rescuer", 0);
    await rescuer.waitFor("completed");
    rescuer.kill();
    const events = await live;
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(await collect(jid)).toEqual(events); // the durable log holds exactly what was streamed live
    const kinds = events.map((e) => e.data.kind);
    expect(kinds.filter((k) => k === "phase_started")).toHaveLength(2);
    expect(events.find((e) => e.data.kind === "warning")!.data.message).toMatch(/expired; its shard \S+ is queued again/);
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "succeeded" });
    const job = (await api("GET", `/v1/jobs/${jid}`)).json;
    expect(job.tasks[0]).toMatchObject({ status: "succeeded", attempts: 2 });
  });
});

import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ProgressEvent } from "../../protocol";
import { DigestRunner } from "../../test/runner/digest-runner";
import { BASE, call, expectProblem, uploadBlob } from "../test/helpers";

const selfFetch = (input: string, init?: RequestInit) => SELF.fetch(input, init);
const newRunner = (name = "r", extra: { authorization?: string; stages?: string[] } = {}) =>
  new DigestRunner({ base: BASE, fetch: selfFetch, name, ...extra });

let salt = 0;
/** A project with a dataset of `n` distinct small images (fresh bytes per call, so nothing is cached by accident). */
async function dataset(n = 3, project: Record<string, unknown> = {}) {
  const p = await call("POST", "/v1/projects", { name: "p", ...project });
  const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d" });
  salt++;
  for (let i = 0; i < n; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`image ${i} of set ${salt} ${Math.random()}`));
    const r = await call("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: `img${i}.jpg`, blob_sha: sha });
    expect(r.status).toBe(201);
  }
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string };
}

const features = (did: string, spec: Record<string, unknown> = {}) => call("POST", `/v1/datasets/${did}/features`, { spec });
const pipeline = (pid: string, did: string, extra: Record<string, unknown> = {}) =>
  call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" }, ...extra });
const job = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json;
const progress = async (jid: string) => (await call("GET", `/v1/jobs/${jid}/progress`)).json;
const jobStub = (jid: string) => env.JOB.get(env.JOB.idFromName(`default/${jid}`));

/** Every event of the job, read through the SSE route from the cursor (the job must be terminal, so the stream ends). */
async function sse(jid: string, lastEventId?: number) {
  const res = await SELF.fetch(`${BASE}/v1/jobs/${jid}/events`, { headers: lastEventId !== undefined ? { "Last-Event-ID": String(lastEventId) } : {} });
  expect(res.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
  return parseSse(await res.text());
}

function parseSse(text: string) {
  return text
    .split("\n\n")
    .filter((f) => f.includes("data: "))
    .map((f) => {
      const id = Number(/^id: (\d+)$/m.exec(f)![1]);
      const data = JSON.parse(/^data: (.*)$/m.exec(f)![1]!);
      return { id, data };
    });
}

/** Lets a lease lapse as if its TTL had passed, then runs the job's alarm. */
async function expireLeases(jid: string) {
  const stub = jobStub(jid);
  await runInDurableObject(stub, (_o, state) => {
    state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE state = 'active'");
  });
  await runInDurableObjectAlarmNow(stub);
}

async function runInDurableObjectAlarmNow(stub: DurableObjectStub) {
  await runInDurableObject(stub, async (_o, state) => state.storage.setAlarm(Date.now()));
  expect(await runDurableObjectAlarm(stub)).toBe(true);
}

describe("stage jobs (4.6) and the runner protocol", () => {
  it("a features job is accepted, leased, progresses, completes with outputs; the same submission again is a cache hit", async () => {
    const { did } = await dataset(3);
    const r = await features(did, { max_num_features: 1000 });
    expect(r.status).toBe(202);
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
    expect(r.json).toMatchObject({ job_id: expect.any(String), task_ids: [expect.any(String)], recon_id: null });
    const jid = r.json.job_id;
    expect((await job(jid)).status).toBe("pending");

    const runner = newRunner();
    await runner.register();
    const lease = (await runner.lease())!;
    expect(lease.task).toMatchObject({ task_id: r.json.task_ids[0], job_id: jid, kind: "extract", phase: "feature_extraction", attempt: 1 });
    expect(lease.task.params).toMatchObject({ features: { type: "sift", max_num_features: 1000, version: 1 } });
    expect(lease.inputs.dataset.images).toHaveLength(3);
    const running = await job(jid);
    expect(running.status).toBe("running");
    expect(running.started_at).not.toBeNull();
    expect(await runner.work(lease)).toBe("completed");

    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.finished_at).not.toBeNull();
    expect(done.tasks[0]).toMatchObject({ status: "succeeded", cache_hit: false, attempts: 1 });
    expect(done.tasks[0].outputs_ref.artifacts[0]).toMatchObject({ kind: "digests.image_sha256", summary: { images: 3 } });

    const events = await sse(jid);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    for (const e of events) expect(ProgressEvent.safeParse(e.data).success).toBe(true);
    expect(events.map((e) => e.data.kind)).toEqual([
      "job_status",
      "job_status",
      "phase_started",
      "phase_progress",
      "phase_progress",
      "phase_progress",
      "phase_completed",
      "job_status",
    ]);
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "succeeded" });

    const again = await features(did, { max_num_features: 1000 });
    const hit = await job(again.json.job_id);
    expect(hit.status).toBe("succeeded");
    expect(hit.tasks[0]).toMatchObject({ status: "succeeded", cache_hit: true, attempts: 0, cache_key: done.tasks[0].cache_key });
    expect(hit.tasks[0].outputs_ref).toEqual(done.tasks[0].outputs_ref);
    expect(await runner.lease()).toBeNull();

    const other = await features(did, { max_num_features: 2000 });
    expect((await job(other.json.job_id)).tasks[0].cache_key).not.toBe(done.tasks[0].cache_key);
  });
});

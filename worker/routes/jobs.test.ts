import { SELF, createExecutionContext, env, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ProgressEvent, type TaskKind } from "../../protocol";
import { DigestRunner } from "../../scripts/digest-runner";
import { EdgeSfmClient, type JobEvent } from "../../client/index";
import worker from "../index";
import { BASE, call, deployment, expectProblem, uploadBlob, selfFetch, cancelLiveJobs } from "../test/helpers";
import { LUND_01 } from "../test/photos";

// Each test drives a whole job through many Durable Object calls; on a loaded machine that takes seconds.
vi.setConfig({ testTimeout: 30_000 });

const newRunner = (name = "r", extra: { authorization?: string; stages?: TaskKind[] } = {}) =>
  new DigestRunner({ base: BASE, fetch: selfFetch, name, ...extra });

let salt = 0;
/** A project with a dataset of `n` distinct small images (fresh bytes per call, so nothing is cached by accident). */
async function dataset(n = 3, project: Record<string, unknown> = {}) {
  const p = await call("POST", "/v1/projects", { name: "p", ...project });
  const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
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
/**
 * One SSE connection to a job's events, read with the client (no reconnect: what the server sends
 * on that connection): `next()` answers the next event, null once the server closed the stream;
 * `comments` collects the comments (keep-alives) seen so far.
 */
function openSse(jid: string, after = 0) {
  const comments: string[] = [];
  const events = new EdgeSfmClient({ baseUrl: BASE, fetch: selfFetch }).events(jid, {
    after,
    reconnect: false,
    onComment: (c) => comments.push(c),
  });
  return {
    comments,
    next: async (): Promise<JobEvent | null> => (await events.next()).value ?? null,
    close: () => void events.return(undefined),
  };
}

/** Every event of an ended job's stream (after `lastEventId`), until the server closes it. */
async function sse(jid: string, lastEventId?: number) {
  const stream = openSse(jid, lastEventId);
  const events: { id: number; data: any }[] = [];
  for (let e = await stream.next(); e; e = await stream.next()) events.push({ id: e.event_id, data: e });
  return events;
}

/** Waits until `condition()` holds (polling), or fails after `ms`. */
async function until(condition: () => boolean, ms = 10_000) {
  for (const end = Date.now() + ms; !condition(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() > end) throw new Error("timed out");
}

/** Lets the job's leases lapse as if their TTL had passed, then runs the alarm the lease set. */
async function expireLeases(jid: string) {
  const stub = jobStub(jid);
  await runInDurableObject(stub, (_o, state) => {
    state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE state = 'active'");
  });
  expect(await runDurableObjectAlarm(stub)).toBe(true);
}

afterEach(cancelLiveJobs);

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
    expect(lease.task).toMatchObject({
      task_id: r.json.task_ids[0],
      job_id: jid,
      kind: "extract",
      phase: "feature_extraction",
      attempt: 1,
    });
    expect(lease.task.params).toMatchObject({ features: { type: "sift", max_num_features: 1000, version: 1 } });
    expect(lease.inputs.dataset!.images).toHaveLength(3);
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
      // The task is one shard: the service counts shards done (the runner's per-image progress stays with it).
      "phase_progress",
      "phase_completed",
      "job_status",
    ]);
    expect(events.find((e) => e.data.kind === "phase_progress")!.data).toMatchObject({ current: 1, total: 1 });
    expect(done.tasks[0]["x-shards"]).toMatchObject({
      total: 1,
      done: 1,
      items: 3,
      items_cached: 0,
      by_runner: { [runner.runner!.runner_id]: 1 },
    });
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "succeeded" });

    const again = await features(did, { max_num_features: 1000 });
    const hit = await job(again.json.job_id);
    expect(hit.status).toBe("succeeded");
    expect(hit.started_at).toBe(hit.created_at);
    expect(hit.tasks[0]).toMatchObject({ status: "succeeded", cache_hit: true, attempts: 0, cache_key: done.tasks[0].cache_key });
    expect(hit.tasks[0].outputs_ref).toEqual(done.tasks[0].outputs_ref);
    expect(await runner.lease()).toBeNull();

    const other = await features(did, { max_num_features: 2000 });
    expect((await job(other.json.job_id)).tasks[0].cache_key).not.toBe(done.tasks[0].cache_key);
  });

  it("the leased dataset gives each image its EXIF 35 mm-equivalent focal length, read at finalize; null without one", async () => {
    const { did } = await dataset(1);
    const photo = await uploadBlob(LUND_01);
    expect((await call("POST", `/v1/datasets/${did}/images`, { name: "lund/01.jpg", blob_sha: photo })).status).toBe(201);
    await features(did);
    const runner = newRunner();
    await runner.register();
    const images = (await runner.lease())!.inputs.dataset!.images;
    expect(images.find((i) => i.name === "lund/01.jpg")).toMatchObject({ width: 1024, height: 768, focal_length_35mm: 35 });
    expect(images.find((i) => i.name === "img0.jpg")).toMatchObject({ width: null, focal_length_35mm: null });
  });
});

async function runningFeatures(images = 3) {
  const { pid, did } = await dataset(images);
  const r = await features(did);
  const runner = newRunner();
  await runner.register();
  const lease = (await runner.lease())!;
  return { pid, did, jid: r.json.job_id as string, runner, lease };
}

describe("pipelines (4.7)", () => {
  it("chain extract -> match -> verify -> map, each leasable only after the one before; a real reconstruction; a resubmission is all cache hits", async () => {
    const { pid, did } = await dataset(2);
    const r = await pipeline(pid, did, { features: { max_num_features: 500 }, ba: { mode: "standard" } });
    expect(r.status).toBe(202);
    expect(r.json.task_ids).toHaveLength(4);
    expect(r.json.recon_id).toEqual(expect.any(String));
    const detail = await job(r.json.job_id);
    expect(detail.tasks.map((t: any) => t.kind)).toEqual(["extract", "match", "verify", "map"]);
    expect(detail.tasks.map((t: any) => t.depends_on)).toEqual([[], [r.json.task_ids[0]], [r.json.task_ids[1]], [r.json.task_ids[2]]]);
    expect(detail.recon_id).toBe(r.json.recon_id);
    expect(detail._links).toMatchObject({
      self: { href: `/v1/jobs/${r.json.job_id}` },
      events: expect.any(Object),
      ws: expect.any(Object),
    });

    const [a, b] = [newRunner("a"), newRunner("b")];
    await a.register();
    await b.register();
    const first = (await a.lease())!;
    expect(first.task.kind).toBe("extract");
    expect(await b.lease()).toBeNull(); // match waits for extract
    await a.work(first);
    const second = (await b.lease())!;
    expect(second.task.kind).toBe("match");
    expect(second.inputs.upstream).toEqual([
      { task_id: first.task.task_id, kind: "extract", outputs_ref: expect.objectContaining({ artifacts: expect.any(Array) }) },
    ]);
    // An upstream output is readable through the lease: one file per image (extraction's items).
    const files = second.inputs.upstream[0]!.outputs_ref.artifacts[0]!.files;
    expect(files).toHaveLength(2);
    expect(JSON.parse(new TextDecoder().decode(await b.client.readBlob(second.lease_id, files[0]!.blob_sha))).images).toHaveLength(1);
    await b.work(second);
    expect(await b.drain()).toBe(2);
    const map = (await job(r.json.job_id)).tasks[3];
    expect(map).toMatchObject({ status: "succeeded" });
    expect((await job(r.json.job_id)).status).toBe("succeeded");
    const p = await progress(r.json.job_id);
    expect(p).toMatchObject({
      progress: 1,
      total_tasks: 4,
      completed_tasks: 4,
      current_task_id: null,
      current_phase: "incremental_register",
    });

    const again = await pipeline(pid, did, { features: { max_num_features: 500 }, ba: { mode: "standard" } });
    expect(again.json.recon_id).toBe(r.json.recon_id);
    const hit = await job(again.json.job_id);
    expect(hit.status).toBe("succeeded");
    expect(hit.tasks.every((t: any) => t.cache_hit)).toBe(true);
    const events = await sse(again.json.job_id);
    expect(events.map((e) => e.data.kind).filter((k) => k === "phase_completed")).toHaveLength(4);
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "succeeded" });
  });

  it("422 when spec.kind differs from the recipe; 404 for a dataset of another project", async () => {
    const { pid, did } = await dataset(1);
    const r = await call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "global" } });
    expectProblem(r, 422, "validation");
    expect(r.json.errors[0].path).toBe("spec.kind");
    const other = await dataset(1);
    expectProblem(await pipeline(other.pid, did), 404, "not_found");
  });

  it("501 capability_unavailable names the canonical capability", async () => {
    const { pid, did } = await dataset(1);
    const cases: [Promise<any>, string][] = [
      [pipeline(pid, did, { features: { type: "superpoint" } }), "features.extract.superpoint"],
      [pipeline(pid, did, { matcher: { type: "lightglue" } }), "matchers.lightglue"],
      [pipeline(pid, did, { ba: { mode: "featuremetric" } }), "ba.featuremetric"],
      [features(did, { type: "disk" }), "features.extract.disk"],
      [call("POST", `/v1/datasets/${did}/matches`, { matcher: { type: "loftr" } }), "matchers.loftr"],
    ];
    for (const [p, capability] of cases) {
      const r = await p;
      expectProblem(r, 501, "capability_unavailable");
      expect(r.json.capability).toBe(capability);
    }
    expect((await call("GET", "/v1/jobs?page_size=500")).json.items.filter((j: any) => j.project_id === pid)).toHaveLength(0);
  });
});

describe("the task cache is the tenant's (3.2.1)", () => {
  it("a dataset with the same manifest in another project reuses the outputs; other camera settings do not", async () => {
    const bytes = new TextEncoder().encode(`shared photo ${Math.random()}`);
    const sha = await uploadBlob(bytes);
    const datasetWith = async (body: Record<string, unknown>) => {
      const p = await call("POST", "/v1/projects", { name: "cache" });
      const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, {
        name: "d",
        source: { kind: "upload", entries: [{ name: "a.jpg", blob_sha: sha }] },
        ...body,
      });
      return d.json.dataset_id as string;
    };
    const first = (await features(await datasetWith({}))).json.job_id;
    const runner = newRunner();
    await runner.register();
    await runner.work((await runner.lease())!);
    expect((await job(first)).status).toBe("succeeded");
    const same = await job((await features(await datasetWith({}))).json.job_id);
    expect(same.tasks[0]).toMatchObject({ cache_hit: true, status: "succeeded" });
    // Another camera model is another task, but features do not depend on it: each image's item is reused.
    const other = await job((await features(await datasetWith({ camera_model: "PINHOLE" }))).json.job_id);
    expect(other.tasks[0]).toMatchObject({ cache_hit: false, status: "succeeded", "x-shards": { total: 0, items: 1, items_cached: 1 } });
    expect(other.tasks[0].cache_key).not.toBe(same.tasks[0].cache_key);
  });
});

describe("stage submission rules (4.6, 7)", () => {
  it("a dataset with no registered images answers 422 and creates no job", async () => {
    const { did } = await dataset(0);
    const before = (await call("GET", "/v1/jobs")).json.total;
    for (const path of ["features", "matches", "verify"]) {
      const r = await call("POST", `/v1/datasets/${did}/${path}`, {});
      expectProblem(r, 422, "validation");
    }
    expect((await call("GET", "/v1/jobs")).json.total).toBe(before);
  });

  it("specs take their defaults and deprecated aliases; matches and verify are single-task jobs", async () => {
    const { did } = await dataset(1);
    const f = await features(did, { sift_max_num_features: 1234, sift_first_octave: -1, extractor_options: { peak_threshold: 0.01 } });
    expect(f.status).toBe(202);
    const runner = newRunner("aliases", { stages: ["extract"] });
    await runner.register();
    const lease = (await runner.lease())!;
    expect(lease.task.params.features).toEqual({
      version: 1,
      type: "sift",
      max_num_features: 1234,
      use_gpu: true,
      seed: 0,
      backend_options: { peak_threshold: 0.01, first_octave: -1 },
    });
    await runner.work(lease);
    // A single-stage verify job reads earlier matches: with none computed yet it is refused, and no job is made.
    const before = (await call("GET", "/v1/jobs")).json.total;
    const v = await call("POST", `/v1/datasets/${did}/verify`, { spec: { min_inlier_ratio: 0.5 } });
    expectProblem(v, 422, "validation");
    expect(v.json.errors.map((e: any) => e.path)).toEqual(["input_artifacts.matches"]);
    expect((await call("GET", "/v1/jobs")).json.total).toBe(before);
  });

  it("bad input on every body answers 422 with errors[]", async () => {
    const { pid, did } = await dataset(1);
    const bad: [string, string, unknown][] = [
      ["POST", `/v1/datasets/${did}/features`, { spec: { type: "orb" } }],
      ["POST", `/v1/datasets/${did}/features`, { spec: { provider: "-bad" } }],
      ["POST", `/v1/datasets/${did}/features`, { spec: { provider: "x".repeat(65) } }],
      ["POST", `/v1/datasets/${did}/features`, { spec: { version: 2 } }],
      ["POST", `/v1/datasets/${did}/features`, { spec: { max_num_features: 10, sift_max_num_features: 20 } }],
      ["POST", `/v1/datasets/${did}/features`, { spec: { type: "superpoint", sift_first_octave: 0 } }],
      ["POST", `/v1/datasets/${did}/matches`, { pairs: { strategy: "explicit" } }],
      ["POST", `/v1/datasets/${did}/matches`, { pairs: { pairs_blob_sha: "abc" } }],
      ["POST", `/v1/datasets/${did}/matches`, { matcher: { max_ratio: 2 } }],
      ["POST", `/v1/datasets/${did}/matches`, { input_artifacts: { features: { artifact_id: "nope", kind: "features.local.v1" } } }],
      ["POST", `/v1/datasets/${did}/verify`, { spec: { min_inlier_ratio: -1 } }],
      ["POST", `/v1/projects/${pid}/pipelines/incremental`, { spec: { kind: "incremental" } }],
      ["POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental", max_num_models: 0 } }],
      ["POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "nope" } }],
      ["POST", "/v1/runners", { name: "r", stages: [], runtime_versions: {} }],
      ["POST", "/v1/runners", { name: "r", stages: ["paint"], runtime_versions: {} }],
      ["GET", "/v1/jobs?status=done", undefined],
    ];
    for (const [method, path, body] of bad) {
      const r = await call(method, path, body);
      expectProblem(r, 422, "validation");
      expect(r.json.errors.length).toBeGreaterThan(0);
    }
    const { runner, lease, jid } = await runningFeatures(1);
    const leaseBad: [string, string, unknown][] = [
      ["POST", `/v1/leases/${lease.lease_id}/events`, { events: [] }],
      [
        "POST",
        `/v1/leases/${lease.lease_id}/events`,
        { events: [{ kind: "phase_progress", phase: "teleport", current: 1, total: 2, rate: null }] },
      ],
      ["POST", `/v1/leases/${lease.lease_id}/events`, { events: [{ kind: "error", error_class: "X", message: "m", detail: null }] }],
      ["POST", `/v1/leases/${lease.lease_id}/events`, { events: [{ kind: "phase_started", phase: "feature_extraction" }] }],
      ["PUT", `/v1/leases/${lease.lease_id}/checkpoint`, { blob_sha: "0".repeat(64), byte_size: 1 }],
      ["POST", `/v1/leases/${lease.lease_id}:fail`, { message: "no class" }],
      ["POST", `/v1/leases/${lease.lease_id}:release`, { reason: "x".repeat(2000) }],
      ["POST", "/v1/admin/runner-tokens", { name: "x".repeat(300) }],
    ];
    for (const [method, path, body] of leaseBad) expectProblem(await call(method, path, body), 422, "validation");
    const put = await SELF.fetch(`${BASE}/v1/leases/${lease.lease_id}/blobs/${"0".repeat(64)}`, { method: "PUT", body: "x" });
    expect(put.status).toBe(422);
    // Nothing of that harmed the lease.
    expect((await runner.heartbeat(lease)).directive).toBe("continue");
    expect((await job(jid)).tasks[0].status).toBe("running");
  });
});

describe("cancel and resume (3.1)", () => {
  it("cancelling a pending job cancels it and its tasks at once; resume makes it pending and leasable again", async () => {
    const { did } = await dataset(1);
    const jid = (await features(did)).json.job_id;
    const c = await call("POST", `/v1/jobs/${jid}:cancel`);
    expect(c.status).toBe(200);
    expect(c.json).toMatchObject({ status: "cancelled", cancel_requested: true, cancel_force: false });
    expect((await job(jid)).tasks[0].status).toBe("cancelled");
    expect((await call("POST", `/v1/jobs/${jid}:cancel?force=true`)).json.status).toBe("cancelled"); // already done: no change
    const runner = newRunner();
    await runner.register();
    expect(await runner.lease()).toBeNull();
    const r = await call("POST", `/v1/jobs/${jid}:resume`);
    expect(r.status).toBe(202);
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${jid}`);
    expect(r.json).toMatchObject({ status: "pending", cancel_requested: false, finished_at: null });
    const lease = (await runner.lease())!;
    expect(lease.task.job_id).toBe(jid);
    await runner.work(lease);
    expect((await job(jid)).status).toBe("succeeded");
    expectProblem(await call("POST", `/v1/jobs/${jid}:resume`), 409, "conflict");
    expectProblem(await call("POST", `/v1/jobs/${jid}:cancel`), 409, "conflict");
  });

  it("a cooperative cancel of a running job takes effect when the runner stops at its next boundary", async () => {
    const { jid, runner, lease } = await runningFeatures(3);
    const stream = openSse(jid);
    const c = await call("POST", `/v1/jobs/${jid}:cancel`);
    expect(c.json).toMatchObject({ status: "running", cancel_requested: true });
    expect((await runner.heartbeat(lease)).directive).toBe("stop");
    expect(await runner.work(lease)).toBe("stopped"); // releases after its first image
    const done = await job(jid);
    expect(done).toMatchObject({ status: "cancelled", cancel_requested: true });
    expect(done.tasks[0].status).toBe("cancelled");
    const kinds: string[] = [];
    for (let e = await stream.next(); e; e = await stream.next()) kinds.push(e.kind);
    expect(kinds.at(-1)).toBe("job_status"); // the stream closed after the terminal event
  });

  it("force cancel: cancelled_dirty at once, the runner is told to tear down and its lease is gone", async () => {
    const { jid, runner, lease } = await runningFeatures(2);
    const c = await call("POST", `/v1/jobs/${jid}:cancel?force=true`);
    expect(c.json).toMatchObject({ status: "cancelled_dirty", cancel_requested: true, cancel_force: true });
    expect((await job(jid)).tasks[0].status).toBe("cancelled_dirty");
    expect((await runner.heartbeat(lease)).directive).toBe("teardown");
    expectProblem(
      await call("POST", `/v1/leases/${lease.lease_id}/events`, { events: [{ kind: "warning", message: "late" }] }),
      409,
      "conflict",
    );
    expectProblem(await call("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: { artifacts: [] } }), 409, "conflict");
    const r = await call("POST", `/v1/jobs/${jid}:resume`);
    expect(r.json.status).toBe("pending");
    expect((await job(jid)).tasks[0]).toMatchObject({ status: "pending", attempts: 1 });
  });

  it("a failing runner fails the job with error_class, error_message and an error event; resume retries the task", async () => {
    const { jid, runner, lease } = await runningFeatures(1);
    await runner.client.fail(lease.lease_id, { error_class: "OOMError", message: "out of memory", detail: { bytes: 1 } });
    const failed = await job(jid);
    expect(failed).toMatchObject({ status: "failed", error_class: "OOMError", error_message: "out of memory" });
    expect(failed.finished_at).not.toBeNull();
    const events = await sse(jid);
    expect(events.find((e) => e.data.kind === "error")!.data).toMatchObject({
      error_class: "OOMError",
      message: "out of memory",
      detail: { bytes: 1 },
    });
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "failed", error_class: "OOMError" });
    await call("POST", `/v1/jobs/${jid}:resume`);
    const retry = (await runner.lease())!;
    expect(retry.task).toMatchObject({ job_id: jid, attempt: 2 });
    await runner.work(retry);
    expect(await job(jid)).toMatchObject({ status: "succeeded", error_class: null, error_message: null });
  });

  it("max_runtime_seconds: a pipeline past its limit fails with TimeoutError, its lease revoked; resume starts the clock again", async () => {
    const { pid, did } = await dataset(2);
    const r = await pipeline(pid, did, { spec: { kind: "incremental", max_runtime_seconds: 60 } });
    expect(r.status).toBe(202);
    const jid = r.json.job_id as string;
    const runner = newRunner("timed");
    await runner.register();
    const lease = (await runner.lease())!;
    expect(lease.task.job_id).toBe(jid);
    const stub = jobStub(jid);
    // The alarm is set no later than the deadline: a minute after the job started.
    const started = Date.parse((await job(jid)).started_at);
    const alarm = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(started + 60_000);
    // Within the limit the alarm changes nothing.
    await runInDurableObject(stub, (o) => o.alarm());
    expect((await job(jid)).status).toBe("running");
    // Two minutes later (the start moved back), the alarm fails the job.
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE job SET started_at = ? WHERE id = 1", new Date(Date.now() - 120_000).toISOString());
    });
    await runInDurableObject(stub, (o) => o.alarm());
    const failed = await job(jid);
    expect(failed).toMatchObject({
      status: "failed",
      error_class: "TimeoutError",
      error_message: "the job ran longer than its max_runtime_seconds (60 s)",
    });
    expect(failed.tasks.map((t: { status: string }) => t.status)).toEqual(["failed", "cancelled", "cancelled", "cancelled"]);
    expect((await runner.heartbeat(lease)).directive).toBe("teardown");
    expectProblem(await call("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: { artifacts: [] } }), 409, "conflict");
    const events = await sse(jid);
    expect(events.find((e) => e.data.kind === "error")!.data).toMatchObject({
      error_class: "TimeoutError",
      detail: { max_runtime_seconds: 60 },
    });
    expect(events.at(-1)!.data).toMatchObject({ kind: "job_status", status: "failed", error_class: "TimeoutError" });
    // Resumed, the job runs again with a fresh minute.
    expect((await call("POST", `/v1/jobs/${jid}:resume`)).json.status).toBe("pending");
    const again = (await runner.lease())!;
    expect(again.task).toMatchObject({ job_id: jid, attempt: 2 });
    await runInDurableObject(stub, (o) => o.alarm());
    expect((await job(jid)).status).toBe("running");
  });

  it("a pipeline without max_runtime_seconds has no deadline", async () => {
    const { pid, did } = await dataset(1);
    const jid = (await pipeline(pid, did)).json.job_id as string;
    const runner = newRunner("untimed");
    await runner.register();
    expect((await runner.lease())!.task.job_id).toBe(jid);
    await runInDurableObject(jobStub(jid), (_o, state) => {
      state.storage.sql.exec("UPDATE job SET started_at = ? WHERE id = 1", new Date(0).toISOString());
    });
    await runInDurableObject(jobStub(jid), (o) => o.alarm());
    expect((await job(jid)).status).toBe("running");
  });

  it("a resumed map task is leased with its latest checkpoint", async () => {
    const { pid, did } = await dataset(1);
    const jid = (await pipeline(pid, did)).json.job_id;
    const runner = newRunner();
    await runner.register();
    for (let i = 0; i < 3; i++) await runner.work((await runner.lease())!);
    const map = (await runner.lease())!;
    expect(map.task.kind).toBe("map");
    expect(map.checkpoint).toBeNull();
    const bytes = new TextEncoder().encode("checkpoint: 12 images registered");
    const sha = await runner.upload(map, bytes);
    expect(
      (
        await call("PUT", `/v1/leases/${map.lease_id}/checkpoint`, {
          blob_sha: sha,
          byte_size: bytes.byteLength,
          summary: { num_reg_images: 12 },
        })
      ).status,
    ).toBe(200);
    await runner.client.fail(map.lease_id, { error_class: "DeviceLost", message: "GPU device lost", detail: null });
    await call("POST", `/v1/jobs/${jid}:resume`);
    const resumed = (await runner.lease())!;
    expect(resumed.task.task_id).toBe(map.task.task_id);
    expect(resumed.checkpoint).toEqual({ blob_sha: sha, byte_size: bytes.byteLength, summary: { num_reg_images: 12 } });
    expect(new TextDecoder().decode(await runner.client.readBlob(resumed.lease_id, sha))).toBe("checkpoint: 12 images registered");
  });
});

describe("leases (3.2.3)", () => {
  it("a runner that vanishes loses its lease when it expires; another runner reclaims and finishes the task", async () => {
    const { jid, runner: gone, lease } = await runningFeatures(2);
    await gone.events(lease, [{ kind: "phase_progress", phase: "feature_extraction", current: 1, total: 2, rate: null }]);
    await expireLeases(jid);
    const after = await job(jid);
    expect(after.status).toBe("running");
    expect(after.tasks[0]).toMatchObject({ status: "pending", attempts: 1 });
    expect((await gone.heartbeat(lease)).directive).toBe("teardown");
    expectProblem(await call("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: { artifacts: [] } }), 409, "conflict");

    const next = newRunner("next");
    await next.register();
    const retry = (await next.lease())!;
    expect(retry.task).toMatchObject({ job_id: jid, attempt: 2 });
    await next.work(retry);
    expect((await job(jid)).status).toBe("succeeded");
    const events = await sse(jid);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events.find((e) => e.data.kind === "warning")!.data.message).toMatch(/expired; its shard \S+ is queued again/);
    expect(events.filter((e) => e.data.kind === "phase_started")).toHaveLength(2);
    // The vanished runner may lease again once its lease is gone.
    expect(await gone.lease()).toBeNull();
  });

  it("heartbeats hold the lease; a runner holds one lease at a time", async () => {
    const { did, runner, lease } = await runningFeatures(1);
    await features(did, { seed: 7 });
    const state = await runner.heartbeat(lease);
    expect(state.directive).toBe("continue");
    expect(Date.parse(state.expires_at)).toBeGreaterThanOrEqual(Date.parse(lease.expires_at));
    expectProblem(await call("POST", `/v1/runners/${runner.runner!.runner_id}:lease`), 409, "conflict");
    await runner.work(lease);
    expect((await runner.lease())!.task.params.features).toMatchObject({ seed: 7 });
  });

  it("many runners racing for one task: exactly one wins", async () => {
    const { did } = await dataset(1);
    const jid = (await features(did)).json.job_id;
    const runners = Array.from({ length: 12 }, (_, i) => newRunner(`racer${i}`));
    await Promise.all(runners.map((r) => r.register()));
    const leases = (await Promise.all(runners.map((r) => r.lease()))).filter((l) => l !== null);
    expect(leases).toHaveLength(1);
    expect(leases[0]!.task.job_id).toBe(jid);
    expect((await job(jid)).tasks[0].attempts).toBe(1);
  });

  it("a malformed outputs_ref fails the task with a validation error and loses nothing else", async () => {
    const { jid, runner, lease } = await runningFeatures(1);
    await runner.events(lease, [{ kind: "metric", key: "images_per_second", value: 3.5 }]);
    const bad = await call("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: { artifacts: [{ kind: "Bad Kind" }] } });
    expectProblem(bad, 422, "validation");
    const failed = await job(jid);
    expect(failed).toMatchObject({ status: "failed", error_class: "ValidationError" });
    const kinds = (await sse(jid)).map((e) => e.data.kind);
    expect(kinds).toContain("metric");
    expect(kinds).toContain("error");
    // A well-formed result that cites a blob never uploaded is refused the same way.
    await call("POST", `/v1/jobs/${jid}:resume`);
    const again = (await runner.lease())!;
    const ghost = {
      kind: "digests.image_sha256",
      name: "x",
      artifact_format: "testrunner.image_digests.v1",
      schema_version: 1,
      media_type: "application/json",
      files: [{ path: "a", blob_sha: "a".repeat(64), byte_size: 1 }],
    };
    const r = await call("POST", `/v1/leases/${again.lease_id}:complete`, { outputs_ref: { artifacts: [ghost] } });
    expectProblem(r, 422, "validation");
    expect(r.json.errors[0].code).toBe("unknown_blob");
    // A core kind must keep its core format.
    await call("POST", `/v1/jobs/${jid}:resume`);
    const third = (await runner.lease())!;
    const core = { ...ghost, kind: "features.local.v1", artifact_format: "svc.matches.indexed.v1" };
    expectProblem(await call("POST", `/v1/leases/${third.lease_id}:complete`, { outputs_ref: { artifacts: [core] } }), 422, "validation");
  });

  it("a job's inputs stay readable when their dataset is deleted while it runs", async () => {
    const { pid, did, jid, runner, lease } = await runningFeatures(2);
    expect((await call("DELETE", `/v1/projects/${pid}/datasets/${did}`)).status).toBe(204);
    expect(await runner.work(lease)).toBe("completed");
    expect((await job(jid)).status).toBe("succeeded");
  });

  it("a lease reads only its task's inputs", async () => {
    const { runner, lease } = await runningFeatures(1);
    const foreign = await uploadBlob(new TextEncoder().encode("not an input of this task"));
    expectProblem(await call("GET", `/v1/leases/${lease.lease_id}/blobs/${foreign}`), 404, "not_found");
    expectProblem(await call("GET", `/v1/leases/${lease.lease_id.slice(0, -2)}xx/blobs/${foreign}`), 404, "not_found");
    expect((await runner.client.readBlob(lease.lease_id, lease.inputs.dataset!.images[0]!.content_sha)).byteLength).toBeGreaterThan(0);
  });

  it("a runner of another runtime version is never offered the task, and its registration says so", async () => {
    const { jid } = await runningFeatures(1).then(async (r) => {
      await r.runner.work(r.lease);
      return r;
    });
    expect((await job(jid)).status).toBe("succeeded");
    const { did } = await dataset(1);
    await features(did);
    const stale = await call("POST", "/v1/runners", { name: "old", stages: ["extract"], runtime_versions: { "engine-wasm": "old-build" } });
    expect(stale.status).toBe(201);
    expect(stale.json.service_rv_id).toMatch(/^[0-9a-f]{64}$/);
    expect(stale.json.rv_id).not.toBe(stale.json.service_rv_id);
    expect((await call("POST", `/v1/runners/${stale.json.runner_id}:lease`)).status).toBe(204);
    const current = await newRunner().register();
    expect(current.rv_id).toBe(current.service_rv_id);
  });
});

describe("progress (4.8) and the job index", () => {
  it("terminal tasks count 1, a running one current/total, pending 0; latest_event_id is the SSE cursor", async () => {
    const { pid, did } = await dataset(1);
    const jid = (await pipeline(pid, did)).json.job_id;
    expect(await progress(jid)).toMatchObject({ status: "pending", progress: 0, current_task_kind: "extract", current_phase: null });
    const runner = newRunner();
    await runner.register();
    await runner.work((await runner.lease())!);
    const match = (await runner.lease())!;
    await runner.events(match, [{ kind: "phase_progress", phase: "matching", current: 2, total: 4, rate: 10 }]);
    const p = await progress(jid);
    expect(p).toMatchObject({
      job_id: jid,
      recipe: "incremental",
      status: "running",
      progress: (1 + 0.5 + 0 + 0) / 4,
      total_tasks: 4,
      completed_tasks: 1,
      task_counts: { pending: 2, running: 1, succeeded: 1, failed: 0, cancelled: 0, cancelled_dirty: 0 },
      current_task_id: match.task.task_id,
      current_task_kind: "match",
      current_phase: "matching",
    });
    expect(p.tasks[1]).toMatchObject({
      kind: "match",
      status: "running",
      progress: 0.5,
      current: 2,
      total: 4,
      latest_event_kind: "phase_progress",
    });
    expect(p.tasks[1].elapsed_seconds).toBeGreaterThanOrEqual(0);
    expect(p.tasks[2]).toMatchObject({ progress: 0, elapsed_seconds: null, current: null });
    // A running task without a measurable total counts 0.
    await runner.events(match, [{ kind: "phase_progress", phase: "matching", current: 3, total: null, rate: null }]);
    expect((await progress(jid)).progress).toBe(0.25);
    // The backlog ends where the first keep-alive comes.
    const stream = openSse(jid);
    const ids: number[] = [];
    void (async () => {
      for (let e = await stream.next(); e; e = await stream.next()) ids.push(e.event_id);
    })();
    await until(() => stream.comments.includes("keep-alive"));
    expect((await progress(jid)).latest_event_id).toBe(ids.at(-1));
    stream.close();
  });

  it("GET /v1/jobs filters by status and paginates", async () => {
    const { did } = await dataset(1);
    const ids = [];
    for (let seed = 100; seed < 103; seed++) ids.push((await features(did, { seed })).json.job_id);
    await call("POST", `/v1/jobs/${ids[1]}:cancel`);
    const cancelled = (await call("GET", "/v1/jobs?status=cancelled&page_size=500")).json.items.map((j: any) => j.job_id);
    expect(cancelled).toContain(ids[1]);
    expect(cancelled).not.toContain(ids[0]);
    const page1 = await call("GET", "/v1/jobs?page_size=2");
    expect(page1.json.items).toHaveLength(2);
    expect(page1.json.items[0]).toMatchObject({ job_id: expect.any(String), tenant_id: "default", _links: { self: expect.any(Object) } });
    const page2 = await call("GET", `/v1/jobs?page_size=2&page_token=${page1.json.next_page_token}`);
    expect(page2.json.items[0].job_id > page1.json.items[1].job_id).toBe(true);
  });

  it("unknown jobs answer 404 everywhere", async () => {
    const id = "01J00000000000000000000000";
    for (const [m, p] of [
      ["GET", `/v1/jobs/${id}`],
      ["GET", `/v1/jobs/${id}/progress`],
      ["GET", `/v1/jobs/${id}/events`],
      ["POST", `/v1/jobs/${id}:cancel`],
      ["POST", `/v1/jobs/${id}:resume`],
    ] as const) {
      expectProblem(await call(m, p), 404, "not_found");
    }
  });

  it("DELETE of a project answers 409 while a job is active, then deletes its jobs too", async () => {
    const { pid, did } = await dataset(1);
    const jid = (await features(did)).json.job_id;
    expectProblem(await call("DELETE", `/v1/projects/${pid}`), 409, "conflict");
    await call("POST", `/v1/jobs/${jid}:cancel`);
    expect((await call("DELETE", `/v1/projects/${pid}`)).status).toBe(204);
    expectProblem(await call("GET", `/v1/jobs/${jid}`), 404, "not_found");
    expect((await call("GET", "/v1/jobs?page_size=500")).json.items.map((j: any) => j.job_id)).not.toContain(jid);
  });
});

describe("live events (6)", () => {
  it("SSE replays after Last-Event-ID, then forwards live with keep-alives, without gap or duplicate, and closes after the terminal event", async () => {
    const { jid, runner, lease } = await runningFeatures(2);
    await runner.events(lease, [{ kind: "log_line", level: "INFO", message: "hello" }]);
    const raw = await SELF.fetch(`${BASE}/v1/jobs/${jid}/events`);
    expect(raw.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    await raw.body?.cancel();
    const first = openSse(jid);
    const seen: number[] = [];
    for (let i = 0; i < 4; i++) seen.push((await first.next())!.event_id);
    expect(seen).toEqual([1, 2, 3, 4]);
    first.close();

    const resumed = openSse(jid, 2); // Last-Event-ID: 2
    expect((await resumed.next())!.event_id).toBe(3);
    expect((await resumed.next())!.event_id).toBe(4);
    const live = runner.events(lease, [{ kind: "warning", message: "live one" }]);
    const next = (await resumed.next())!;
    await live;
    expect(next).toMatchObject({
      event_id: 5,
      kind: "warning",
      message: "live one",
      job_id: jid,
      task_id: lease.task.task_id,
      seq: 5,
      schema_version: 1,
    });
    // Idle streams carry keep-alive comments (one second in the tests), and nothing else while idle.
    const pending = resumed.next();
    await until(() => resumed.comments.includes("keep-alive"));
    const work = runner.work(lease);
    const rest: number[] = [];
    for (let e = await pending; e; e = await resumed.next()) rest.push(e.event_id);
    await work;
    const all = (await sse(jid)).map((e) => e.id);
    expect([3, 4, 5, ...rest]).toEqual(all.slice(2));
    expect((await sse(jid, all.at(-1))).length).toBe(0);
  });

  it("WebSocket: the same stream, honouring Last-Event-ID as a query parameter, closed after the terminal event", async () => {
    const { jid, runner, lease } = await runningFeatures(1);
    const res = await SELF.fetch(`${BASE}/ws/v1/jobs/${jid}?last_event_id=1`, { headers: { Upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket!;
    const received: any[] = [];
    const closed = new Promise<number>((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
    ws.addEventListener("message", (m) => received.push(JSON.parse(m.data as string)));
    ws.accept();
    await runner.work(lease);
    expect(await closed).toBe(1000);
    const ids = received.map((e) => e.event_id);
    expect(ids[0]).toBe(2);
    expect(ids).toEqual(ids.map((_, i) => i + 2));
    expect(received.at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
    expectProblem(await call("GET", `/ws/v1/jobs/${jid}`), 426);
  });
});

describe("who may run what", () => {
  it("pool runners with a runner token lease only tasks of opted-in projects; a revoked token stops working", async () => {
    const token = await call("POST", "/v1/admin/runner-tokens", { name: "volunteer" });
    expect(token.status).toBe(201);
    expect(token.json.raw_token).toMatch(/^sfr_/);
    const pool = newRunner("volunteer", { authorization: `Bearer ${token.json.raw_token}` });
    const runner = await pool.register();
    expect(runner.pool).toBe(true);

    const closed = await dataset(1);
    const closedJob = (await features(closed.did)).json.job_id;
    expect(await pool.lease()).toBeNull();

    const open = await dataset(1, { "x-pool_opt_in": true });
    const openJob = (await features(open.did)).json.job_id;
    const lease = (await pool.lease())!;
    expect(lease.task.job_id).toBe(openJob);
    // A pool lease is usable only with the pool credential.
    expectProblem(await call("POST", `/v1/leases/${lease.lease_id}:heartbeat`), 404, "not_found");
    await pool.work(lease);
    // A volunteer's result waits for another principal's to confirm it (runners.md "Trust").
    expect((await job(openJob)).tasks[0]["x-shards"]).toMatchObject({ done: 0, awaiting_validation: 1 });
    const other = newRunner("another volunteer", {
      authorization: `Bearer ${(await call("POST", "/v1/admin/runner-tokens", { name: "another" })).json.raw_token}`,
    });
    await other.register();
    await other.work((await other.lease())!);
    expect((await job(openJob)).status).toBe("succeeded");
    expect((await job(closedJob)).status).toBe("pending");

    await call("DELETE", `/v1/admin/runner-tokens/${token.json.token_id}`);
    const r = await SELF.fetch(`${BASE}/v1/runners/${runner.runner_id}:lease`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token.json.raw_token}` },
    });
    expect(r.status).toBe(401);
    // The tenant's own runner still sees the closed project's task.
    const own = newRunner("own");
    await own.register();
    expect((await own.lease())!.task.job_id).toBe(closedJob);
  });
});

describe("tenant isolation (api_key mode, 5.3)", () => {
  const vars = { SVC_AUTH_MODE: "api_key" };
  const keyed = deployment(vars);
  /** `fetch` of the same Worker deployed in api_key mode, for runners. */
  const keyedFetch = async (req: Request) => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, { ...env, ...vars } as Env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };

  it("another tenant's jobs, leases and tasks are invisible: 404, never listed, never leased", async () => {
    const issue = async (tenant: string) => `Bearer ${(await keyed("POST", "/v1/admin/api-keys", { tenant_id: tenant })).json.raw_key}`;
    const [a, b] = [await issue("tenant-a"), await issue("tenant-b")];
    const p = await keyed("POST", "/v1/projects", { name: "a" }, { Authorization: a });
    const d = await keyed(
      "POST",
      `/v1/projects/${p.json.project_id}/datasets`,
      { name: "a", source: { kind: "upload", entries: [] } },
      { Authorization: a },
    );
    const sha = await uploadBlob(new TextEncoder().encode(`tenant a image ${Math.random()}`), { Authorization: a }, keyed);
    await keyed("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: "a.jpg", blob_sha: sha }, { Authorization: a });
    const jid = (await keyed("POST", `/v1/datasets/${d.json.dataset_id}/features`, {}, { Authorization: a })).json.job_id;

    expectProblem(await keyed("POST", `/v1/datasets/${d.json.dataset_id}/features`, {}, { Authorization: b }), 404, "not_found");
    for (const [m, path] of [
      ["GET", `/v1/jobs/${jid}`],
      ["GET", `/v1/jobs/${jid}/progress`],
      ["GET", `/v1/jobs/${jid}/events`],
      ["POST", `/v1/jobs/${jid}:cancel`],
    ] as const) {
      expectProblem(await keyed(m, path, undefined, { Authorization: b }), 404, "not_found");
    }
    expect((await keyed("GET", "/v1/jobs", undefined, { Authorization: b })).json.items).toEqual([]);
    expectProblem(await keyed("POST", "/v1/runners", { name: "x", stages: ["extract"], runtime_versions: {} }), 401, "auth");

    const runnerB = new DigestRunner({ base: BASE, fetch: keyedFetch, authorization: b });
    await runnerB.register();
    expect(await runnerB.lease()).toBeNull();
    const runnerA = new DigestRunner({ base: BASE, fetch: keyedFetch, authorization: a });
    await runnerA.register();
    const lease = (await runnerA.lease())!;
    expect(lease.task.job_id).toBe(jid);
    expectProblem(await keyed("POST", `/v1/leases/${lease.lease_id}:heartbeat`, undefined, { Authorization: b }), 404, "not_found");
    expectProblem(await keyed("GET", `/v1/leases/${lease.lease_id}/blobs/${sha}`, undefined, { Authorization: b }), 404, "not_found");
    expectProblem(await keyed("GET", `/v1/runners/${runnerA.runner!.runner_id}`, undefined, { Authorization: b }), 404, "not_found");
    await runnerA.work(lease);
    expect((await keyed("GET", `/v1/jobs/${jid}`, undefined, { Authorization: a })).json.status).toBe("succeeded");
  });
});

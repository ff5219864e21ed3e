import { SELF, createExecutionContext, env, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Lease, TaskKind } from "../../protocol";
import { unbatched } from "../../client/runner";
import { DigestRunner } from "../../scripts/digest-runner";
import worker from "../index";
import { DEFAULT_TENANT } from "../context";
import { groupCount, groupOf } from "../services/shards";
import { dispatcher } from "../storage/stubs";
import { BASE, call, deployment, jobEvents, selfFetch, uploadBlob, cancelLiveJobs } from "../test/helpers";

// Whole jobs through many Durable Object calls; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000 });

const newRunner = async (
  name: string,
  extra: { authorization?: string; stages?: TaskKind[]; fetch?: typeof selfFetch; leaseNext?: boolean } = {},
) => {
  const r = new DigestRunner({ base: BASE, fetch: selfFetch, name, ...extra });
  await r.register();
  return r;
};
const job = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json;

/** Images without a decodable size weigh 1 MP each: 8 to an extraction shard. */
async function dataset(n: number, project: Record<string, unknown> = {}) {
  const p = await call("POST", "/v1/projects", { name: "shards", ...project });
  const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
  const did = d.json.dataset_id as string;
  const salt = Math.random();
  for (let i = 0; i < n; i++) await addImage(did, `img${String(i).padStart(3, "0")}.jpg`, `image ${i} ${salt}`);
  return { pid: p.json.project_id as string, did };
}

async function addImage(did: string, name: string, content: string) {
  const sha = await uploadBlob(new TextEncoder().encode(content));
  expect((await call("POST", `/v1/datasets/${did}/images`, { name, blob_sha: sha })).status).toBe(201);
  return sha;
}

const events = (jid: string): Promise<any[]> => jobEvents(jid);

afterEach(cancelLiveJobs);

describe("sharded stage work", () => {
  it("one task's shards spread over 3 runners; progress counts shards; one artifact with every image's file, in dataset order", async () => {
    const { did } = await dataset(20);
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const runners = [await newRunner("a"), await newRunner("b"), await newRunner("c")];
    const leases: Lease[] = [];
    for (const r of runners) leases.push((await r.lease())!);
    expect(leases.map((l) => l.shard!.index)).toEqual([0, 1, 2]);
    expect(leases.map((l) => l.shard!.items.length)).toEqual([8, 8, 4]);
    expect(leases.every((l) => l.shard!.count === 3 && l.task.task_id === leases[0]!.task.task_id)).toBe(true);
    // Only three shards: a fourth runner gets nothing.
    expect(await (await newRunner("d")).lease()).toBeNull();
    for (const [i, r] of runners.entries()) expect(await r.work(leases[i]!)).toBe("completed");

    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    const task = done.tasks[0];
    expect(task["x-shards"]).toMatchObject({ total: 3, done: 3, items: 20, items_cached: 0 });
    expect(Object.values(task["x-shards"].by_runner)).toEqual([1, 1, 1]);
    const artifact = task.outputs_ref.artifacts[0];
    expect(artifact.files.map((f: { path: string }) => f.path)).toEqual(leases.flatMap((l) => l.shard!.items.map((it) => it.path)));
    expect(artifact.summary.images).toBe(20);
    const log = await events(jid);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(log.filter((e) => e.kind === "phase_started")).toHaveLength(1);
    expect(log.filter((e) => e.kind === "phase_progress").map((e) => [e.current, e.total])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    // The job's artifacts list one features artifact (downloads and exports see the stage's one artifact).
    const listed = (await call("GET", `/v1/jobs/${jid}/artifacts`)).json.items;
    expect(listed).toHaveLength(1);
    expect(listed[0].files).toHaveLength(20);
  });

  it("a runner killed mid-shard loses only its shard: the others stay done, it is leased again, the job succeeds with contiguous seqs", async () => {
    const { did } = await dataset(20);
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const [killed, b, c] = [await newRunner("killed"), await newRunner("b"), await newRunner("c")];
    const lost = (await killed.lease())!;
    await killed.events(lost, [{ kind: "log_line", level: "INFO", message: "working on it" }]);
    const [lb, lc] = [(await b.lease())!, (await c.lease())!];
    await b.work(lb);
    // The killed runner never reports again; its lease lapses.
    const stub = env.JOB.get(env.JOB.idFromName(`default/${jid}`));
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE lease_id = ?", lost.lease_id);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const mid = (await job(jid)).tasks[0];
    expect(mid).toMatchObject({ status: "running", "x-shards": { total: 3, done: 1 } });
    await c.work(lc);
    const retry = (await (await newRunner("d")).lease())!;
    expect(retry.shard).toMatchObject({ shard_id: lost.shard!.shard_id, index: 0 });
    expect(retry.task.attempt).toBe(4);
    await new DigestRunner({ base: BASE, fetch: selfFetch }).work(retry);
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({ total: 3, done: 3 });
    const log = await events(jid);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(log.find((e) => e.kind === "warning").message).toMatch(new RegExp(`expired; its shard ${lost.shard!.shard_id} is queued again`));
    // The lost lease is gone for good.
    expect((await killed.heartbeat(lost)).directive).toBe("teardown");
  });

  it("cache reuse by item after adding a photo: its extraction and only the pair blocks of its group are computed again", async () => {
    const { pid, did } = await dataset(12);
    const run = async () => {
      const r = await call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } });
      expect(r.status).toBe(202);
      const runner = await newRunner("all");
      const leased: { kind: string; items: number }[] = [];
      for (let lease = await runner.lease(); lease; lease = await runner.lease()) {
        leased.push({ kind: lease.task.kind, items: lease.shard?.items.length ?? 0 });
        await runner.work(lease);
      }
      const detail = await job(r.json.job_id);
      expect(detail.status).toBe("succeeded");
      return { detail, leased };
    };
    const first = await run();
    expect(first.detail.tasks.map((t: any) => t["x-shards"]?.items_cached ?? null)).toEqual([0, 0, 0, null]);

    const images = (await call("GET", `/v1/datasets/${did}/images?page_size=100`)).json.items as { content_sha: string }[];
    const shaOfNew = await addImage(did, "zz-new.jpg", `a new photo ${Math.random()}`);
    const groups = groupCount(13);
    expect(groups).toBe(groupCount(12));
    const sizes = Array.from({ length: groups }, (_, g) => images.filter((im) => groupOf(im.content_sha, groups) === g).length);
    const g = groupOf(shaOfNew, groups);
    // Blocks are pairs of groups (a group with itself when it has two images); those of the new photo's group change.
    const after = sizes.map((s, i) => s + (i === g ? 1 : 0));
    const blocks = after
      .flatMap((x, i) => after.map((y, j) => [i, j, x, y] as const))
      .filter(([i, j, x, y]) => j >= i && x > 0 && y > 0 && (i !== j || x > 1));
    const blocksOf = () => blocks.length;
    const touched = blocks.filter(([i, j]) => i === g || j === g).length;

    const second = await run();
    const [extract, match, verify] = second.detail.tasks;
    expect(extract["x-shards"]).toMatchObject({ items: 13, items_cached: 12, total: 1 });
    expect(match["x-shards"].items).toBe(blocksOf());
    expect(touched).toBeLessThan(blocksOf());
    expect(match["x-shards"].items - match["x-shards"].items_cached).toBe(touched);
    expect(verify["x-shards"].items - verify["x-shards"].items_cached).toBe(touched);
    expect(second.leased.filter((l) => l.kind === "extract")).toEqual([{ kind: "extract", items: 1 }]);
    expect(second.leased.filter((l) => l.kind === "match").reduce((s, l) => s + l.items, 0)).toBe(touched);
    // The assembled artifacts still cover the whole dataset.
    expect(extract.outputs_ref.artifacts[0].files).toHaveLength(13);
    expect(match.outputs_ref.artifacts[0].files).toHaveLength(blocksOf());
  }, 180_000);
});

describe('a completion that leases the next shard (x-lease_next, runners.md "Batching")', () => {
  it("one runner goes through a task's 3 shards in 4 requests of lease and completion; the job's log stays contiguous", async () => {
    const { did } = await dataset(20);
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const r = await newRunner("batched", { leaseNext: true });
    const shards: number[] = [];
    for (let lease = await r.lease(); lease; lease = r.next) {
      shards.push(lease.shard!.index);
      expect(await r.work(lease)).toBe("completed");
    }
    // The last completion found nothing left: null, and the runner asks as usual.
    expect(shards).toEqual([0, 1, 2]);
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({ total: 3, done: 3, by_runner: { [r.runner!.runner_id]: 3 } });
    const log = await events(jid);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
  }, 180_000);
});

/** Each lease's result as the digest runner computes it, for a batch completion. */
const outputsOf = async (r: DigestRunner, leases: Lease[]) =>
  Promise.all(leases.map(async (l) => ({ lease_id: l.lease_id, outputs: (await r.compute(l))! })));

describe('multi-shard leases (x-max_leases, :complete_leases, runners.md "Batching")', () => {
  it("a runner leases a task's 3 shards in one request, each its own lease; completes 2 in one request, then the third", async () => {
    const { did } = await dataset(20);
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const r = await newRunner("lanes");
    const rid = r.runner!.runner_id;
    const leases = await r.client.leaseBatch(rid, 0, 4);
    expect(leases.map((l) => l.shard!.index)).toEqual([0, 1, 2]);
    expect(new Set(leases.map((l) => l.lease_id)).size).toBe(3);
    expect(leases.every((l) => l.task.task_id === leases[0]!.task.task_id && !("x-more_leases" in l))).toBe(true);
    // Each is held on its own; the runner holds them, so another lease request is refused, and nothing is left for others.
    for (const l of leases) expect((await r.heartbeat(l)).directive).toBe("continue");
    await expect(r.lease()).rejects.toMatchObject({ status: 409 });
    expect(await (await newRunner("other")).lease()).toBeNull();

    const first = await r.client.completeLeases(rid, await outputsOf(r, leases.slice(0, 2)), { leaseNext: true, maxLeases: 4 });
    expect(first).toEqual({ problems: [null, null], next: [] });
    expect((await job(jid)).tasks[0]).toMatchObject({ status: "running", "x-shards": { total: 3, done: 2 } });
    // Completed leases are gone; the third is still held.
    expect((await r.heartbeat(leases[0]!)).directive).toBe("teardown");
    expect((await r.heartbeat(leases[2]!)).directive).toBe("continue");
    expect((await r.client.completeLeases(rid, await outputsOf(r, leases.slice(2)))).problems).toEqual([null]);

    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({ total: 3, done: 3, by_runner: { [rid]: 3 } });
    const log = await events(jid);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(log.filter((e) => e.kind === "phase_started")).toHaveLength(1);
    // One phase_progress per batch completion: the task's count once its shards of the batch are recorded.
    expect(log.filter((e) => e.kind === "phase_progress").map((e) => [e.current, e.total])).toEqual([
      [2, 3],
      [3, 3],
    ]);
    // The runner holds nothing now: a plain lease request answers (no work) instead of 409.
    expect(await r.lease()).toBeNull();
  }, 180_000);

  it("a batch completion naming an unknown runner answers 404 and completes nothing; the same batch then completes under its own runner", async () => {
    const { did } = await dataset(8);
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const r = await newRunner("lanes");
    const leases = await r.client.leaseBatch(r.runner!.runner_id, 0, 2);
    const outputs = await outputsOf(r, leases);
    await expect(r.client.completeLeases("01JZZZZZZZZZZZZZZZZZZZZZZZ", outputs)).rejects.toMatchObject({ status: 404 });
    expect((await job(jid)).tasks[0]["x-shards"]).toMatchObject({ done: 0 });
    expect((await r.heartbeat(leases[0]!)).directive).toBe("continue");
    expect((await r.client.completeLeases(r.runner!.runner_id, outputs)).problems).toEqual(leases.map(() => null));
  });

  it("one shard of a batch lost (its lease expired) is the only one reclaimed; completing it answers 409, another runner's lease 404, the others complete", async () => {
    const { did } = await dataset(20);
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const r = await newRunner("lanes");
    const rid = r.runner!.runner_id;
    const leases = await r.client.leaseBatch(rid, 0, 3);
    expect(leases).toHaveLength(3);
    const outputs = await outputsOf(r, leases);
    const lost = leases[1]!;
    const stub = env.JOB.get(env.JOB.idFromName(`default/${jid}`));
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE lease_id = ?", lost.lease_id);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await job(jid)).tasks[0]).toMatchObject({ status: "running", "x-shards": { total: 3, done: 0 } });
    // Another runner takes the reclaimed shard, and nothing else.
    const other = await newRunner("other");
    const [retry, ...none] = await other.client.leaseBatch(other.runner!.runner_id, 0, 3);
    expect(retry!.shard!.shard_id).toBe(lost.shard!.shard_id);
    expect(none).toEqual([]);

    const answer = await r.client.completeLeases(rid, [...outputs, { lease_id: retry!.lease_id, outputs: outputs[1]!.outputs }]);
    expect(answer.problems.map((p) => p?.status ?? null)).toEqual([null, 409, null, 404]);
    expect((await job(jid)).tasks[0]).toMatchObject({ status: "running", "x-shards": { total: 3, done: 2 } });
    expect(await other.work(retry!)).toBe("completed");
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"].by_runner).toEqual({ [rid]: 2, [other.runner!.runner_id]: 1 });
    const log = await events(jid);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    expect(log.filter((e) => e.kind === "warning").map((e) => e.message)).toEqual([
      expect.stringMatching(new RegExp(`expired; its shard ${lost.shard!.shard_id} is queued again`)),
    ]);
  }, 180_000);

  it("an invalid result in a batch fails its task (as :complete does) and is answered 422; a completion leases the next batch", async () => {
    const { did } = await dataset(24);
    const jobs = [
      (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id,
      (await call("POST", `/v1/datasets/${did}/features`, { spec: { seed: 2 } })).json.job_id,
    ];
    const r = await newRunner("lanes");
    const rid = r.runner!.runner_id;
    const leases = await r.client.leaseBatch(rid, 0, 2);
    expect(leases.map((l) => [l.task.job_id, l.shard!.index])).toEqual([
      [jobs[0], 0],
      [jobs[0], 1],
    ]);
    const outputs = await outputsOf(r, leases);
    // The second result leaves out an item: invalid; the job fails, the first result stands. The next leases come from the other job.
    const broken = { ...outputs[1]!, outputs: { ...outputs[1]!.outputs, artifacts: outputs[1]!.outputs.artifacts.slice(1) } };
    const answer = await r.client.completeLeases(rid, [outputs[0]!, broken], { leaseNext: true, maxLeases: 8 });
    expect(answer.problems.map((p) => p?.status ?? null)).toEqual([null, 422]);
    expect((await job(jobs[0])).status).toBe("failed");
    expect(answer.next.map((l) => [l.task.job_id, l.shard!.index])).toEqual([0, 1, 2].map((i) => [jobs[1], i]));
    const rest = await r.client.completeLeases(rid, await outputsOf(r, answer.next), { leaseNext: true, maxLeases: 8 });
    expect(rest).toEqual({ problems: [null, null, null], next: [] });
    expect((await job(jobs[1])).status).toBe("succeeded");
  }, 180_000);
});

describe('multi-shard leases with inputs by reference (x-inputs_by_ref, runners.md "Inputs by reference")', () => {
  /** Two jobs of 20 images (3 shards each) and a runner: an answer of 6 leases spans two tasks. */
  const twoJobs = async () => {
    const { did } = await dataset(20);
    const jobs: string[] = [];
    for (const seed of [1, 2]) jobs.push((await call("POST", `/v1/datasets/${did}/features`, { spec: { seed } })).json.job_id);
    const r = await newRunner("lanes");
    return { jobs, r, rid: r.runner!.runner_id };
  };
  const answerLeases = (first: any): any[] => [first, ...(first["x-more_leases"] ?? [])];

  it("asked for, a task's further leases name its first lease's inputs; each task's first carries them whole; the client fills them back", async () => {
    const { jobs, r, rid } = await twoJobs();
    const res = await call("POST", `/v1/runners/${rid}:lease?x-max_leases=6&x-inputs_by_ref=true`);
    expect(res.status).toBe(200);
    const leases = answerLeases(res.json);
    expect(leases.map((l) => [l.task.job_id, l.shard.index])).toEqual(jobs.flatMap((jid) => [0, 1, 2].map((i) => [jid, i])));
    // Whole: the first lease of each task, with the frozen dataset of 20 images.
    for (const k of [0, 3]) expect(leases[k].inputs.dataset.images).toHaveLength(20);
    // By reference: the others of its task, every other field of theirs as before.
    expect(leases.map((l) => l.inputs["x-inputs_of"] ?? null)).toEqual([
      null,
      leases[0].lease_id,
      leases[0].lease_id,
      null,
      leases[3].lease_id,
      leases[3].lease_id,
    ]);
    for (const l of [leases[1], leases[2], leases[4], leases[5]]) {
      expect(Object.keys(l.inputs)).toEqual(["x-inputs_of"]);
      expect(Object.keys(l)).toEqual(Object.keys(leases[0]).filter((k) => k !== "x-more_leases"));
      expect(l.task).toEqual(leases[l === leases[1] || l === leases[2] ? 0 : 3].task);
    }
    // Each reference names an earlier lease of the same answer, of the same task.
    const ids = leases.map((l) => l.lease_id);
    for (const [i, l] of leases.entries()) {
      const ref = l.inputs["x-inputs_of"];
      if (ref) expect(ids.slice(0, i)).toContain(ref);
    }
    // The leases work as whole ones: completed in one batch, which leases nothing more (none left).
    const filled = await Promise.all(
      leases.map(async (l) => {
        const whole = { ...l, inputs: l.inputs["x-inputs_of"] ? leases[ids.indexOf(l.inputs["x-inputs_of"])].inputs : l.inputs };
        return { lease_id: l.lease_id, outputs: (await r.compute(whole))! };
      }),
    );
    expect(await r.client.completeLeases(rid, filled, { leaseNext: true, maxLeases: 6 })).toEqual({
      problems: filled.map(() => null),
      next: [],
    });
    for (const jid of jobs) expect((await job(jid)).status).toBe("succeeded");
  }, 180_000);

  it("a runner that does not ask (x-inputs_by_ref absent or false, or one that predates it) gets every lease whole, as before", async () => {
    const { rid } = await twoJobs();
    for (const ask of ["", "&x-inputs_by_ref=false"]) {
      const res = await call("POST", `/v1/runners/${rid}:lease?x-max_leases=3${ask}`);
      expect(res.status).toBe(200);
      const leases = answerLeases(res.json);
      expect(leases).toHaveLength(3);
      for (const l of leases) {
        expect(l.inputs).toEqual(leases[0].inputs);
        expect(l.inputs.dataset.images).toHaveLength(20);
      }
      for (const l of leases) expect((await call("POST", `/v1/leases/${l.lease_id}:release`, { reason: "test" })).status).toBe(204);
    }
  }, 180_000);

  it("a batch completion asking with x-lease_next gets the next leases by reference; filled back, they equal whole ones", async () => {
    const { jobs, r, rid } = await twoJobs();
    // The runner's client asks by reference (the default): its first batch is job 0's three shards, filled back.
    const first = await r.client.leaseBatch(rid, 0, 3);
    expect(first.map((l) => [l.task.job_id, l.shard!.index])).toEqual([0, 1, 2].map((i) => [jobs[0], i]));
    expect(first.every((l) => l.inputs === first[0]!.inputs && l.inputs.dataset!.images.length === 20)).toBe(true);
    const outputs = await Promise.all(first.map(async (l) => ({ lease_id: l.lease_id, outputs_ref: (await r.compute(l))! })));
    const res = await call("POST", `/v1/runners/${rid}:complete_leases`, {
      completions: outputs,
      "x-lease_next": true,
      "x-max_leases": 3,
      "x-inputs_by_ref": true,
    });
    expect(res.status).toBe(200);
    expect(res.json.completions.map((c: any) => c.problem)).toEqual([null, null, null]);
    const next = answerLeases(res.json["x-lease"]);
    expect(next.map((l) => [l.task.job_id, l.inputs["x-inputs_of"] ?? null])).toEqual([
      [jobs[1], null],
      [jobs[1], next[0].lease_id],
      [jobs[1], next[0].lease_id],
    ]);
    // Filled back (client/runner.ts), each is whole: job 1 froze the same dataset as job 0, with no upstream or artifacts.
    const filled = unbatched(res.json["x-lease"]);
    expect(filled.map((l) => l.inputs)).toEqual(next.map(() => first[0]!.inputs));
    expect(filled.map((l) => l.shard!.shard_id)).toEqual(next.map((l) => l.shard.shard_id));
    expect((await r.client.completeLeases(rid, await outputsOf(r, filled))).problems).toEqual([null, null, null]);
    for (const jid of jobs) expect((await job(jid)).status).toBe("succeeded");
  }, 180_000);

  it("x-inputs_by_ref that is not a boolean is refused (422), on :lease and on :complete_leases, and leases nothing", async () => {
    const { rid } = await twoJobs();
    expect((await call("POST", `/v1/runners/${rid}:lease?x-max_leases=3&x-inputs_by_ref=yes`)).status).toBe(422);
    const bad = await call("POST", `/v1/runners/${rid}:complete_leases`, {
      completions: [{ lease_id: "a.b.c.d", outputs_ref: {} }],
      "x-lease_next": true,
      "x-inputs_by_ref": "yes",
    });
    expect(bad.status).toBe(422);
    expect(answerLeases((await call("POST", `/v1/runners/${rid}:lease?x-max_leases=6`)).json)).toHaveLength(6);
  }, 180_000);
});

describe("output blobs", () => {
  it("a JSON output blob larger than the JSON body limit is stored (blobs are bytes, capped at the chunk limit)", async () => {
    const { did } = await dataset(1);
    await call("POST", `/v1/datasets/${did}/features`, { spec: {} });
    const runner = await newRunner("big-json");
    const lease = (await runner.lease())!;
    const bytes = new TextEncoder().encode(JSON.stringify({ pairs: "x".repeat(1_200_000) }));
    const stored = await runner.client.writeBlob(lease.lease_id, bytes, "application/json");
    expect(stored.byte_size).toBe(bytes.byteLength);
    await runner.work(lease);
  });
});

describe("leases long-poll", () => {
  it("a waiting lease request is answered the moment work is offered, and 204 after its wait when none comes", async () => {
    const runner = await newRunner("waiting");
    const t0 = Date.now();
    const idle = await SELF.fetch(`${BASE}/v1/runners/${runner.runner!.runner_id}:lease?wait=1`, { method: "POST" });
    expect(idle.status).toBe(204);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);

    const { did } = await dataset(2);
    const waiting = SELF.fetch(`${BASE}/v1/runners/${runner.runner!.runner_id}:lease?wait=20`, { method: "POST" });
    await new Promise((r) => setTimeout(r, 300));
    const submitted = Date.now();
    const jid = (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id;
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(Date.now() - submitted).toBeLessThan(15_000);
    expect(((await res.json()) as { task: { job_id: string } }).task.job_id).toBe(jid);
  });
});

describe("who computes what", () => {
  // The test deployment's operator token (vitest.config.ts), in api_key mode.
  const vars = { SVC_AUTH_MODE: "api_key", SVC_OPERATOR_RUNNER_TOKEN: "sfo_the-deployments-own-runners-0123" };
  const keyedFetch = async (req: Request) => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, { ...env, ...vars } as Env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };

  it("api_key mode: the operator runner token leases any tenant's work; another sfo_ token is refused", async () => {
    const via = deployment(vars);
    const keyed = (method: string, path: string, body?: unknown, auth?: string) =>
      via(method, path, body, auth ? { Authorization: auth } : {});
    const a = `Bearer ${(await keyed("POST", "/v1/admin/api-keys", { tenant_id: "operator-test" })).json.raw_key}`;
    const p = await keyed("POST", "/v1/projects", { name: "a" }, a);
    const d = await keyed("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "a", source: { kind: "upload", entries: [] } }, a);
    const sha = await uploadBlob(new TextEncoder().encode(`operator image ${Math.random()}`), { Authorization: a }, via);
    await keyed("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: "a.jpg", blob_sha: sha }, a);
    const jid = (await keyed("POST", `/v1/datasets/${d.json.dataset_id}/features`, {}, a)).json.job_id;

    expect(
      (
        await keyed(
          "POST",
          "/v1/runners",
          { name: "x", stages: ["extract"], runtime_versions: {} },
          "Bearer sfo_not-the-operators-token-000",
        )
      ).status,
    ).toBe(401);
    const operator = await newRunner("operator", { authorization: `Bearer ${vars.SVC_OPERATOR_RUNNER_TOKEN}`, fetch: keyedFetch });
    expect(operator.runner!.pool).toBe(false);
    const lease = (await operator.lease())!;
    expect(lease.task.job_id).toBe(jid);
    await operator.work(lease);
    expect((await keyed("GET", `/v1/jobs/${jid}`, undefined, a)).json.status).toBe("succeeded");
  });

  it("a runner with a real GPU gets extraction and matching first, others the other kinds; a waiting GPU runner is woken first", async () => {
    // A runner announcing an adapter (a real GPU or a software one) and the stages both kinds need.
    const withAdapter = async (name: string, description: string, fallback: boolean) => {
      const r = new DigestRunner({ base: BASE, fetch: selfFetch, name });
      r.runner = await r.client.register({
        name,
        stages: ["extract", "verify"],
        runtime_versions: await r.client.serviceRuntimeVersions(),
        abilities: {
          webgpu: {
            adapter: { vendor: "", architecture: "", device: "", description, is_fallback_adapter: fallback },
            features: [],
            limits: {},
          },
          wasm: { simd: true, threads: false },
          memory_bytes: 1024 ** 3,
          hardware_concurrency: 1,
        },
      });
      return r;
    };
    // Job A's verify task (a kind a GPU does not speed up) becomes ready first: its extract and match done by a helper.
    const a = await dataset(2);
    const pipeline = (
      await call("POST", `/v1/projects/${a.pid}/pipelines/incremental`, { dataset_id: a.did, spec: { kind: "incremental" } })
    ).json.job_id;
    const helper = await newRunner("helper", { stages: ["extract", "match"] });
    for (let lease = await helper.lease(); lease; lease = await helper.lease()) await helper.work(lease);
    expect((await job(pipeline)).tasks.map((t: any) => t.status)).toEqual(["succeeded", "succeeded", "pending", "pending"]);
    // Then job B's extraction, queued after it.
    const b = await dataset(2);
    const features = (await call("POST", `/v1/datasets/${b.did}/features`, { spec: {} })).json.job_id;
    const software = await withAdapter("swiftshader", "SwiftShader Device (Subzero)", true);
    const gpu = await withAdapter("gpu", "NVIDIA GeForce RTX 4090", false);
    // The GPU runner takes the newer extraction over the older verification; a runner without a real GPU the verification.
    const gpuLease = (await gpu.lease())!;
    expect([gpuLease.task.kind, gpuLease.task.job_id]).toEqual(["extract", features]);
    const otherLease = (await software.lease())!;
    expect([otherLease.task.kind, otherLease.task.job_id]).toEqual(["verify", pipeline]);
    expect(await gpu.work(gpuLease)).toBe("completed");
    expect(await software.work(otherLease)).toBe("completed");
    // Both wait (the software runner first); one extraction shard is offered: the GPU runner is woken for it.
    const c = await dataset(2);
    const waiting = [software, gpu].map((r) => r.client.lease(r.runner!.runner_id, 10));
    const queue = dispatcher(env, { tenant: DEFAULT_TENANT });
    while ((await runInDurableObject(queue, (o) => (o as unknown as { waiters: Set<unknown> }).waiters.size)) < 2)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const third = (await call("POST", `/v1/datasets/${c.did}/features`, { spec: {} })).json.job_id;
    const gpuGot = await waiting[1];
    expect(gpuGot?.task.job_id).toBe(third);
    // The software runner, not woken, is still waiting: nothing was left for it.
    await gpu.work(gpuGot!);
    expect(await waiting[0]).toBeNull();
  }, 180_000);

  it("a map task goes only to a runner with memory for its model; pool runners get shards, never a map", async () => {
    const { pid, did } = await dataset(2, { "x-pool_opt_in": true });
    const jid = (await call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } })).json
      .job_id;
    // Two volunteers of two tokens: each shard's result is confirmed by the other's (runners.md "Trust").
    const volunteers = [];
    for (const name of ["volunteer", "another"]) {
      const token = (await call("POST", "/v1/admin/runner-tokens", { name })).json.raw_token;
      volunteers.push(await newRunner(name, { authorization: `Bearer ${token}` }));
    }
    for (let busy = true; busy;) {
      busy = false;
      for (const volunteer of volunteers) {
        const lease = await volunteer.lease();
        if (!lease) continue;
        expect(["extract", "match", "verify"]).toContain(lease.task.kind);
        await volunteer.work(lease);
        busy = true;
      }
    }
    expect((await job(jid)).tasks.map((t: any) => t.status)).toEqual(["succeeded", "succeeded", "succeeded", "pending"]);
    const small = new DigestRunner({ base: BASE, fetch: selfFetch, name: "small" });
    small.runner = await small.client.register({
      name: "small",
      stages: ["map"],
      runtime_versions: await small.client.serviceRuntimeVersions(),
      abilities: { webgpu: null, wasm: { simd: true, threads: false }, memory_bytes: 64 * 1024 ** 2, hardware_concurrency: 1 },
    });
    expect(await small.lease()).toBeNull();
    const big = await newRunner("big", { stages: ["map"] });
    const lease = (await big.lease())!;
    expect(lease.task.kind).toBe("map");
    expect(lease.shard).toBeNull();
  }, 180_000);
});

// Untrusted results (runners.md "Trust"): volunteers' shard results are confirmed by a second
// runner of another principal before they are accepted; a liar is caught, quarantined, and costs
// the job nothing. Digest runners speak the real protocol against workerd; a lying one reports
// wrong digests.
import { createExecutionContext, env, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { FetchLike } from "../../client/index";
import type { Lease, ShardItem, TaskKind, TaskOutputs } from "../../protocol";
import { encodeMatches } from "../../protocol/wire/matches";
import { DigestRunner } from "../../scripts/digest-runner";
import worker from "../index";
import { BASE, type Call, expectProblem, tenantClient, uploadBlob, cancelLiveJobs } from "../test/helpers";
import { blockMatches, featuresFile, shardOutputs } from "../test/shard-outputs";

vi.setConfig({ testTimeout: 60_000 });

const TENANT = "validation-tests";
let key = "";
let call: Call;
let fetch: FetchLike;

beforeAll(async () => {
  ({ key, call, fetch } = await tenantClient(TENANT));
});

/** A runner's fetch on a deployment of this file's tenant with other `vars` (a runner token replaces the key). */
const fetchWith =
  (vars: Record<string, string>): FetchLike =>
  async (request: Request) => {
    const req = new Request(request);
    if (!req.headers.has("Authorization")) req.headers.set("Authorization", `Bearer ${key}`);
    const ctx = createExecutionContext();
    const res = await worker.fetch(req, { ...env, SVC_AUTH_MODE: "api_key", ...vars } as unknown as Env, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  };

afterEach(cancelLiveJobs);

/** A volunteer: a runner of a fresh pool token (or of `token`). */
async function volunteer(name: string, opts: { token?: string; lie?: boolean; via?: FetchLike } = {}) {
  const token = opts.token ?? (await call("POST", "/v1/admin/runner-tokens", { name })).json.raw_token;
  const r = new DigestRunner({
    base: BASE,
    fetch: opts.via ?? fetch,
    name,
    authorization: `Bearer ${token}`,
    lie: opts.lie,
    stages: ["extract", "match", "verify"],
  });
  await r.register();
  return Object.assign(r, { token: token as string });
}

/** A trusted runner: the tenant's own key. */
async function trusted(name: string, stages: TaskKind[] = ["extract", "match", "verify"], via: FetchLike = fetch) {
  const r = new DigestRunner({ base: BASE, fetch: via, name, stages });
  await r.register();
  return r;
}

/** A project that opted in to the pool, with a dataset of n images (1 MP each without a size: 8 to an extraction shard). */
async function dataset(n: number) {
  const p = await call("POST", "/v1/projects", { name: "volunteers", "x-pool_opt_in": true });
  const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
  const did = d.json.dataset_id as string;
  const salt = Math.random();
  for (let i = 0; i < n; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`image ${i} ${salt}`), { Authorization: `Bearer ${key}` }, call);
    expect((await call("POST", `/v1/datasets/${did}/images`, { name: `img${i}.jpg`, blob_sha: sha })).status).toBe(201);
  }
  return { pid: p.json.project_id as string, did };
}

const features = async (did: string) => (await call("POST", `/v1/datasets/${did}/features`, { spec: {} })).json.job_id as string;
const job = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json;
const shards = async (jid: string) => (await job(jid)).tasks[0]["x-shards"];
/** The job's shard results with their files' digests (`GET /v1/jobs/{jid}/shard-results`), as runner, trust and verdict, and the page. */
async function trail(jid: string, query = "") {
  const page = (await call("GET", `/v1/jobs/${jid}/shard-results${query}`)).json;
  return { page, who: page.items.map((r: any) => [r.runner_id, r.trusted, r.verdict]) };
}

/** The job's event log so far, read from its object (the SSE stream stays open while the job runs). */
async function events(jid: string): Promise<any[]> {
  const stub = env.JOB.get(env.JOB.idFromName(`${TENANT}/${jid}`));
  return runInDurableObject(stub, (_o, state) =>
    state.storage.sql
      .exec<{ body: string }>("SELECT body FROM events ORDER BY event_id")
      .toArray()
      .map((r) => JSON.parse(r.body)),
  );
}

/** The task's assembled artifact's files, parsed (read from R2). */
async function outputFiles(jid: string): Promise<any[]> {
  const files = (await job(jid)).tasks[0].outputs_ref.artifacts[0].files as { blob_sha: string }[];
  return Promise.all(files.map(async (f) => (await env.BLOBS.get(`t/${TENANT}/blobs/${f.blob_sha}`))!.json()));
}

describe("untrusted results", () => {
  it("an honest volunteer's shard is held until a volunteer of another token computes it again; agreeing, it is accepted", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const a = await volunteer("a");
    const lease = (await a.lease())!;
    expect(lease.shard).toMatchObject({ index: 0, count: 1 });
    expect(await a.work(lease)).toBe("completed");
    // Held: not done, awaiting its replica; the task runs on.
    expect(await shards(jid)).toMatchObject({ total: 1, done: 0, validated: 0, awaiting_validation: 1 });
    expect((await job(jid)).status).toBe("running");
    // Neither the same runner nor another runner of the same token may confirm it.
    expect(await a.lease()).toBeNull();
    expect(await (await volunteer("a-again", { token: a.token })).lease()).toBeNull();
    // A runner of another token may.
    const b = await volunteer("b");
    const replica = (await b.lease())!;
    expect(replica.shard!.shard_id).toBe(lease.shard!.shard_id);
    expect(await b.work(replica)).toBe("completed");
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({
      total: 1,
      done: 1,
      validated: 1,
      awaiting_validation: 0,
      by_runner: { [a.runner!.runner_id]: 1 },
      checked_by: { [b.runner!.runner_id]: 1 },
      rejected_by: {},
    });
    expect((await events(jid)).filter((e: any) => e.kind === "warning")).toEqual([]);
    // The audit trail: both results with their files' digests, the held one used.
    const { page, who } = await trail(jid);
    expect(who).toEqual([
      [a.runner!.runner_id, false, "validated"],
      [b.runner!.runner_id, false, "agreed"],
    ]);
    expect(page.items[0]).toMatchObject({ task_id: done.tasks[0].task_id, shard_index: 0 });
    expect(page.items[0].files).toEqual(done.tasks[0].outputs_ref.artifacts[0].files);
    expectProblem(await call("GET", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/shard-results"), 404, "not_found");
    // Both volunteers are still welcome.
    expect(
      (await call("GET", "/v1/admin/runner-tokens")).json.filter(
        (t: any) => t.quarantined_at !== null && [a.token, b.token].some((raw) => raw.includes(t.token_id)),
      ),
    ).toEqual([]);
  });

  it("a trusted runner's shard is accepted as computed, never replicated", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const own = await trusted("own");
    await own.work((await own.lease())!);
    expect((await job(jid)).status).toBe("succeeded");
    expect(await shards(jid)).toMatchObject({ total: 1, done: 1, validated: 0, awaiting_validation: 0, checked_by: {}, rejected_by: {} });
  });

  it("a lying volunteer is caught by a trusted runner's recomputation: its result discarded, its token quarantined, the job correct", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const liar = await volunteer("liar", { lie: true });
    const lie = (await liar.lease())!;
    await liar.work(lie);
    expect(await shards(jid)).toMatchObject({ awaiting_validation: 1 });
    const own = await trusted("own");
    const check = (await own.lease())!;
    expect(check.shard!.shard_id).toBe(lie.shard!.shard_id);
    await own.work(check);

    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({
      done: 1,
      validated: 1,
      awaiting_validation: 0,
      by_runner: { [own.runner!.runner_id]: 1 },
      rejected_by: { [liar.runner!.runner_id]: 1 },
    });
    // The task's output is the trusted runner's: every digest right.
    const files = await outputFiles(jid);
    const images = (await call("GET", `/v1/datasets/${did}/images?page_size=100`)).json.items as { name: string; content_sha: string }[];
    expect(files.flatMap((f) => f.images.map((im: { sha256: string }) => im.sha256)).sort()).toEqual(
      images.map((im) => im.content_sha).sort(),
    );
    // The audit trail, a page at a time: the liar's result and its digests beside the trusted one the task uses.
    const first = await trail(jid, "?page_size=1");
    expect(first.who).toEqual([[liar.runner!.runner_id, false, "rejected"]]);
    expect(first.page.total).toBe(2);
    const second = await trail(jid, `?page_size=1&page_token=${first.page.next_page_token}`);
    expect(second.who).toEqual([[own.runner!.runner_id, true, "validated"]]);
    expect(second.page.next_page_token).toBeNull();
    expect(second.page.items[0].files).toEqual(done.tasks[0].outputs_ref.artifacts[0].files);
    expect(first.page.items[0].files.map((f: any) => f.blob_sha)).not.toEqual(second.page.items[0].files.map((f: any) => f.blob_sha));
    const warning = (await events(jid)).find((e: any) => e.kind === "warning");
    expect(warning.message).toMatch(
      new RegExp(
        `the result of untrusted runner ${liar.runner!.runner_id} disagrees with trusted runner ${own.runner!.runner_id}'s .*quarantined`,
      ),
    );
    // The liar's token is refused, with the reason; the operator sees it.
    const refused = await call("POST", `/v1/runners/${liar.runner!.runner_id}:lease`, undefined, { Authorization: `Bearer ${liar.token}` });
    expectProblem(refused, 403, "auth");
    expect(refused.json.detail).toMatch(/quarantined/);
    expect(refused.json["x-quarantine"].reason).toMatch(/disagreed with trusted runner/);
    expect(
      (
        await call(
          "POST",
          "/v1/runners",
          { name: "again", stages: ["extract"], runtime_versions: {} },
          { Authorization: `Bearer ${liar.token}` },
        )
      ).status,
    ).toBe(403);
    const token = (await call("GET", "/v1/admin/runner-tokens")).json.find((t: any) => liar.token.includes(t.token_id));
    expect(token.quarantined_at).not.toBeNull();
    expect(token.quarantine_reason).toMatch(new RegExp(`shard ${lie.shard!.shard_id}`));
    // An operator who judges it a false alarm lifts the quarantine: the token works again, with no record.
    const reinstated = await call("POST", `/v1/admin/runner-tokens/${token.token_id}:reinstate`);
    expect(reinstated.status).toBe(200);
    expect(reinstated.json).toMatchObject({
      token_id: token.token_id,
      quarantined_at: null,
      quarantine_reason: null,
      confirmed: 0,
      raw_token: null,
    });
    expect(
      (await call("POST", `/v1/runners/${liar.runner!.runner_id}:lease`, undefined, { Authorization: `Bearer ${liar.token}` })).status,
    ).toBe(204);
    expectProblem(await call("POST", "/v1/admin/runner-tokens/01M8ZZZZZZZZZZZZZZZZZZZZZZ:reinstate"), 404, "not_found");
  });

  it("two volunteers that disagree wait for a trusted runner, which decides: the liar is quarantined, the honest one confirmed", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const honest = await volunteer("honest");
    const liar = await volunteer("liar", { lie: true });
    await honest.work((await honest.lease())!);
    await liar.work((await liar.lease())!);
    expect(await shards(jid)).toMatchObject({ done: 0, awaiting_validation: 1 });
    expect((await events(jid)).find((e: any) => e.kind === "warning").message).toMatch(/disagree .*a trusted runner decides/);
    // A third volunteer may not break the tie.
    expect(await (await volunteer("third")).lease()).toBeNull();
    const own = await trusted("own");
    await own.work((await own.lease())!);
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({
      done: 1,
      validated: 1,
      checked_by: { [honest.runner!.runner_id]: 1 },
      rejected_by: { [liar.runner!.runner_id]: 1 },
    });
    expect(
      (await call("POST", `/v1/runners/${liar.runner!.runner_id}:lease`, undefined, { Authorization: `Bearer ${liar.token}` })).status,
    ).toBe(403);
    expect(
      (await call("POST", `/v1/runners/${honest.runner!.runner_id}:lease`, undefined, { Authorization: `Bearer ${honest.token}` })).status,
    ).toBe(204);
  });

  it("a liar among volunteers only: its open results in the job are dropped and its shards computed by others; the job succeeds", async () => {
    const { did } = await dataset(20);
    const jid = await features(did);
    const liar = await volunteer("liar", { lie: true });
    const [a, b] = [await volunteer("a"), await volunteer("b")];
    // The liar computes shards 0 and 1: two open results.
    await liar.work((await liar.lease())!);
    const second = (await liar.lease())!;
    expect(second.shard!.index).toBe(1);
    await liar.work(second);
    // b replicates shard 0: they disagree, and a trusted runner decides it.
    const r0 = (await b.lease())!;
    expect(r0.shard!.index).toBe(0);
    await b.work(r0);
    const own = await trusted("own", ["extract"]);
    const decide = (await own.lease())!;
    expect(decide.shard!.index).toBe(0);
    await own.work(decide);
    // The liar is quarantined, and its open result for shard 1 dropped: shard 1 waits for anyone again.
    expect((await shards(jid)).rejected_by).toEqual({ [liar.runner!.runner_id]: 2 });
    for (let lease = await b.lease(); lease; lease = await b.lease()) await b.work(lease);
    for (let lease = await a.lease(); lease; lease = await a.lease()) await a.work(lease);
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    expect(done.tasks[0]["x-shards"]).toMatchObject({ total: 3, done: 3, validated: 3, awaiting_validation: 0 });
    const images = (await call("GET", `/v1/datasets/${did}/images?page_size=100`)).json.items as { content_sha: string }[];
    const files = await outputFiles(jid);
    expect(files.flatMap((f) => f.images.map((im: { sha256: string }) => im.sha256)).sort()).toEqual(
      images.map((im) => im.content_sha).sort(),
    );
  });

  it("a volunteer's result that breaks the shard's structure is refused (422) and its token quarantined; the task goes on", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const v = await volunteer("broken");
    const lease = (await v.lease())!;
    const r = await call(
      "POST",
      `/v1/leases/${lease.lease_id}:complete`,
      { outputs_ref: { artifacts: [], result: null } },
      { Authorization: `Bearer ${v.token}` },
    );
    expectProblem(r, 422, "validation");
    expect(r.json.errors[0].code).toBe("shard_items");
    expect((await job(jid)).tasks[0].status).toBe("pending");
    expect((await call("POST", `/v1/runners/${v.runner!.runner_id}:lease`, undefined, { Authorization: `Bearer ${v.token}` })).status).toBe(
      403,
    );
    const own = await trusted("own");
    await own.work((await own.lease())!);
    expect((await job(jid)).status).toBe("succeeded");
  });

  it("a volunteer's :fail puts its shard back instead of failing the job", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const v = await volunteer("flaky");
    const lease = (await v.lease())!;
    await v.client.fail(lease.lease_id, { error_class: "EngineError", message: "out of memory", detail: null });
    const after = await job(jid);
    expect(after.status).not.toBe("failed");
    expect((await events(jid)).find((e: any) => e.kind === "warning").message).toMatch(/failed its shard \(EngineError: out of memory\)/);
    const own = await trusted("own");
    await own.work((await own.lease())!);
    expect((await job(jid)).status).toBe("succeeded");
  });

  it("reclaim: a replica's runner dies mid-shard; the shard waits for a replica again and the job succeeds", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const a = await volunteer("a");
    await a.work((await a.lease())!);
    const dying = await volunteer("dying");
    const lost = (await dying.lease())!;
    const stub = env.JOB.get(env.JOB.idFromName(`${TENANT}/${jid}`));
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE lease_id = ?", lost.lease_id);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await shards(jid)).toMatchObject({ done: 0, awaiting_validation: 1 });
    expect(await a.lease()).toBeNull();
    const c = await volunteer("c");
    await c.work((await c.lease())!);
    expect(await shards(jid)).toMatchObject({ done: 1, validated: 1 });
    expect((await job(jid)).status).toBe("succeeded");
  });

  it("cancel while a shard awaits its replica: the job is cancelled; resume: the held result still waits for its replica", async () => {
    const { did } = await dataset(4);
    const jid = await features(did);
    const a = await volunteer("a");
    await a.work((await a.lease())!);
    expect((await call("POST", `/v1/jobs/${jid}:cancel`)).status).toBe(200);
    expect((await job(jid)).status).toBe("cancelled");
    expect(await (await volunteer("b")).lease()).toBeNull();
    expect((await call("POST", `/v1/jobs/${jid}:resume`)).status).toBeLessThan(300);
    expect(await a.lease()).toBeNull();
    const b = await volunteer("b2");
    await b.work((await b.lease())!);
    expect(await shards(jid)).toMatchObject({ done: 1, validated: 1, checked_by: { [b.runner!.runner_id]: 1 } });
    expect((await job(jid)).status).toBe("succeeded");
  });

  it("SVC_POOL_VALIDATION_RATE=0: a token's results are replicated until SVC_POOL_VALIDATION_TRUST_AFTER of them were confirmed, then accepted unconfirmed", async () => {
    const lenient = fetchWith({ SVC_POOL_VALIDATION_RATE: "0", SVC_POOL_VALIDATION_TRUST_AFTER: "1" });
    const [a, b] = [await volunteer("new", { via: lenient }), await volunteer("other", { via: lenient })];
    const first = await features((await dataset(4)).did);
    await a.work((await a.lease())!);
    expect(await shards(first)).toMatchObject({ done: 0, awaiting_validation: 1 });
    await b.work((await b.lease())!);
    expect(await shards(first)).toMatchObject({ done: 1, validated: 1 });
    const tokens = (await call("GET", "/v1/admin/runner-tokens")).json as { token_id: string; confirmed: number }[];
    expect(tokens.filter((t) => [a.token, b.token].some((raw) => raw.includes(t.token_id))).map((t) => t.confirmed)).toEqual([1, 1]);
    // Now trusted enough for this deployment: its next result is accepted as computed.
    const second = await features((await dataset(4)).did);
    await a.work((await a.lease())!);
    expect((await job(second)).status).toBe("succeeded");
    expect(await shards(second)).toMatchObject({ done: 1, validated: 0, awaiting_validation: 0 });
  });
});

describe('trusted results are checked too (runners.md "Trust")', () => {
  /** Features whose files have 3 keypoints and whose summary says `stated`. */
  const featuresOf = (r: DigestRunner, lease: Lease, stated: number) =>
    shardOutputs(
      r,
      lease,
      "features.local.v1",
      () => featuresFile(3),
      () => ({ num_keypoints: stated }),
    );
  /** One match of each item's pair `pair` (two image names). */
  const matchesOf = (r: DigestRunner, lease: Lease, pair: (item: ShardItem) => [string, string]) =>
    shardOutputs(r, lease, "matches.indexed.v1", (item) => {
      const [a, b] = pair(item);
      return encodeMatches([{ imageName1: a, imageName2: b, matches: Uint32Array.from([0, 0]) }]);
    });

  /** Completes one lease by `:complete` or by `:complete_leases`: the status and the problem's field errors. */
  async function complete(r: DigestRunner, lease: Lease, outputs: TaskOutputs, batch: boolean) {
    if (!batch) {
      const res = await call("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: outputs });
      return { status: res.status, errors: res.json?.errors ?? [] };
    }
    const res = await call("POST", `/v1/runners/${r.runner!.runner_id}:complete_leases`, {
      completions: [{ lease_id: lease.lease_id, outputs_ref: outputs }],
    });
    expect(res.status).toBe(200);
    const problem = res.json.completions[0].problem;
    return { status: problem?.status ?? 204, errors: problem?.errors ?? [] };
  }

  /** The runner's next lease of job `jid` (work of jobs another test left behind is done first). */
  async function leaseOf(r: DigestRunner, jid: string, kind: TaskKind = "extract"): Promise<Lease> {
    for (let lease = await r.lease(); lease; lease = await r.lease()) {
      if (lease.task.job_id === jid && lease.task.kind === kind) return lease;
      await r.work(lease);
    }
    throw new Error(`no ${kind} shard of ${jid} was offered`);
  }

  const quarantined = async () => (await call("GET", "/v1/admin/runner-tokens")).json.filter((t: any) => t.quarantined_at !== null);

  for (const batch of [false, true]) {
    const via = batch ? ":complete_leases" : ":complete";
    it(`features whose keypoint count disagrees with their summary are refused (422) on ${via}: the shard unrecorded, the task failed, no quarantine`, async () => {
      const before = (await quarantined()).length;
      const jid = await features((await dataset(4)).did);
      const own = await trusted("own");
      const lease = await leaseOf(own, jid);
      const outputs = await featuresOf(own, lease, 4);
      const answer = await complete(own, lease, outputs, batch);
      expect(answer.status).toBe(422);
      expect(answer.errors[0]).toMatchObject({ path: "outputs_ref.artifacts.0.files.0", code: "summary_mismatch" });
      expect(answer.errors[0].message).toMatch(/3 keypoints, the summary says 4/);
      // The refusal ended the lease at once (browser-runtime/runner/refused-completion.test.ts: the runner sends nothing more).
      expect((await own.heartbeat(lease)).directive).toBe("teardown");
      const after = await job(jid);
      expect(after.tasks[0]["x-shards"]).toMatchObject({ done: 0 });
      expect(after.tasks[0].status).toBe("failed");
      expect((await quarantined()).length).toBe(before);
      // The refused result stays in the audit trail, with its digests.
      const refused = await trail(jid);
      expect(refused.who).toEqual([[own.runner!.runner_id, true, "refused"]]);
      expect(refused.page.items[0].files.map((f: any) => f.blob_sha)).toEqual(outputs.artifacts.map((a) => a.files[0]!.blob_sha));
      // The same runner's correct result completes.
      const next = await features((await dataset(4)).did);
      const again = await leaseOf(own, next);
      expect((await complete(own, again, await featuresOf(own, again, 3), batch)).status).toBe(204);
      expect((await job(next)).status).toBe("succeeded");
    });

    it(`matches of a pair outside the shard's block are refused (422) on ${via}; matches within it complete`, async () => {
      const { pid, did } = await dataset(6);
      const run = async () =>
        (await call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } })).json.job_id;
      const own = await trusted("own");
      const jid = await run();
      const lease = await leaseOf(own, jid, "match");
      const answer = await complete(own, lease, await matchesOf(own, lease, (item) => [item.images[0]!, "not-in-the-block.jpg"]), batch);
      expect(answer.status).toBe(422);
      expect(answer.errors[0]).toMatchObject({ path: "outputs_ref.artifacts.0.files.0", code: "outside_block" });
      const after = await job(jid);
      expect(after.tasks[1]["x-shards"]).toMatchObject({ done: 0 });
      expect(after.tasks[1].status).toBe("failed");
      // By task: the extraction's accepted result, the matching's refused one.
      for (const [k, verdict] of [
        [0, "accepted"],
        [1, "refused"],
      ] as const)
        expect((await trail(jid, `?task_id=${after.tasks[k].task_id}`)).who).toEqual([[own.runner!.runner_id, true, verdict]]);
      // A pair within each item's block completes (a new run: its extraction is cached).
      const good = await leaseOf(own, await run(), "match");
      expect((await complete(own, good, await shardOutputs(own, good, "matches.indexed.v1", blockMatches), batch)).status).toBe(204);
    });
  }
});

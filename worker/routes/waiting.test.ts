/**
 * A job that no connected runner can serve says so (our extension `x-waiting_for`, issue 22):
 * on the job and on the task ready to be leased, naming the task kind and runtime; null once a
 * runner that computes it asks for work. `/readyz` keeps the spec's meaning (storage only).
 */
import { describe, expect, it, vi } from "vitest";
import { DigestRunner } from "../../scripts/digest-runner";
import type { TaskKind } from "../../protocol";
import { BASE, call, expectStatus, newDataset, tenantClient, uploadBlob } from "../test/helpers";

// A whole job's tasks run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000 });

describe("x-waiting_for", () => {
  it("names the runner a ready task waits for, on the task and the job, until one that computes it asks for work", async () => {
    // A tenant of its own: no runner of another test file serves it.
    const tenant = await tenantClient("waiting-for");
    const runner = (name: string, stages: TaskKind[]) => new DigestRunner({ base: BASE, fetch: tenant.fetch, name, stages });
    const { pid, did } = await newDataset({ via: tenant.call });
    for (let i = 0; i < 2; i++) {
      const sha = await uploadBlob(new TextEncoder().encode(`waiting ${i} ${Math.random()}`), {}, tenant.call);
      await expectStatus(tenant.call("POST", `/v1/datasets/${did}/images`, { name: `w${i}.jpg`, blob_sha: sha }), 201);
    }
    const jid = (
      await expectStatus(
        tenant.call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } }),
        202,
      )
    ).json.job_id as string;
    const job = async () => (await expectStatus(tenant.call("GET", `/v1/jobs/${jid}`), 200)).json;

    // No runner at all: the first task waits for one that extracts; later tasks wait for it, not for a runner.
    let j = await job();
    expect(j.status).toBe("pending");
    expect(j["x-waiting_for"]).toMatch(
      /^a runner that computes 'extract' for runtime [0-9a-f]{12}: none has asked for work in the last 60 s$/,
    );
    expect(j.tasks[0]["x-waiting_for"]).toBe(j["x-waiting_for"]);
    expect(j.tasks.slice(1).map((t: Record<string, unknown>) => t["x-waiting_for"])).toEqual([undefined, undefined, undefined]);
    // Readiness is about storage (4.1), not runners.
    expect((await call("GET", "/readyz")).status).toBe(200);

    // A runner that only matches is live, yet cannot serve the extraction.
    const matcher = runner("matcher", ["match"]);
    await matcher.register();
    expect(await matcher.lease()).toBeNull();
    expect((await job())["x-waiting_for"]).toContain("'extract'");

    // An extracting runner takes the task: nothing waits while it runs.
    const extractor = runner("extractor", ["extract"]);
    await extractor.register();
    const lease = (await extractor.lease())!;
    expect(lease.task.job_id).toBe(jid);
    j = await job();
    expect(j["x-waiting_for"]).toBeNull();
    expect(j.tasks[0]["x-waiting_for"]).toBeUndefined();
    expect(await extractor.work(lease)).toBe("completed");
    j = await job();
    expect(j.tasks[0].status).toBe("succeeded");
    // The match task is ready and the live matcher computes it: nothing to say.
    expect(j["x-waiting_for"]).toBeNull();
    const matching = (await matcher.lease())!;
    await matcher.work(matching);
    // Verification: neither live runner computes it.
    j = await job();
    expect(j.tasks[2].kind).toBe("verify");
    expect(j["x-waiting_for"]).toContain("'verify'");
    expect(j.tasks[2]["x-waiting_for"]).toBe(j["x-waiting_for"]);
    await tenant.call("POST", `/v1/jobs/${jid}:cancel?force=true`);
    expect((await job())["x-waiting_for"]).toBeNull();
  });
});

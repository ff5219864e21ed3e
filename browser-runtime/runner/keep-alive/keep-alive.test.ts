/**
 * The keep-alive holds a lease while the runner's thread is blocked (issue 17: a map task keeps its
 * lease while the mapper runs), on the local stack with a 2 s lease: the thread is blocked for 6 s,
 * as one long engine call blocks it (the global mapper's refinement, a merged model's adjustment),
 * and the lease is still the runner's afterwards; without the keep-alive it is not. A lease the
 * service no longer knows is answered as lost.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ProblemError } from "../../../client/index";
import { DigestRunner } from "../../../scripts/digest-runner";
import { type Server, startServer } from "../../../test/conformance/server";
import { type Http, httpClient, uploadBytes } from "../../../test/support/http";
import { nodeRunnerHost } from "../node-host";
import { KeepAlive, type KeepAliveAnswer } from "./keep-alive";

const TTL_S = 2;
let server: Server;
let api: Http;
let keepAlive: KeepAlive;

beforeAll(async () => {
  server = await startServer({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: String(TTL_S) });
  api = httpClient(server.base);
  const host = await nodeRunnerHost("keep-alive-test");
  keepAlive = new KeepAlive(host.keepAlive!);
});
afterAll(async () => {
  keepAlive?.end();
  await server?.stop();
});

/** A features job on a one-image dataset, leased by a digest runner. */
async function leasedTask(seed: number) {
  const p = await api("POST", "/v1/projects", { name: `keep-alive ${seed}` });
  const d = await api("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
  const sha = await uploadBytes(api, new TextEncoder().encode(`keep-alive image ${seed} ${Math.random()}`));
  expect((await api("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: "a.jpg", blob_sha: sha })).status).toBe(201);
  const job = await api("POST", `/v1/datasets/${d.json.dataset_id}/features`, { spec: { seed } });
  expect(job.status).toBe(202);
  const runner = new DigestRunner({ base: server.base, name: `keep-alive-${seed}`, stages: ["extract"] });
  await runner.register();
  const lease = await runner.lease();
  expect(lease).not.toBeNull();
  return { runner, lease: lease!, jobId: job.json.job_id as string };
}

/** Blocks this thread, as a long synchronous engine call does (timers and messages wait). */
const blockThread = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  for (const t0 = Date.now(); !check(); await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() - t0 > ms) throw new Error("timed out");
  }
}

it("a lease outlives a blocked runner thread when the keep-alive holds it, and is lost without", async () => {
  const held = await leasedTask(1);
  const answers: KeepAliveAnswer[] = [];
  keepAlive.hold(held.lease.lease_id, held.runner.client.target()!, 250, (a) => answers.push(a));
  await until(() => answers.length > 0);
  blockThread(3 * TTL_S * 1000);
  await until(() => answers.length > 3);
  expect(answers.every((a) => "directive" in a && a.directive === "continue")).toBe(true);
  keepAlive.release(held.lease.lease_id);
  expect(await held.runner.work(held.lease)).toBe("completed");
  expect((await api.client.waitForJob(held.jobId)).status).toBe("succeeded");

  const alone = await leasedTask(2);
  blockThread(3 * TTL_S * 1000);
  const lost = await alone.runner.work(alone.lease).catch((e: unknown) => e);
  expect(lost).toBeInstanceOf(ProblemError);
  expect([404, 409]).toContain((lost as ProblemError).status);
}, 60_000);

it("a lease the service does not know is answered as lost, once", async () => {
  const { runner } = await leasedTask(3);
  const answers: KeepAliveAnswer[] = [];
  keepAlive.hold("lease_unknown", runner.client.target()!, 100, (a) => answers.push(a));
  await until(() => answers.length > 0);
  await new Promise((r) => setTimeout(r, 500));
  expect(answers).toEqual([{ at: expect.any(Number), lost: true }]);
}, 30_000);

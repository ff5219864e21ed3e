/**
 * Runners killed at random (issue 22, Faults): 50 jobs run while a fleet of digest runners loses
 * one runner, chosen at random among those holding a lease, every 0.4-1.2 s (scripts/runner-chaos.ts:
 * its requests in flight are cut and it never speaks again). Every job must succeed with the right
 * result (each image's SHA-256 and size, as the digest runner computes them) and one event log,
 * ids 1..N without gap or repeat. The long version, with runner processes SIGKILLed and real photo
 * jobs on top, is `npm run bench -- chaos`.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ProgressEvent, collect } from "../../client/index";
import { chaos, killableDigestRunner } from "../../scripts/runner-chaos";
import { type Server, startServer } from "../conformance/server";
import { type Http, httpClient, uploadBytes } from "../support/http";

const JOBS = 50;
const IMAGES = 3;
let server: Server;
let api: Http;

beforeAll(async () => {
  // A short lease, so a killed runner's task is offered again within two seconds.
  server = await startServer({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "2" });
  api = httpClient(server.base);
});
afterAll(() => server?.stop());

it(`${JOBS} jobs while runners are killed at random: all succeed with the right digests and one contiguous event log each`, async () => {
  const p = await api("POST", "/v1/projects", { name: "chaos" });
  const d = await api("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
  const did = d.json.dataset_id as string;
  const images: { name: string; sha: string; size: number }[] = [];
  for (let i = 0; i < IMAGES; i++) {
    const bytes = new TextEncoder().encode(`chaos image ${i} ${Date.now()} ${Math.random()}`.repeat(i + 1));
    const sha = await uploadBytes(api, bytes);
    expect((await api("POST", `/v1/datasets/${did}/images`, { name: `img${i}.jpg`, blob_sha: sha })).status).toBe(201);
    images.push({ name: `img${i}.jpg`, sha, size: bytes.byteLength });
  }

  const fleet = chaos({
    size: 3,
    minMs: 400,
    maxMs: 1200,
    seed: 22,
    start: (i) => killableDigestRunner(server.base, `chaos-${i}`, { imageDelayMs: 30 }),
  });
  // Each job differs by its seed, so none is a cache hit of another.
  const jobs: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const r = await api("POST", `/v1/datasets/${did}/features`, { spec: { seed: 1000 + i } });
    expect(r.status).toBe(202);
    jobs.push(r.json.job_id);
  }
  const details = await Promise.all(jobs.map((jid) => api.client.waitForJob(jid)));
  // No runner ended but by a kill.
  expect(await fleet.stop()).toEqual([]);
  console.log(`runner kills: ${fleet.stats.kills} (${fleet.stats.busyKills} mid-task), runners started: ${fleet.stats.started}`);

  expect(details.map((j) => j.status)).toEqual(jobs.map(() => "succeeded"));
  expect(fleet.stats.busyKills).toBeGreaterThanOrEqual(3);
  let reclaimed = 0;
  for (const [k, job] of details.entries()) {
    // The result as a client reads it: the job's artifacts, each file's bytes.
    const digests = [];
    for (const a of (await api("GET", `/v1/jobs/${jobs[k]}/artifacts?page_size=500`)).json.items) {
      for (const f of a.files) {
        const file = await api("GET", `/v1/artifacts/${a.artifact_id}/content?path=${encodeURIComponent(f.path)}`);
        digests.push(
          ...(JSON.parse(new TextDecoder().decode(file.raw)) as { images: { name: string; sha256: string; byte_size: number }[] }).images,
        );
      }
    }
    expect(
      digests.sort((a, b) => a.name.localeCompare(b.name)),
      jobs[k],
    ).toEqual(images.map((im) => ({ name: im.name, sha256: im.sha, byte_size: im.size })));
    const events = (await collect(api.client.events(jobs[k]!, { reconnect: false }))) as ProgressEvent[];
    expect(
      events.map((e) => e.event_id),
      jobs[k],
    ).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ kind: "job_status", status: "succeeded" });
    if (job.tasks[0]!.attempts > 1) reclaimed++;
  }
  console.log(`jobs whose task was reclaimed after a kill: ${reclaimed}`);
  expect(reclaimed).toBeGreaterThanOrEqual(1);
});

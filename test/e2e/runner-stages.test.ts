/**
 * The runner computes real stages over real HTTP: a dataset of shared photos, a `features` job
 * and a `matches` job, leased and run by the Node runner (the same Runner as in browsers), with
 * the artifacts read back and decoded; and single-stage jobs chained through `input_artifacts`
 * (2.11), each reading the previous job's artifact.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { type Server, startServer } from "../conformance/server";
import { httpClient, uploadBytes, waitForJob } from "../support/http";

const SET = new URL("../../../shared/datasets/sacre-coeur/images/", import.meta.url);
const NAMES = ["02928139_3448003521.jpg", "03903474_1471484089.jpg", "10265353_3838484249.jpg"];

let server: Server;
let http: ReturnType<typeof httpClient>;
let runner: Runner;

beforeAll(async () => {
  server = await startServer({
    SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()),
    // The flags go live with the headless-browser runner of `npm start`; here the Node runner computes.
    SVC_TEST_CAPABILITIES: "features.extract.sift,pairs.exhaustive,matchers.nn-mutual,matches.verify,map.incremental,pipelines.incremental",
  });
  http = httpClient(server.base);
  // Only the stages this test checks: the later ones stay pending for other runners.
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("e2e-node"), { stages: ["extract", "match"] });
  await runner.register();
});
afterAll(async () => {
  await server?.stop();
});

describe("runner stages over HTTP", () => {
  it("extracts SIFT features and matches them for a dataset of real photos", async () => {
    const project = await http("POST", "/v1/projects", { name: "runner e2e" });
    const entries = [];
    for (const name of NAMES) entries.push({ name, blob_sha: await uploadBytes(http, new Uint8Array(readFileSync(new URL(name, SET)))) });
    const ds = await http("POST", `/v1/projects/${project.json.project_id}/datasets`, { name: "sc", source: { kind: "upload", entries } });
    expect(ds.status).toBe(201);
    const did = ds.json.dataset_id;

    const pipeline = await http("POST", `/v1/projects/${project.json.project_id}/pipelines/incremental`, {
      dataset_id: did,
      spec: { kind: "incremental" },
      features: { type: "sift", max_num_features: 2000 },
      pairs: { strategy: "exhaustive" },
      matcher: { type: "nn-mutual" },
    });
    expect(pipeline.status, JSON.stringify(pipeline.json)).toBe(202);
    const jobId = pipeline.json.job_id;
    expect(await runner.drain()).toBe(2);
    const job = (await http("GET", `/v1/jobs/${jobId}`)).json;
    expect(job.tasks.map((t: { kind: string; status: string }) => [t.kind, t.status])).toEqual([
      ["extract", "succeeded"],
      ["match", "succeeded"],
      ["verify", "pending"],
      ["map", "pending"],
    ]);

    const features = job.tasks[0].outputs_ref.artifacts[0];
    expect(features).toMatchObject({ kind: "features.local.v1", artifact_format: "svc.features.local.v1" });
    expect(features.files.map((f: { path: string }) => f.path)).toEqual(NAMES.map((n) => `features/${n}`));
    expect(features.summary.num_keypoints).toBeGreaterThan(3 * 1000);

    const m = job.tasks[1].outputs_ref.artifacts[0];
    expect(m).toMatchObject({ kind: "matches.indexed.v1", artifact_format: "svc.matches.indexed.v1" });
    expect(m.summary.num_pairs).toBe(3);
    expect(m.summary.num_matches).toBeGreaterThan(100);

    // The events tell the story: the service's phase start/end around the runner's progress.
    await http("POST", `/v1/jobs/${jobId}:cancel`);
    const events = await http("GET", `/v1/jobs/${jobId}/events`);
    const text = new TextDecoder().decode(events.raw);
    expect(text).toMatch(/"kind":"phase_started","phase":"feature_extraction"|"phase":"feature_extraction"[^}]*"kind":"phase_started"/);
    // Three photos are one extraction shard: the task's progress counts shards.
    expect(text).toMatch(/"phase":"feature_extraction","current":1,"total":1/);
  });

  it("single-stage matches and verify jobs read an earlier job's artifacts (input_artifacts) and run", async () => {
    const project = await http("POST", "/v1/projects", { name: "chained stages" });
    const entries = [];
    for (const name of NAMES) entries.push({ name, blob_sha: await uploadBytes(http, new Uint8Array(readFileSync(new URL(name, SET)))) });
    const ds = await http("POST", `/v1/projects/${project.json.project_id}/datasets`, { name: "sc", source: { kind: "upload", entries } });
    const did = ds.json.dataset_id;
    const artifactOf = async (jobId: string) => (await http("GET", `/v1/jobs/${jobId}/artifacts`)).json.items[0];
    const ref = (a: { artifact_id: string; kind: string }) => ({ artifact_id: a.artifact_id, kind: a.kind });

    const f = await http("POST", `/v1/datasets/${did}/features`, { spec: { type: "sift", max_num_features: 2000 } });
    expect(f.status, JSON.stringify(f.json)).toBe(202);
    await runner.drain();
    expect((await waitForJob(http, f.json.job_id)).status).toBe("succeeded");
    const features = await artifactOf(f.json.job_id);
    expect(features.kind).toBe("features.local.v1");

    const m = await http("POST", `/v1/datasets/${did}/matches`, { input_artifacts: { features: ref(features) } });
    expect(m.status, JSON.stringify(m.json)).toBe(202);
    expect(await runner.drain()).toBe(1);
    const matchJob = await waitForJob(http, m.json.job_id);
    expect(matchJob.status, matchJob.error_message).toBe("succeeded");
    const matches = await artifactOf(m.json.job_id);
    expect(matches).toMatchObject({ kind: "matches.indexed.v1", dataset_id: did });
    expect(matches.summary.num_pairs).toBe(3);

    const v = await http("POST", `/v1/datasets/${did}/verify`, { input_artifacts: { features: ref(features), matches: ref(matches) } });
    expect(v.status, JSON.stringify(v.json)).toBe(202);
    const verifier = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("e2e-verify"), { stages: ["verify"] });
    expect(await verifier.drain()).toBe(1);
    const verifyJob = await waitForJob(http, v.json.job_id);
    expect(verifyJob.status, verifyJob.error_message).toBe("succeeded");
    const verified = await artifactOf(v.json.job_id);
    expect(verified.kind).toBe("matches.verified.v1");
    expect(verified.summary.num_verified_pairs).toBeGreaterThan(0);
  });
});

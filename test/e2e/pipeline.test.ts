/**
 * The incremental recipe end to end over real HTTP, computed by the Node runner (the same Runner
 * class the browser runs): photos uploaded, the pipeline submitted, every task (extract, match,
 * verify, map) leased and computed, the sealed snapshot read back through the 4.9 routes and
 * scored against the COLMAP 3.8 reference with issue 5's bars.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../browser-runtime/runner/client";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { type Server, startServer } from "../conformance/server";
import { httpClient } from "../support/http";
import { scoreAgainstReference, submitSet, waitForJob } from "../support/reconstruct";

const SET = "sacre-coeur";
let server: Server;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
});
afterAll(async () => {
  await server?.stop();
});

describe(`incremental recipe on ${SET} (Node runner)`, () => {
  it("reconstructs every image within issue 5's bars against COLMAP", async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id } = await submitSet(http, SET);
    const runner = new Runner(new RunnerClient({ base: server.base }), await nodeRunnerHost("pipeline-node"));
    expect(await runner.drain()).toBe(4);
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    const result = await scoreAgainstReference(http, SET, recon_id);
    console.log(`${SET}: ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.failures).toEqual([]);
    expect(result.numPoints).toBeGreaterThan(0.5 * result.colmap.points3D);
  }, 900_000);
});

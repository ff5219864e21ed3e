/**
 * The incremental recipe end to end over real HTTP on opensfm-lund, 29 photos walked down a
 * street: every baseline lies along the viewing direction, so the mapper starts from the
 * initial-pair passes that lift COLMAP's forward-motion limit, and photos that see too few of the
 * model's points register through their epipolar geometry (engine-wasm/README.md). Computed
 * by the Node runner and scored against the COLMAP 3.8 reference with issue 5's bars.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

const SET = "opensfm-lund";
let server: Server;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
});
afterAll(async () => {
  await server?.stop();
});

describe(`incremental recipe on ${SET} (Node runner)`, () => {
  it("registers the street within issue 5's rotation, centre and reprojection bars against COLMAP", async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id } = await submitSet(http.client, SET);
    const leases = await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("street-node")).drain();
    const job = await waitForJob(http, job_id);
    // One lease per shard: a sharded stage (extract, match, verify) is leased in pieces.
    expect(leases).toBe(job.tasks.reduce((n: number, t: any) => n + (t["x-shards"]?.total ?? 1), 0));
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    const result = await scoreAgainstReference(http.client, SET, recon_id);
    console.log(`${SET}: ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.missing).toEqual([]);
    expect(result.report.numRegistered).toBe(29);
    expect(result.failures).toEqual([]);
    expect(result.numPoints).toBeGreaterThan(0.5 * result.colmap.points3D);
  }, 900_000);
});

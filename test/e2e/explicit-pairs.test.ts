/**
 * Explicit pairs end to end over real HTTP (2.12 `explicit`, 4.6 rule 5) on sacre-coeur, 10 Internet
 * photos, with the Node runner: the pair list is an upload of `image1 image2` rows (the pairs that
 * share at least 50 points in the set's COLMAP reference, as another tool's list would be), with a
 * comment, a blank line and each pair given twice, once reversed. The service checks it at
 * submission, the match task matches exactly its pairs, and the model is scored against COLMAP's as
 * the exhaustive pipeline is (pipeline.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { PairsSpec } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { coVisiblePairs, datasetDir, scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
const MIN_SHARED = 50;
let server: Server;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
});
afterAll(async () => {
  await server?.stop();
});

describe(`explicit pairs on ${SET} (Node runner)`, () => {
  it("matches exactly the uploaded list's pairs, duplicates once, and reconstructs", async () => {
    const http = httpClient(server.base);
    const listed = [...coVisiblePairs(new URL("reference/images.txt", datasetDir(SET)).pathname, MIN_SHARED).keys()];
    const rows = listed.flatMap((p) => [p, p.split(" ").reverse().join(" ")]);
    const text = `# ${SET}: pairs sharing >= ${MIN_SHARED} points in the COLMAP reference\n\n${rows.join("\n")}\n`;
    const { blob_sha } = await http.client.upload(new TextEncoder().encode(text));
    const { job_id, recon_id } = await submitSet(http.client, SET, {}, PairsSpec.parse({ strategy: "explicit", pairs_blob_sha: blob_sha }));
    await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("explicit-node")).drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    expect(job.tasks.map((t: any) => t.kind)).toEqual(["extract", "match", "verify", "map"]);

    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as any[];
    const pairs = artifacts.filter((a) => a.kind === "matches.indexed.v1").reduce((n, a) => n + a.summary.num_pairs, 0);
    console.log(`${SET}: ${pairs} listed pairs of 45 matched (${rows.length} rows)`);
    expect(listed.length).toBeLessThan(45);
    expect(pairs).toBe(listed.length);

    const result = await scoreAgainstReference(http.client, SET, recon_id);
    console.log(`${SET} (explicit): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.numRegistered).toBeGreaterThanOrEqual(8);
  }, 900_000);
});

/**
 * The hierarchical recipe (spec 2.12 `hierarchical`, 4.7) end to end over real HTTP, computed by
 * the Node runner: real photos uploaded, SIFT, exhaustive matching, verification, then the map
 * task's work units made as the work becomes known: the view graph cut into clusters of at most
 * `cluster_max_size` photos with `cluster_overlap` shared ones, each cluster mapped by the
 * incremental mapper as a shard of its own, then the clusters' models joined by the Sim3 their
 * shared photos give and refined by one bundle adjustment, and the photos no joined cluster model
 * holds registered into the joined model by the incremental mapper continued from it. On
 * opensfm-lund (29 photos) with clusters of at most 12: several clusters, every photo registered
 * in one model, within issue 5's bars against the COLMAP 3.8 reference after a similarity
 * alignment (scripts/reference-sets.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import type { StageArtifact } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { eventLog, httpClient, waitForJob } from "../support/http";
import { scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

let server: Server;
let runner: Runner;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  runner = new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("hierarchical-node"));
});
afterAll(async () => {
  await server?.stop();
});

describe("hierarchical recipe on real photos (Node runner)", () => {
  it("opensfm-lund in clusters of at most 12: each mapped as its own shard, joined into one model within issue 5's bars against COLMAP", async () => {
    const http = httpClient(server.base);
    const set = "opensfm-lund";
    const { job_id, recon_id } = await submitSet(
      http.client,
      set,
      { cluster_max_size: 12, cluster_overlap: 10 },
      undefined,
      "hierarchical",
    );
    await runner.drain();
    const job = await waitForJob(http, job_id);
    const lines = (await eventLog(http.client, job_id)).flatMap((e) =>
      e.kind === "log_line" || e.kind === "warning" ? [String((e as { message: string }).message)] : [],
    );
    console.log(lines.filter((m) => /cluster|joined|sealed|final registration/.test(m)).join("\n"));
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    const map = job.tasks.find((t: any) => t.kind === "map");
    // The partition, at least three clusters (29 photos, at most 12 each), the merge.
    expect(map["x-shards"].total).toBeGreaterThanOrEqual(5);
    expect(map["x-shards"].done).toBe(map["x-shards"].total);

    const result = await scoreAgainstReference(http.client, set, recon_id);
    console.log(`${set} (hierarchical): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.numRegistered).toBe(result.report.numReferenceImages);
    expect(result.failures).toEqual([]);

    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as StageArtifact[];
    const sparse = artifacts.filter((a) => a.kind === "reconstruction.sparse.v1");
    expect(sparse).toHaveLength(1);
    expect(sparse[0]!.summary).toMatchObject({ "x-mapper": "hierarchical", num_models: 1 });
    expect(sparse[0]!.summary["x-clusters"]).toBe(map["x-shards"].total - 2);
    const log = await eventLog(http.client, job_id);
    const phases = new Set(log.flatMap((e) => (e.kind === "phase_progress" ? [(e as { phase: string }).phase] : [])));
    for (const phase of ["hierarchical_cluster", "hierarchical_merge"]) expect(phases).toContain(phase);
  }, 1_200_000);
});

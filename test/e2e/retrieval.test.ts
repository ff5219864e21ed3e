/**
 * Retrieval pairs end to end over real HTTP (2.12 `retrieval`, `retrieval_strategy` dhash and
 * vlad) on sacre-coeur, 10 Internet photos, with the Node runner: a task of the pipeline builds
 * the dataset's index (kind vlad, phase vlad_index) on the runner (dHash first, from the images;
 * VLAD after extraction, from its features), the match task matches the top-`retrieval_k` pairs
 * only, and the model is scored against COLMAP's as the exhaustive pipeline is (pipeline.test.ts).
 * The runner's index is then the one 4.11 queries read. Vocabulary-tree pairs (2.12 `vocabtree`) run the
 * same way: the runner computes each image's bag of words in the shipped tree (scripts/train-vocab.ts,
 * trained on ../shared/datasets/vocab-training only) just before matching.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import { PairsSpec } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { httpClient, waitForJob } from "../support/http";
import { scoreAgainstReference, submitSet } from "../../scripts/reference-sets";

const SET = "sacre-coeur";
const K = 4;
let server: Server;

beforeAll(async () => {
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
});
afterAll(async () => {
  await server?.stop();
});

describe(`retrieval pairs on ${SET} (Node runner)`, () => {
  it(`builds the dHash index on the runner, matches the top-${K} pairs only, and reconstructs`, async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id, dataset_id } = await submitSet(
      http.client,
      SET,
      {},
      PairsSpec.parse({ strategy: "retrieval", retrieval_strategy: "dhash", retrieval_k: K }),
    );
    await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("retrieval-node")).drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    expect(job.tasks.map((t: any) => t.kind)).toEqual(["vlad", "extract", "match", "verify", "map"]);

    // The index the runner built answers similarity queries; the match task matched its pairs only.
    const manifest = (await http("POST", `/v1/datasets/${dataset_id}/similarity:build`)).json;
    expect(manifest).toMatchObject({ built: false, job_id, num_images: 10 });
    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as any[];
    const pairs = artifacts.filter((a) => a.kind === "matches.indexed.v1").reduce((n, a) => n + a.summary.num_pairs, 0);
    console.log(`${SET}: ${pairs} retrieval pairs of 45 (retrieval_k ${K})`);
    expect(pairs).toBeGreaterThanOrEqual((10 * K) / 2);
    expect(pairs).toBeLessThan(45);
    const images = (await http("GET", `/v1/datasets/${dataset_id}/images`)).json.items as any[];
    const near = (await http("GET", `/v1/datasets/${dataset_id}/similarity?image_id=${images[0].image_id}&k=3&include_self=true`)).json;
    expect(near.neighbors[0]).toEqual({ image_id: images[0].image_id, distance: 0 });
    expect(near.neighbors).toHaveLength(3);

    const result = await scoreAgainstReference(http.client, SET, recon_id);
    console.log(`${SET} (retrieval): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.numRegistered).toBeGreaterThanOrEqual(8);
  }, 900_000);

  it(`builds the VLAD index on the runner from the pipeline's features, matches the top-${K} pairs only, and reconstructs`, async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id, dataset_id } = await submitSet(
      http.client,
      SET,
      {},
      PairsSpec.parse({ strategy: "retrieval", retrieval_strategy: "vlad", retrieval_k: K }),
    );
    await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("retrieval-node")).drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    expect(job.tasks.map((t: any) => t.kind)).toEqual(["extract", "vlad", "match", "verify", "map"]);

    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as any[];
    expect(artifacts.find((a) => a.kind === "features.global.v1")).toMatchObject({
      artifact_format: "edgesfm.features.global.vlad.v1",
      summary: { strategy: "vlad", num_images: 10, dim: 4096 },
    });
    const pairs = artifacts.filter((a) => a.kind === "matches.indexed.v1").reduce((n, a) => n + a.summary.num_pairs, 0);
    console.log(`${SET}: ${pairs} VLAD retrieval pairs of 45 (retrieval_k ${K})`);
    expect(pairs).toBeGreaterThanOrEqual((10 * K) / 2);
    expect(pairs).toBeLessThan(45);
    // The pipeline ran at the default features: its index is the dataset's (4.11 rule 2).
    const images = (await http("GET", `/v1/datasets/${dataset_id}/images`)).json.items as any[];
    const near = (
      await http("GET", `/v1/datasets/${dataset_id}/similarity?strategy=vlad&image_id=${images[0].image_id}&k=3&include_self=true`)
    ).json;
    expect(near.neighbors[0]).toEqual({ image_id: images[0].image_id, distance: 0 });
    expect(near.neighbors).toHaveLength(3);
    expect(near.neighbors[1].distance).toBeGreaterThan(0);
    expect(near.neighbors[2].distance).toBeGreaterThanOrEqual(near.neighbors[1].distance);

    const result = await scoreAgainstReference(http.client, SET, recon_id);
    console.log(`${SET} (VLAD retrieval): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.numRegistered).toBeGreaterThanOrEqual(8);
  }, 900_000);

  it(`vocabulary-tree pairs: the runner computes the bags of words in the shipped tree, matches the top-${K} pairs only, and reconstructs`, async () => {
    const http = httpClient(server.base);
    const { job_id, recon_id } = await submitSet(http.client, SET, {}, PairsSpec.parse({ strategy: "vocabtree", retrieval_k: K }));
    await new Runner(new RunnerClient({ baseUrl: server.base }), await nodeRunnerHost("retrieval-node")).drain();
    const job = await waitForJob(http, job_id);
    expect(job.status, JSON.stringify(job.tasks.map((t: any) => [t.kind, t.status, t.error_message]))).toBe("succeeded");
    expect(job.tasks.map((t: any) => t.kind)).toEqual(["extract", "vlad", "match", "verify", "map"]);

    const artifacts = (await http("GET", `/v1/jobs/${job_id}/artifacts?page_size=500`)).json.items as any[];
    const pairs = artifacts.filter((a) => a.kind === "matches.indexed.v1").reduce((n, a) => n + a.summary.num_pairs, 0);
    console.log(`${SET}: ${pairs} vocabulary-tree pairs of 45 (retrieval_k ${K})`);
    expect(pairs).toBeGreaterThanOrEqual((10 * K) / 2);
    expect(pairs).toBeLessThan(45);

    const result = await scoreAgainstReference(http.client, SET, recon_id);
    console.log(`${SET} (vocabulary tree): ${JSON.stringify({ ...result, report: { ...result.report, perImage: undefined } })}`);
    expect(result.report.numRegistered).toBeGreaterThanOrEqual(8);
  }, 900_000);
});

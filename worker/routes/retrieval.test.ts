import { afterEach, describe, expect, it, vi } from "vitest";
import { type Lease, RETRIEVAL_INDEX_ROLE, type TaskKind } from "../../protocol";
import { DEFAULT_VOCAB_TREE_ID } from "../../protocol/wire/bow";
import { DHASH_INDEX_MEDIA_TYPE, DHASH_INDEX_PATH, dhashIndexArtifact, encodeDhashIndex } from "../../protocol/wire/dhash";
import {
  VLAD_DIM,
  VLAD_INDEX_FORMAT,
  VLAD_INDEX_MEDIA_TYPE,
  VLAD_INDEX_PATH,
  encodeVladIndex,
  vladIndexArtifact,
} from "../../protocol/wire/vlad";
import { DigestRunner } from "../../scripts/digest-runner";
import { BASE, call, expectFieldError, expectProblem, expectStatus, selfFetch, uploadBlob, cancelLiveJobs } from "../test/helpers";
import { LUND_01, LUND_02, SACRE_COEUR } from "../test/photos";
import { featuresFile, shardOutputs } from "../test/shard-outputs";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000 });

const PHOTOS = { "lund-01.jpg": LUND_01, "lund-02.jpg": LUND_02, "sacre-coeur.jpg": SACRE_COEUR };
const RETRIEVAL = { strategy: "retrieval", retrieval_strategy: "dhash", retrieval_k: 1 };

/** The photos under names of their own: another manifest, so no cached index or features of another test's dataset apply. */
async function dataset(prefix: string) {
  const p = await expectStatus(call("POST", "/v1/projects", { name: "retrieval" }), 201);
  const entries = [];
  for (const [name, bytes] of Object.entries(PHOTOS)) entries.push({ name: `${prefix}/${name}`, blob_sha: await uploadBlob(bytes) });
  const d = await expectStatus(
    call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } }),
    201,
  );
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string };
}

const runner = async (stages: TaskKind[]) => {
  const r = new DigestRunner({ base: BASE, fetch: selfFetch, name: "retrieval", stages });
  await r.register();
  return r;
};

/** Completes an extract lease with a features file per image (the test stands in for the extraction runner). */
async function completeExtract(r: DigestRunner, lease: Lease) {
  await r.client.complete(lease.lease_id, await shardOutputs(r, lease, "features.local.v1", () => featuresFile(3)));
}

/** The features of the dataset, as a finished features job. */
async function features(did: string) {
  const job = await expectStatus(call("POST", `/v1/datasets/${did}/features`, { spec: {} }), 202);
  const r = await runner(["extract"]);
  await completeExtract(r, (await r.lease())!);
  return job.json.job_id as string;
}

const jobCount = async () => (await call("GET", "/v1/jobs?page_size=1")).json.total as number;

afterEach(cancelLiveJobs);

describe("retrieval pairs (2.12 PairsSpec retrieval, retrieval_strategy dhash)", () => {
  it("a matches stage without an index answers 422 pointing to :build, and creates no job; after :build its lease carries the index", async () => {
    const { did } = await dataset("t1");
    await features(did);
    const before = await jobCount();
    const r = await call("POST", `/v1/datasets/${did}/matches`, { pairs: RETRIEVAL });
    expectFieldError(r, "pairs.strategy", "index_not_built");
    expect(r.json.detail).toContain(`/v1/datasets/${did}/similarity:build?strategy=dhash`);
    expect(await jobCount()).toBe(before);

    const manifest = (await expectStatus(call("POST", `/v1/datasets/${did}/similarity:build`), 200)).json;
    const m = await expectStatus(call("POST", `/v1/datasets/${did}/matches`, { pairs: RETRIEVAL }), 202);
    expect(m.json.task_ids).toHaveLength(1);
    const lease = (await (await runner(["match"])).lease())!;
    expect(lease.task).toMatchObject({ job_id: m.json.job_id, kind: "match" });
    expect(lease.inputs.artifacts[RETRIEVAL_INDEX_ROLE]).toMatchObject({ artifact_id: manifest.artifact_id, kind: "features.global.v1" });
    expect(lease.inputs.artifacts.features?.kind).toBe("features.local.v1");
  });

  it("capabilities: netvlad answers 501 with its own; dhash, vlad and pairs.retrieval are advertised", async () => {
    const { did } = await dataset("t2");
    const r = await call("POST", `/v1/datasets/${did}/matches`, { pairs: { strategy: "retrieval", retrieval_strategy: "netvlad" } });
    expectProblem(r, 501, "capability_unavailable");
    expect(r.json.capability).toBe("similarity.netvlad");
    const { features: flags } = (await call("GET", "/v1/capabilities")).json;
    expect(flags).toMatchObject({
      "pairs.retrieval": true,
      "similarity.dhash": true,
      "similarity.vlad": true,
      "similarity.netvlad": false,
    });
  });

  it("a pipeline without an index builds it first as its own task (vlad, phase vlad_index); a runner's index is then the dataset's (GET similarity reads it)", async () => {
    const { pid, did } = await dataset("t3");
    const job = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" }, pairs: RETRIEVAL }),
      202,
    );
    expect(job.json.task_ids).toHaveLength(5);
    const detail = (await call("GET", `/v1/jobs/${job.json.job_id}`)).json;
    expect(detail.tasks.map((t: { kind: string }) => t.kind)).toEqual(["vlad", "extract", "match", "verify", "map"]);
    expect(detail.tasks[0].status).toBe("pending");

    const r = await runner(["vlad"]);
    const lease: Lease = (await r.lease())!;
    expect(lease.task).toMatchObject({
      job_id: job.json.job_id,
      kind: "vlad",
      phase: "vlad_index",
      params: { similarity: { strategy: "dhash" } },
    });
    // The runner's hashes: sacre-coeur 0 bits from lund-01, lund-02 all 64 away.
    const hashes = ["0000000000000000", "ffffffffffffffff", "0000000000000000"];
    const bytes = encodeDhashIndex(
      lease.inputs.dataset!.images.map((im, i) => ({ name: im.name, content_sha: im.content_sha, dhash: hashes[i]! })),
    );
    const file = {
      path: DHASH_INDEX_PATH,
      blob_sha: await r.upload(lease, bytes),
      byte_size: bytes.byteLength,
      media_type: DHASH_INDEX_MEDIA_TYPE,
    };
    await r.client.complete(lease.lease_id, {
      artifacts: [dhashIndexArtifact(file, 3, lease.inputs.dataset!.manifest_hash)],
      result: null,
    });

    const ids = lease.inputs.dataset!.images.map((im) => im.image_id);
    const near = await expectStatus(call("GET", `/v1/datasets/${did}/similarity?image_id=${ids[0]}&k=2`), 200);
    expect(near.json.neighbors).toEqual([
      { image_id: ids[2], distance: 0 },
      { image_id: ids[1], distance: 64 },
    ]);
    const manifest = (await expectStatus(call("POST", `/v1/datasets/${did}/similarity:build`), 200)).json;
    expect(manifest).toMatchObject({ built: false, job_id: job.json.job_id });
    // Another dataset of the same names and bytes (the same manifest) reuses the index, with its own image ids.
    const twin = await dataset("t3");
    const twinIds = (await call("GET", `/v1/datasets/${twin.did}/images`)).json.items.map((im: { image_id: string }) => im.image_id);
    expect((await expectStatus(call("GET", `/v1/datasets/${twin.did}/similarity?image_id=${twinIds[0]}&k=2`), 200)).json.neighbors).toEqual(
      [
        { image_id: twinIds[2], distance: 0 },
        { image_id: twinIds[1], distance: 64 },
      ],
    );

    // The same pipeline again: the index task is a cache hit, born succeeded; the match task reads its output.
    const again = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        pairs: RETRIEVAL,
        matcher: { max_ratio: 0.7 },
      }),
      202,
    );
    const tasks = (await call("GET", `/v1/jobs/${again.json.job_id}`)).json.tasks;
    expect(tasks[0]).toMatchObject({ kind: "vlad", status: "succeeded", cache_key: detail.tasks[0].cache_key });
  });

  it("a pipeline given features still builds the index first; other pair strategies have no index task", async () => {
    const { pid, did } = await dataset("t4");
    const fjob = await features(did);
    const artifact = (await call("GET", `/v1/jobs/${fjob}/artifacts`)).json.items[0];
    const job = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        pairs: RETRIEVAL,
        input_artifacts: { features: { artifact_id: artifact.artifact_id, kind: artifact.kind } },
      }),
      202,
    );
    expect((await call("GET", `/v1/jobs/${job.json.job_id}`)).json.tasks.map((t: { kind: string }) => t.kind)).toEqual([
      "vlad",
      "match",
      "verify",
      "map",
    ]);
    const plain = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } }),
      202,
    );
    expect((await call("GET", `/v1/jobs/${plain.json.job_id}`)).json.tasks.map((t: { kind: string }) => t.kind)).toEqual([
      "extract",
      "match",
      "verify",
      "map",
    ]);
  });
});

describe("retrieval pairs and similarity with VLAD (2.12 retrieval_strategy vlad, 4.11 rule 2)", () => {
  const VLAD = { strategy: "retrieval", retrieval_strategy: "vlad", retrieval_k: 1 };

  /** Completes a vlad lease with an index: image 0 along e0, image 1 along e1, image 2 halfway between. */
  async function completeVlad(r: DigestRunner, lease: Lease) {
    const images = lease.inputs.dataset!.images;
    const vectors = new Float32Array(3 * VLAD_DIM);
    vectors[0] = 1;
    vectors[VLAD_DIM + 1] = 1;
    vectors[2 * VLAD_DIM] = vectors[2 * VLAD_DIM + 1] = Math.SQRT1_2;
    const bytes = encodeVladIndex({
      codebook: "test",
      images: images.map((im) => ({ name: im.name, content_sha: im.content_sha })),
      dim: VLAD_DIM,
      vectors,
    });
    const file = {
      path: VLAD_INDEX_PATH,
      blob_sha: await r.upload(lease, bytes),
      byte_size: bytes.byteLength,
      media_type: VLAD_INDEX_MEDIA_TYPE,
    };
    await r.client.complete(lease.lease_id, {
      artifacts: [vladIndexArtifact(file, images.length, lease.inputs.dataset!.manifest_hash, "test")],
      result: null,
    });
  }

  it("before :build: a query is 404 and a matches stage 422, both pointing to :build?strategy=vlad; :build is a job of the default extraction then the vlad task, whose index then answers queries and feeds matching", async () => {
    const { pid, did } = await dataset("v1");
    const ids = (await call("GET", `/v1/datasets/${did}/images`)).json.items.map((im: { image_id: string }) => im.image_id) as string[];
    const pointer = `/v1/datasets/${did}/similarity:build?strategy=vlad`;
    const q = await call("GET", `/v1/datasets/${did}/similarity?strategy=vlad&image_id=${ids[0]}&k=2`);
    expectProblem(q, 404, "not_found");
    expect(q.json.detail).toContain(pointer);
    const m = await call("POST", `/v1/datasets/${did}/matches`, { pairs: VLAD });
    expectFieldError(m, "pairs.strategy", "index_not_built");
    expect(m.json.detail).toContain(pointer);

    const built = await expectStatus(call("POST", `/v1/datasets/${did}/similarity:build?strategy=vlad`), 202);
    expect(built.res.headers.get("location")).toBe(`/v1/jobs/${built.json.job_id}`);
    const detail = (await call("GET", `/v1/jobs/${built.json.job_id}`)).json;
    expect(detail.tasks.map((t: { kind: string }) => t.kind)).toEqual(["extract", "vlad"]);
    const r = await runner(["extract", "vlad"]);
    await completeExtract(r, (await r.lease())!);
    const lease = (await r.lease())!;
    expect(lease.task).toMatchObject({ kind: "vlad", phase: "vlad_index", params: { similarity: { strategy: "vlad" } } });
    expect(lease.inputs.upstream.map((u) => u.kind)).toEqual(["extract"]);
    await completeVlad(r, lease);

    const near = await expectStatus(
      call("GET", `/v1/datasets/${did}/similarity?strategy=vlad&image_id=${ids[0]}&k=3&include_self=true`),
      200,
    );
    expect(near.json).toMatchObject({ strategy: "vlad", k: 3 });
    expect(near.json.neighbors.map((n: { image_id: string }) => n.image_id)).toEqual([ids[0], ids[2], ids[1]]);
    expect(near.json.neighbors[1].distance).toBeCloseTo(1 - Math.SQRT1_2, 6);
    expect(near.json.neighbors[2].distance).toBeCloseTo(1, 6);

    // Built: the build again is two cache hits; a matches stage reads the index; a pipeline at the
    // default features reuses both tasks, its vlad task just before matching.
    const again = await expectStatus(call("POST", `/v1/datasets/${did}/similarity:build?strategy=vlad`), 202);
    expect((await call("GET", `/v1/jobs/${again.json.job_id}`)).json.tasks.map((t: { status: string }) => t.status)).toEqual([
      "succeeded",
      "succeeded",
    ]);
    await expectStatus(call("POST", `/v1/datasets/${did}/matches`, { pairs: VLAD }), 202);
    const matchLease = (await (await runner(["match"])).lease())!;
    expect(matchLease.inputs.artifacts[RETRIEVAL_INDEX_ROLE]).toMatchObject({ artifact_format: VLAD_INDEX_FORMAT });
    const pipeline = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" }, pairs: VLAD }),
      202,
    );
    const tasks = (await call("GET", `/v1/jobs/${pipeline.json.job_id}`)).json.tasks as { kind: string; status: string }[];
    expect(tasks.map((t) => [t.kind, t.status])).toEqual([
      ["extract", "succeeded"],
      ["vlad", "succeeded"],
      ["match", "pending"],
      ["verify", "pending"],
      ["map", "pending"],
    ]);

    // force: the index is computed again (the extraction stays a hit).
    const forced = await expectStatus(call("POST", `/v1/datasets/${did}/similarity:build?strategy=vlad&force=true`), 202);
    expect((await call("GET", `/v1/jobs/${forced.json.job_id}`)).json.tasks.map((t: { status: string }) => t.status)).toEqual([
      "succeeded",
      "pending",
    ]);
  });
});

describe("vocabulary-tree pairs (2.12 vocabtree)", () => {
  const TREE = { strategy: "vocabtree", retrieval_k: 2 };

  it("a pipeline computes the bags of words just before matching; a matches stage is the bags task then match; another tree is 422", async () => {
    const { pid, did } = await dataset("w1");
    const fjob = await features(did);
    const { features: flags } = (await call("GET", "/v1/capabilities")).json;
    expect(flags["pairs.vocabtree"]).toBe(true);
    const before = await jobCount();
    const bad = await call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
      dataset_id: did,
      spec: { kind: "incremental" },
      pairs: { ...TREE, vocab_tree_path: "/somewhere/tree.bin" },
    });
    expectFieldError(bad, "pairs.vocab_tree_path", "malformed_vocab_tree_path");
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/matches`, { pairs: { ...TREE, vocab_tree_path: "x" } }),
      "pairs.vocab_tree_path",
    );
    expect(await jobCount()).toBe(before);

    const job = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        pairs: { ...TREE, vocab_tree_path: DEFAULT_VOCAB_TREE_ID },
      }),
      202,
    );
    expect((await call("GET", `/v1/jobs/${job.json.job_id}`)).json.tasks.map((t: { kind: string }) => t.kind)).toEqual([
      "extract",
      "vlad",
      "match",
      "verify",
      "map",
    ]);
    // The features job ran first: the pipeline's extraction is a cache hit, its bags task is leased.
    const lease = (await (await runner(["vlad"])).lease())!;
    expect(lease.task).toMatchObject({ kind: "vlad", phase: "vlad_index", params: { similarity: { strategy: "vocabtree" } } });

    const artifact = (await call("GET", `/v1/jobs/${fjob}/artifacts`)).json.items[0];
    const m = await expectStatus(
      call("POST", `/v1/datasets/${did}/matches`, {
        pairs: TREE,
        input_artifacts: { features: { artifact_id: artifact.artifact_id, kind: artifact.kind } },
      }),
      202,
    );
    expect((await call("GET", `/v1/jobs/${m.json.job_id}`)).json.tasks.map((t: { kind: string }) => t.kind)).toEqual(["vlad", "match"]);
  });

  it("vocab_tree_path 'blob:<sha256>' runs an uploaded tree, which the job holds; unknown, malformed or not a tree is 422", async () => {
    const { pid, did } = await dataset("w2");
    await features(did);
    const submit = (vocab_tree_path: string) =>
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        pairs: { ...TREE, vocab_tree_path },
      });
    const before = await jobCount();
    expectFieldError(await submit(`blob:${"AB".repeat(32)}`), "pairs.vocab_tree_path", "malformed_vocab_tree_path");
    expectFieldError(await submit(`blob:${"0".repeat(64)}`), "pairs.vocab_tree_path", "unknown_vocab_tree");
    const notTree = await uploadBlob(new TextEncoder().encode("{}"));
    expectFieldError(await submit(`blob:${notTree}`), "pairs.vocab_tree_path", "not_a_vocab_tree");
    // Two words of 128 values, one byte each: 256 bytes of base64 where 300 are declared is not a tree either.
    const tree = (nodes: Uint8Array) => ({
      format: "edgesfm.vocab.tree.v1",
      id: "tenant-tree-b2-l1",
      branching: 2,
      depth: 1,
      dim: 128,
      descriptor: "rootsift",
      training: { source: "a test" },
      nodes: btoa(String.fromCharCode(...nodes)),
    });
    const short = await uploadBlob(new TextEncoder().encode(JSON.stringify(tree(new Uint8Array(255)))));
    expectFieldError(await submit(`blob:${short}`), "pairs.vocab_tree_path", "not_a_vocab_tree");
    expect(await jobCount()).toBe(before);

    const bytes = new TextEncoder().encode(JSON.stringify(tree(new Uint8Array(256).map((_, i) => (i < 128 ? 10 : 200)))));
    const sha = await uploadBlob(bytes);
    const job = await expectStatus(submit(`blob:${sha}`), 202);
    expect((await call("GET", `/v1/jobs/${job.json.job_id}`)).json.tasks.map((t: { kind: string }) => t.kind)).toEqual([
      "extract",
      "vlad",
      "match",
      "verify",
      "map",
    ]);
    // The features job ran first: the pipeline's extraction is a cache hit, its bags task is leased.
    const r = await runner(["vlad"]);
    const lease = (await r.lease())!;
    expect(lease.task).toMatchObject({ kind: "vlad", params: { similarity: { strategy: "vocabtree", tree_blob_sha: sha } } });
    expect(new Uint8Array(await r.client.readBlob(lease.lease_id, sha))).toEqual(bytes);
  });
});

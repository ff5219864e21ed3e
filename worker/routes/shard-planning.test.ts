import { afterEach, describe, expect, it, vi } from "vitest";
import { CORE_ARTIFACT_FORMATS, CORE_ARTIFACT_KINDS, type Lease } from "../../protocol";
import { PAIR_LIST_PATH } from "../../protocol/wire/pairs";
import { DigestRunner } from "../../scripts/digest-runner";
import { descriptorEstimate, groupCount, groupOf, imagesPerGroup } from "../services/shards";
import { BASE, call, cancelLiveJobs, jobEvents, selfFetch, textDataset } from "../test/helpers";
import { featuresFile } from "../test/shard-outputs";

// Whole jobs through many Durable Object calls; slow on a loaded machine.
vi.setConfig({ testTimeout: 120_000 });

const newRunner = async (name: string) => {
  const r = new DigestRunner({ base: BASE, fetch: selfFetch, name, stages: ["extract", "vlad", "match", "verify", "map"] });
  await r.register();
  return r;
};
const job = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json;

/**
 * An extraction shard answered with a features file of each image's keypoint count (a SIFT file of N keypoints is
 * 32 + 144 N bytes; the service weighs blocks by these sizes, and checks each file's header against its summary).
 */
async function extract(r: DigestRunner, lease: Lease, keypoints: (name: string) => number) {
  const kind = "features.local.v1";
  const artifacts = [];
  for (const item of lease.shard!.items) {
    const bytes = featuresFile(keypoints(item.images[0]!));
    const file = {
      path: item.path,
      blob_sha: await r.upload(lease, bytes),
      byte_size: bytes.byteLength,
      media_type: "application/octet-stream",
    };
    artifacts.push({
      kind,
      name: "SIFT features",
      uri: null,
      artifact_format: CORE_ARTIFACT_FORMATS[kind],
      schema_version: 1,
      media_type: file.media_type,
      summary: { num_images: 1, num_keypoints: keypoints(item.images[0]!) },
      metadata: {},
      files: [file],
    });
  }
  await r.client.complete(lease.lease_id, { artifacts, result: null });
}

/** An index's pair-list shard answered with `pairs`. */
async function answerPairList(r: DigestRunner, lease: Lease, pairs: [string, string][]) {
  const bytes = new TextEncoder().encode(`# image pairs of the index\n${pairs.map(([a, b]) => `${a} ${b}\n`).join("")}`);
  const kind = "pairs.image_names.v1";
  const media_type = CORE_ARTIFACT_KINDS[kind].media_type;
  const file = { path: PAIR_LIST_PATH, blob_sha: await r.upload(lease, bytes), byte_size: bytes.byteLength, media_type };
  const artifact = {
    kind,
    name: "image pairs",
    uri: null,
    artifact_format: CORE_ARTIFACT_FORMATS[kind],
    schema_version: 1,
    media_type,
    summary: { num_pairs: pairs.length },
    metadata: {},
    files: [file],
  };
  return r.client.complete(lease.lease_id, { artifacts: [artifact], result: null });
}

/** The pairs of `list` in a block item (one image in each of its lists). */
const pairsIn = (list: [string, string][], block: [string[], string[]]) =>
  list.filter(([x, y]) => (block[0].includes(x) && block[1].includes(y)) || (block[1].includes(x) && block[0].includes(y)));

afterEach(cancelLiveJobs);

describe('match and verify shards planned when their inputs exist (runners.md "Shards")', () => {
  it("vocabulary-tree pairs: the first match shard chooses the list; only the blocks holding its pairs follow, heaviest first, verify's with them; a re-run reuses them", async () => {
    const { pid, did } = await textDataset(12);
    // The content groups as planned (services/shards.ts): images of no decodable size are estimated alike.
    const images = (await call("GET", `/v1/datasets/${did}/images?page_size=100`)).json.items as { name: string; content_sha: string }[];
    const groups = groupCount(12, imagesPerGroup(images.map(() => descriptorEstimate({ width: null, height: null }, 8192))));
    const byGroup = Array.from({ length: groups }, (_, g) =>
      images.filter((im) => groupOf(im.content_sha, groups) === g).map((im) => im.name),
    );
    expect(groups).toBe(2);
    // Every pair inside each group, none across: the blocks of the two groups with themselves, not the block between them.
    const list = byGroup.flatMap((g) => g.flatMap((x, i) => g.slice(i + 1).map((y) => [x, y] as [string, string])));
    const blocks = byGroup.filter((g) => g.length > 1).length;
    // Group 0's images have twice the keypoints, so its pairs weigh four times as much (a pair of 8192-keypoint images weighs
    // one unit, a match shard holds 8): each block is a shard of its own.
    const keypoints = (name: string) => (byGroup[0]!.includes(name) ? 8192 : 4096);
    const submit = (retrieval_k: number) =>
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        pairs: { strategy: "vocabtree", retrieval_k },
      });
    const jid = (await submit(1)).json.job_id as string;
    const r = await newRunner("planner");
    const submitted = await job(jid);
    expect(submitted.tasks.map((t: { kind: string }) => t.kind)).toEqual(["extract", "vlad", "match", "verify", "map"]);
    // Before the list exists: the match task is one shard (its list), the verify task has no blocks yet.
    expect(submitted.tasks[2]["x-shards"]).toMatchObject({ total: 1, items: 1 });
    expect(submitted.tasks[3]["x-shards"]).toBeNull();

    let lease = (await r.lease())!;
    for (; lease.task.kind !== "match"; lease = (await r.lease())!) {
      if (lease.task.kind === "extract") await extract(r, lease, keypoints);
      else await r.work(lease);
    }
    expect(lease.shard!.items.map((it) => it.path)).toEqual([PAIR_LIST_PATH]);
    await answerPairList(r, lease, list);

    const planned = (await job(jid)).tasks;
    expect(planned[2]["x-shards"]).toMatchObject({ items: 1 + blocks, total: 1 + blocks, done: 1, items_cached: 0 });
    expect(planned[3]["x-shards"]).toMatchObject({ items: blocks, done: 0 });

    // The blocks, heaviest first: each reads the list, holds its pairs' images only, and all of them hold the list.
    const weights: number[] = [];
    const covered: [string, string][] = [];
    for (lease = (await r.lease())!; lease.task.kind === "match"; lease = (await r.lease())!) {
      let weight = 0;
      for (const item of lease.shard!.items) {
        expect(item.reads?.map((f) => f.path)).toEqual([PAIR_LIST_PATH]);
        const mine = pairsIn(list, item.block!);
        expect(mine.length).toBeGreaterThan(0);
        expect(new Set(item.images)).toEqual(new Set(mine.flat()));
        covered.push(...mine);
        weight += mine.reduce((s, [x, y]) => s + keypoints(x) * keypoints(y), 0);
      }
      weights.push(weight);
      await r.work(lease);
    }
    expect(covered.length).toBe(list.length);
    expect(weights).toEqual([...weights].sort((x, y) => y - x));
    while (lease) {
      await r.work(lease);
      lease = (await r.lease())!;
    }
    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    // The task's artifact is its blocks' files, not the list.
    expect(done.tasks[2].outputs_ref.artifacts[0].files).toHaveLength(blocks);
    const log = await jobEvents(jid);
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
    // Progress counts shards done over those planned so far: never all done while a shard remains.
    const progress = log.filter((e: any) => e.kind === "phase_progress" && e.task_id === done.tasks[2].task_id) as any[];
    expect(progress.map((e) => [e.current, e.total])).toEqual(Array.from({ length: 1 + blocks }, (_, i) => [i + 1, 1 + blocks]));
    expect(
      log.some(
        (e: any) => e.kind === "log_line" && new RegExp(`${list.length} pairs fall in ${blocks} blocks \\(0 reused`).test(e.message),
      ),
    ).toBe(true);

    // Another retrieval_k choosing the same list: the list is chosen again, every block and its verification is reused.
    const again = (await submit(2)).json.job_id as string;
    lease = (await r.lease())!;
    expect(lease.shard!.items.map((it) => it.path)).toEqual([PAIR_LIST_PATH]);
    await answerPairList(r, lease, list);
    const reused = (await job(again)).tasks;
    expect(reused[2]).toMatchObject({ status: "succeeded", "x-shards": { items: 1 + blocks, items_cached: blocks, total: 1, done: 1 } });
    expect(reused[3]).toMatchObject({ status: "succeeded", "x-shards": { items: blocks, items_cached: blocks, total: 0 } });
    expect(reused[2].outputs_ref.artifacts[0].files).toHaveLength(blocks);
    lease = (await r.lease())!;
    expect(lease.task.kind).toBe("map");
  });

  it("a list that names an unknown image fails the task as any invalid result", async () => {
    const { pid, did } = await textDataset(4);
    const jid = (
      await call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        pairs: { strategy: "vocabtree", retrieval_k: 1 },
      })
    ).json.job_id as string;
    const r = await newRunner("planner");
    let lease = (await r.lease())!;
    for (; lease.task.kind !== "match"; lease = (await r.lease())!) await r.work(lease);
    await expect(answerPairList(r, lease, [["img000.jpg", "nobody.jpg"]])).rejects.toMatchObject({ status: 422 });
    const failed = await job(jid);
    expect(failed.status).toBe("failed");
    expect(failed.tasks[2].status).toBe("failed");
  });

  it("exhaustive pairs: once extraction has run, the blocks are weighed by its keypoint counts and packed again, heaviest first", async () => {
    const { pid, did } = await textDataset(12);
    const jid = (await call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } })).json
      .job_id as string;
    // Estimated at about 2,000 descriptors an image, the 66 pairs fit one match shard.
    expect((await job(jid)).tasks[1]["x-shards"]).toMatchObject({ total: 1 });
    const r = await newRunner("packer");
    const keypoints = (name: string) => (name === "img003.jpg" ? 8192 : 4096);
    let lease = (await r.lease())!;
    for (; lease.task.kind === "extract"; lease = (await r.lease())!) await extract(r, lease, keypoints);
    const packed = (await job(jid)).tasks[1]["x-shards"];
    // At 4,096 keypoints a pair weighs a quarter of a unit: the 66 pairs no longer fit one shard.
    expect(packed.total).toBeGreaterThan(1);
    const weights: number[] = [];
    for (; lease.task.kind === "match"; lease = (await r.lease())!) {
      const pairs = lease.shard!.items.flatMap((it) => {
        const [a, b] = it.block!;
        const same = a.join() === b.join();
        return a.flatMap((x, i) => (same ? a.slice(i + 1) : b).map((y) => [x, y] as const));
      });
      weights.push(pairs.reduce((s, [x, y]) => s + keypoints(x) * keypoints(y), 0));
      await r.work(lease);
    }
    expect(weights).toHaveLength(packed.total);
    expect(weights).toEqual([...weights].sort((x, y) => y - x));
    for (; lease; lease = (await r.lease())!) await r.work(lease);
    expect((await job(jid)).status).toBe("succeeded");
    const log = await jobEvents(jid);
    expect(log.some((e: any) => e.kind === "log_line" && /weighed by their features' keypoint counts/.test(e.message))).toBe(true);
  });
});

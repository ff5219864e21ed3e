/**
 * Hierarchical mapping's work units (spec 2.12 `hierarchical`; runners.md "Hierarchical mapping"):
 * a map task whose shards are made after submission. The partition shard's clusters become one
 * shard each, leased by different runners, one of them lost and reclaimed; then one merge shard
 * reads every cluster's file, and its artifact is the task's output. The runners here answer by
 * hand what the real executor computes (browser-runtime/runner/executors/hierarchical.ts). The
 * capability flags stay off (SVC_TEST_CAPABILITIES here) until the computation passes end to end.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Lease, TaskOutputs } from "../../protocol";
import { DigestRunner } from "../../scripts/digest-runner";
import { BASE, call, jobEvents, selfFetch, uploadBlob, cancelLiveJobs } from "../test/helpers";

vi.setConfig({ testTimeout: 60_000 });

const job = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json;

const newRunner = async (name: string) => {
  const r = new DigestRunner({ base: BASE, fetch: selfFetch, name });
  await r.register();
  return r;
};

/** A dataset of n images and a hierarchical pipeline on it; the extract, match and verify tasks done by a digest runner. */
async function hierarchicalJob(n: number, spec: Record<string, unknown> = {}) {
  const p = await call("POST", "/v1/projects", { name: "hierarchical" });
  const d = await call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } });
  const did = d.json.dataset_id as string;
  const salt = Math.random();
  for (let i = 0; i < n; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`image ${i} ${salt}`));
    expect((await call("POST", `/v1/datasets/${did}/images`, { name: `img${i}.jpg`, blob_sha: sha })).status).toBe(201);
  }
  const r = await call("POST", `/v1/projects/${p.json.project_id}/pipelines/hierarchical`, {
    dataset_id: did,
    spec: { kind: "hierarchical", cluster_max_size: 3, cluster_overlap: 1, ...spec },
  });
  expect(r.status).toBe(202);
  const stages = await newRunner("stages");
  let lease = await stages.lease();
  for (; lease && lease.task.kind !== "map"; lease = await stages.lease()) expect(await stages.work(lease)).toBe("completed");
  expect(lease?.shard).toMatchObject({ index: 0, count: 1, items: [{ path: "clusters.json", block: null }] });
  return { jid: r.json.job_id as string, runner: stages, partition: lease! };
}

type Artifact = TaskOutputs["artifacts"][number];

/** Uploads each JSON document under the lease and completes it with one artifact of those files (a cluster's by default). */
async function answer(runner: DigestRunner, lease: Lease, documents: Record<string, unknown>, artifact: Partial<Artifact> = {}) {
  const files: Artifact["files"] = [];
  for (const [path, content] of Object.entries(documents)) {
    const bytes = new TextEncoder().encode(JSON.stringify(content));
    files.push({ path, blob_sha: await runner.upload(lease, bytes), byte_size: bytes.byteLength, media_type: "application/json" });
  }
  const base = { name: "answer", uri: null, schema_version: 1, media_type: "application/json", summary: {}, metadata: {} };
  const cluster = { kind: "reconstruction.sparse.v1", artifact_format: "edgesfm.cluster_models.v1" };
  return runner.client.complete(lease.lease_id, { artifacts: [{ ...base, ...cluster, files, ...artifact }], result: null });
}

const partitionOf = (clusters: string[][]) => ({
  kind: "edgesfm.view_graph_partition.v1",
  artifact_format: "edgesfm.view_graph_partition.v1",
  summary: { clusters },
});

afterEach(cancelLiveJobs);

describe("hierarchical mapping's work units (2.12 hierarchical)", () => {
  it("the partition makes a shard per cluster, leased by two runners, a lost one reclaimed; the merge reads every cluster and is the task's output", async () => {
    const { jid, runner: a, partition } = await hierarchicalJob(7);
    const clusters = [
      ["img0.jpg", "img1.jpg", "img2.jpg", "img3.jpg"],
      ["img3.jpg", "img4.jpg", "img5.jpg", "img2.jpg"],
      ["img6.jpg", "img5.jpg"],
    ];
    await answer(a, partition, { "clusters.json": { clusters } }, partitionOf(clusters));
    const map = () => job(jid).then((j) => j.tasks.at(-1));
    expect(await map()).toMatchObject({ kind: "map", status: "running", "x-shards": { total: 4, done: 1 } });

    // Two runners share the clusters; a third takes one and dies.
    const [b, lost] = [await newRunner("b"), await newRunner("lost")];
    const [l1, l2, l3] = [(await a.lease())!, (await b.lease())!, (await lost.lease())!];
    expect([l1, l2, l3].map((l) => [l.task.kind, l.shard!.index, l.shard!.count])).toEqual([
      ["map", 1, 4],
      ["map", 2, 4],
      ["map", 3, 4],
    ]);
    expect([l1, l2, l3].map((l) => l.shard!.items[0]!.images)).toEqual(clusters);
    expect(l1.shard!.items[0]!.path).toBe("clusters/1.json");
    expect(await (await newRunner("idle")).lease()).toBeNull();
    await answer(a, l1, { "clusters/1.json": { models: [{ n: 1 }] } });
    const stub = env.JOB.get(env.JOB.idFromName(`default/${jid}`));
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET expires_at = 0 WHERE lease_id = ?", l3.lease_id);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await map()).toMatchObject({ status: "running", "x-shards": { total: 4, done: 2 } });
    await answer(b, l2, { "clusters/2.json": { models: [{ n: 2 }] } });
    // Only the lost cluster is leased again; the merge waits for it.
    const again = (await b.lease())!;
    expect(again.shard).toMatchObject({ shard_id: l3.shard!.shard_id, index: 3 });
    expect(await a.lease()).toBeNull();
    await answer(b, again, { "clusters/3.json": { models: [{ n: 3 }] } });

    const merge = (await a.lease())!;
    expect(merge.shard).toMatchObject({ index: 4, count: 5 });
    const [item] = merge.shard!.items;
    expect(item!.path).toBe("reconstruction");
    expect(new Set(item!.images)).toEqual(new Set(clusters.flat()));
    expect(item!.reads!.map((f) => f.path)).toEqual(["clusters/1.json", "clusters/2.json", "clusters/3.json"]);
    // The merge answers the model's files, many in one artifact.
    await answer(
      a,
      merge,
      { "cameras.json": { cameras: [] }, "images.json": { images: [] }, "summary.json": {} },
      { artifact_format: "svc.reconstruction.sparse.v1", summary: { num_models: 1, "x-mapper": "hierarchical" } },
    );

    const done = await job(jid);
    expect(done.status).toBe("succeeded");
    const task = done.tasks.at(-1);
    expect(task["x-shards"]).toMatchObject({ total: 5, done: 5, items: 5, items_cached: 0 });
    expect(task["x-shards"].by_runner).toEqual({ [a.runner!.runner_id]: 3, [b.runner!.runner_id]: 2 });
    // The task's output is the merge's artifact alone.
    expect(task.outputs_ref.artifacts).toHaveLength(1);
    expect(task.outputs_ref.artifacts[0].files.map((f: { path: string }) => f.path)).toEqual([
      "cameras.json",
      "images.json",
      "summary.json",
    ]);
    const listed = (await call("GET", `/v1/jobs/${jid}/artifacts?kind=reconstruction.sparse.v1`)).json.items;
    expect(listed).toHaveLength(1);
    const log = (await jobEvents(jid)).filter((e: any) => e.task_id === task.task_id);
    expect(log.filter((e: any) => e.kind === "phase_started")).toEqual([expect.objectContaining({ phase: "hierarchical_cluster" })]);
    expect(log.filter((e: any) => e.kind === "phase_progress").map((e: any) => [e.current, e.total])).toEqual([
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 5],
      [5, 5],
    ]);
    expect((log.find((e: any) => e.kind === "warning") as any).message).toMatch(
      new RegExp(`expired; its shard ${l3.shard!.shard_id} is queued again`),
    );
    expect(log.find((e: any) => e.kind === "log_line" && /cut into 3 cluster/.test(e.message))).toBeTruthy();
  });

  it("a partition naming an image outside the dataset is refused (422) and fails the task; a cancel stops the clusters not yet leased", async () => {
    const bad = await hierarchicalJob(4);
    const reply = await (async () => {
      try {
        await answer(bad.runner, bad.partition, { "clusters.json": {} }, partitionOf([["img0.jpg", "nope.jpg"]]));
        return null;
      } catch (err) {
        return err as { status?: number; problem?: { errors?: { code: string }[] } };
      }
    })();
    expect(reply).not.toBeNull();
    expect((await job(bad.jid)).status).toBe("failed");

    const { jid, runner, partition } = await hierarchicalJob(4);
    await answer(
      runner,
      partition,
      { "clusters.json": {} },
      partitionOf([
        ["img0.jpg", "img1.jpg"],
        ["img1.jpg", "img2.jpg", "img3.jpg"],
      ]),
    );
    const first = (await runner.lease())!;
    expect(first.shard!.index).toBe(1);
    expect((await call("POST", `/v1/jobs/${jid}:cancel`)).status).toBe(200);
    expect((await runner.heartbeat(first)).directive).toBe("stop");
    await runner.client.release(first.lease_id, "cancel requested");
    const cancelled = await job(jid);
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.tasks.at(-1)).toMatchObject({ status: "cancelled", "x-shards": { total: 3, done: 1 } });
    expect(await runner.lease()).toBeNull();
  });
});

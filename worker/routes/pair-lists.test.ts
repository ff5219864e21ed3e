// Pair lists are artifacts (issue 18): a match shard answers, after each block's matches, the
// block's pair list; the task's artifacts are its matches and its pair list (`pairs.image_names.v1`),
// listed and served by the artifact routes, and reused with the blocks by a later job (cache).
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TaskKind, TaskOutputs } from "../../protocol";
import { encodeMatches } from "../../protocol/wire/matches";
import { blockPairListPath, pairListText } from "../../protocol/wire/pairs";
import { DigestRunner } from "../../scripts/digest-runner";
import { shardResultErrors } from "../storage/job/shards";
import { BASE, call, expectStatus, selfFetch, uploadBlob, cancelLiveJobs } from "../test/helpers";

vi.setConfig({ testTimeout: 60_000 });

const enc = (text: string) => new TextEncoder().encode(text);

afterEach(cancelLiveJobs);

describe("pair lists", () => {
  it("a match task's pair list is an artifact of its own, listed, served, and reused with its blocks by the next job", async () => {
    const pid = (await expectStatus(call("POST", "/v1/projects", { name: "pairs" }), 201)).json.project_id;
    const salt = Math.random();
    const entries = [];
    for (let i = 0; i < 5; i++) entries.push({ name: `img${i}.jpg`, blob_sha: await uploadBlob(enc(`pair list ${i} ${salt}`)) });
    const did = (await expectStatus(call("POST", `/v1/projects/${pid}/datasets`, { name: "d", source: { kind: "upload", entries } }), 201))
      .json.dataset_id;
    const runner = async (stages: TaskKind[]) => {
      const r = new DigestRunner({ base: BASE, fetch: selfFetch, name: "pair-lists", stages });
      await r.register();
      return r;
    };
    // A pipeline with sequential pairs: its extraction done by a digest runner, then its match shard leased.
    const submit = async () =>
      (
        await expectStatus(
          call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
            dataset_id: did,
            spec: { kind: "incremental" },
            pairs: { strategy: "sequential", overlap: 2 },
          }),
          202,
        )
      ).json.job_id as string;
    const jid = await submit();
    await (await runner(["extract"])).drain();
    const matcher = await runner(["match"]);
    const lease = (await matcher.lease())!;
    expect(lease.task).toMatchObject({ job_id: jid, kind: "match" });
    const items = lease.shard!.items;
    // Five photos are one content group: one block, the sequential pairs of the five.
    expect(items.map((it) => it.path)).toEqual(["matches/0-0.bin"]);
    const pairs = [0, 1, 2, 3].flatMap((i) => [1, 2].filter((k) => i + k < 5).map((k) => [`img${i}.jpg`, `img${i + k}.jpg`]));
    const named = pairs.map(([a, b]) => ({ imageName1: a!, imageName2: b! }));
    const text = pairListText("matches/0-0.bin", named);
    const file = async (path: string, bytes: Uint8Array, media_type: string) => ({
      path,
      blob_sha: await matcher.upload(lease, bytes),
      byte_size: bytes.byteLength,
      media_type,
    });
    const artifact = (kind: string, f: Awaited<ReturnType<typeof file>>) => ({
      kind,
      name: kind,
      uri: null,
      artifact_format: `svc.${kind}`,
      schema_version: 1,
      media_type: f.media_type,
      metadata: {},
      summary: { num_pairs: pairs.length },
      files: [f],
    });
    const outputs: TaskOutputs = {
      artifacts: [
        artifact(
          "matches.indexed.v1",
          await file(
            "matches/0-0.bin",
            encodeMatches(named.map((p) => ({ ...p, matches: new Uint32Array([0, 0]) }))),
            "application/x-sfm-matches-v1",
          ),
        ),
        artifact("pairs.image_names.v1", await file(blockPairListPath("matches/0-0.bin")!, enc(text), "text/plain")),
      ],
      result: null,
    };
    await expectStatus(call("POST", `/v1/leases/${lease.lease_id}:complete`, { outputs_ref: outputs }), 204);

    const task = (await call("GET", `/v1/jobs/${jid}`)).json.tasks.find((t: { kind: string }) => t.kind === "match");
    expect(task.status).toBe("succeeded");
    const listed = ((await call("GET", `/v1/jobs/${jid}/artifacts?task_id=${task.task_id}`)).json.items as any[]).filter(
      (a) => a.task_id === task.task_id,
    );
    expect(listed.map((a) => a.kind)).toEqual(["matches.indexed.v1", "pairs.image_names.v1"]);
    const list = listed[1];
    expect(list.files.map((f: { path: string }) => f.path)).toEqual(["pairs/0-0.txt"]);
    expect(list.summary.num_pairs).toBe(7);
    const served = await call("GET", `/v1/artifacts/${list.artifact_id}/content?path=${encodeURIComponent("pairs/0-0.txt")}`);
    expect(served.status).toBe(200);
    const body = await served.res.text();
    expect(body).toBe(text);
    expect(body.split("\n").filter((l) => l && !l.startsWith("#"))).toEqual(pairs.map(([a, b]) => `${a} ${b}`));

    // The same matches again: every block is a cache hit, and the job has its pair list without any runner.
    const again = await submit();
    expect(await matcher.lease()).toBeNull();
    const reusedTask = (await call("GET", `/v1/jobs/${again}`)).json.tasks.find((t: { kind: string }) => t.kind === "match");
    expect(reusedTask.status).toBe("succeeded");
    const reused = ((await call("GET", `/v1/jobs/${again}/artifacts`)).json.items as any[]).filter((a) => a.task_id === reusedTask.task_id);
    expect(reused.map((a) => [a.kind, a.files[0].blob_sha])).toEqual(listed.map((a) => [a.kind, a.files[0].blob_sha]));
  });

  it("a match shard's pair lists follow its matches, one per item, at each block's pair-list path; anything else is refused", () => {
    const items = [
      { key: "a", path: "matches/0-1.bin", images: ["x", "y"], block: [["x"], ["y"]] as [string[], string[]] },
      {
        key: "b",
        path: "matches/1-1.bin",
        images: ["y", "z"],
        block: [
          ["y", "z"],
          ["y", "z"],
        ] as [string[], string[]],
      },
    ];
    const one = (kind: string, path: string) => ({
      kind,
      name: kind,
      uri: null,
      artifact_format: `svc.${kind}`,
      schema_version: 1,
      media_type: "application/octet-stream",
      summary: {},
      metadata: {},
      files: [{ path, blob_sha: "0".repeat(64), byte_size: 1 }],
    });
    const matches = items.map((it) => one("matches.indexed.v1", it.path));
    const lists = ["pairs/0-1.txt", "pairs/1-1.txt"].map((path) => one("pairs.image_names.v1", path));
    const errors = (artifacts: ReturnType<typeof one>[]) => shardResultErrors(items, { artifacts, result: null }).map((e) => e.code);
    expect(errors(matches)).toEqual([]);
    expect(errors([...matches, ...lists])).toEqual([]);
    expect(errors([...matches, lists[1]!, lists[0]!])).toEqual(["shard_path", "shard_path"]);
    expect(errors([...matches, matches[0]!, matches[1]!])).toEqual(["shard_kind", "shard_kind"]);
    expect(errors([...matches, lists[0]!])).toEqual(["shard_items"]);
    // Only a match block has a pair list.
    const extract = [{ key: "e", path: "features/x", images: ["x"], block: null }];
    expect(
      shardResultErrors(extract, {
        artifacts: [one("features.local.v1", "features/x"), one("pairs.image_names.v1", "pairs/x")],
        result: null,
      }).map((e) => e.code),
    ).toEqual(["shard_items"]);
  });
});

import { afterEach, describe, expect, it, vi } from "vitest";
import type { Lease, TaskKind } from "../../protocol";
import { validateFeatures } from "../../protocol/wire/features";
import { DigestRunner } from "../../scripts/digest-runner";
import {
  BASE,
  call,
  deployment,
  expectFieldError,
  expectProblem,
  expectStatus,
  uploadBlob,
  selfFetch,
  cancelLiveJobs,
} from "../test/helpers";
import { enc } from "../test/scene";
import { blockMatches, featuresFile, shardOutputs } from "../test/shard-outputs";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000 });

/** A project with a dataset of `names` (fresh bytes unless `shas` are given). */
async function dataset(names = ["a.jpg", "b.jpg", "c.jpg"], shas?: string[]) {
  const p = await expectStatus(call("POST", "/v1/projects", { name: "inputs" }), 201);
  const entries = [];
  for (const [i, name] of names.entries())
    entries.push({ name, blob_sha: shas?.[i] ?? (await uploadBlob(enc({ name, nonce: Math.random() }))) });
  const d = await expectStatus(
    call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } }),
    201,
  );
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string, shas: entries.map((e) => e.blob_sha) };
}

const runner = async (stages: TaskKind[]) => {
  const r = new DigestRunner({ base: BASE, fetch: selfFetch, name: "inputs", stages });
  await r.register();
  return r;
};

/**
 * Completes a shard lease with one `kind` artifact per item (runners.md "Shards"), a real wire file
 * each (the test stands in for the stage's runner): features of 3 keypoints, other bytes at each
 * call; matches of one pair of the item's block.
 */
async function completeWith(r: DigestRunner, lease: Lease, kind: "features.local.v1" | "matches.indexed.v1") {
  const seed = Math.random();
  const bytes = kind === "features.local.v1" ? () => featuresFile(3, seed) : blockMatches;
  await r.client.complete(lease.lease_id, await shardOutputs(r, lease, kind, bytes));
}

/** A finished single-stage job whose task produced a `kind` artifact; answers the artifact. */
async function produced(
  did: string,
  stage: "features" | "matches",
  kind: "features.local.v1" | "matches.indexed.v1",
  body: Record<string, unknown> = {},
) {
  const job = await expectStatus(call("POST", `/v1/datasets/${did}/${stage}`, { spec: {}, ...body }), 202);
  const r = await runner([stage === "features" ? "extract" : "match"]);
  const lease = (await r.lease())!;
  expect(lease.task.job_id).toBe(job.json.job_id);
  await completeWith(r, lease, kind);
  return (await call("GET", `/v1/jobs/${job.json.job_id}/artifacts`)).json.items[0];
}

const ref = (a: { artifact_id: string; kind: string }) => ({ artifact_id: a.artifact_id, kind: a.kind });
const jobCount = async () => (await call("GET", "/v1/jobs?page_size=1")).json.total as number;

afterEach(cancelLiveJobs);

describe("input_artifacts (2.11) on stage requests (4.6) and pipelines (4.7)", () => {
  it("a matches job reads an earlier job's features: the lease carries the resolved artifact, whose files the runner may read", async () => {
    const { did } = await dataset();
    const features = await produced(did, "features", "features.local.v1");
    const m = await expectStatus(call("POST", `/v1/datasets/${did}/matches`, { input_artifacts: { features: ref(features) } }), 202);
    const r = await runner(["match"]);
    const lease = (await r.lease())!;
    expect(lease.task).toMatchObject({ job_id: m.json.job_id, kind: "match" });
    expect(lease.inputs.artifacts).toEqual({ features });
    expect(lease.inputs.upstream).toEqual([]);
    const bytes = await r.client.readBlob(lease.lease_id, features.files[0].blob_sha);
    expect(validateFeatures(bytes).count).toBe(3);
    await completeWith(r, lease, "matches.indexed.v1");
    const matches = (await call("GET", `/v1/jobs/${m.json.job_id}/artifacts`)).json.items[0];
    expect(matches).toMatchObject({ kind: "matches.indexed.v1", dataset_id: did, task_id: m.json.task_ids[0] });

    // verify reads both; other features give another cache key (the artifacts are inputs of the task).
    const v = await expectStatus(
      call("POST", `/v1/datasets/${did}/verify`, { input_artifacts: { features: ref(features), matches: ref(matches) } }),
      202,
    );
    const vLease = (await (await runner(["verify"])).lease())!;
    expect(vLease.task.job_id).toBe(v.json.job_id);
    expect(Object.keys(vLease.inputs.artifacts).sort()).toEqual(["features", "matches"]);
    const other = await produced(did, "features", "features.local.v1", { spec: { max_num_features: 100 } });
    const m2 = await expectStatus(call("POST", `/v1/datasets/${did}/matches`, { input_artifacts: { features: ref(other) } }), 202);
    const keys = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json.tasks[0];
    expect((await keys(m2.json.job_id)).inputs_hash).not.toBe((await keys(m.json.job_id)).inputs_hash);
    // The same inputs again: a cache hit.
    const again = await expectStatus(call("POST", `/v1/datasets/${did}/matches`, { input_artifacts: { features: ref(features) } }), 202);
    expect((await keys(again.json.job_id)).cache_hit).toBe(true);
  });

  it("a pipeline given artifacts starts after the stages they replace", async () => {
    const { pid, did } = await dataset();
    const features = await produced(did, "features", "features.local.v1");
    const pipeline = (input_artifacts: Record<string, unknown>) =>
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" }, input_artifacts });
    const kinds = async (jid: string) => (await call("GET", `/v1/jobs/${jid}`)).json.tasks.map((t: { kind: string }) => t.kind);
    const a = await expectStatus(pipeline({ features: ref(features) }), 202);
    expect(await kinds(a.json.job_id)).toEqual(["match", "verify", "map"]);
    expect(a.json.recon_id).toEqual(expect.any(String));
    const lease = (await (await runner(["match"])).lease())!;
    expect(lease.inputs.artifacts.features).toEqual(features);
    expectFieldError(await pipeline({ matches: ref(features) }), "input_artifacts.matches.kind", "role_mismatch");
  });

  it("without input_artifacts, matches reads the dataset's latest features (4.6: derived from the dataset)", async () => {
    const { did } = await dataset();
    const before = await jobCount();
    const none = await call("POST", `/v1/datasets/${did}/matches`, {});
    expectFieldError(none, "input_artifacts.features", "stage_not_run");
    expect(none.json.errors[0].message).toContain(`/v1/datasets/${did}/features`);
    expect(await jobCount()).toBe(before);
    await produced(did, "features", "features.local.v1");
    const latest = await produced(did, "features", "features.local.v1", { spec: { max_num_features: 100 } });
    const m = await expectStatus(call("POST", `/v1/datasets/${did}/matches`, {}), 202);
    const lease = (await (await runner(["match"])).lease())!;
    expect(lease.task.job_id).toBe(m.json.job_id);
    expect(lease.inputs.artifacts).toEqual({ features: latest });
  });

  it("without input_artifacts, verify reads the dataset's latest matches and the features they were computed from", async () => {
    const { did } = await dataset();
    await produced(did, "features", "features.local.v1");
    const none = await call("POST", `/v1/datasets/${did}/verify`, {});
    expectFieldError(none, "input_artifacts.matches", "stage_not_run");
    expect(none.json.errors[0].message).toContain(`/v1/datasets/${did}/matches`);
    const features = await produced(did, "features", "features.local.v1", { spec: { max_num_features: 100 } });
    const matches = await produced(did, "matches", "matches.indexed.v1", { input_artifacts: { features: ref(features) } });
    // Newer features than the matches' must not be paired with them.
    await produced(did, "features", "features.local.v1", { spec: { max_num_features: 200 } });
    const leased = async (body: Record<string, unknown>) => {
      const v = await expectStatus(call("POST", `/v1/datasets/${did}/verify`, body), 202);
      const lease = (await (await runner(["verify"])).lease())!;
      expect(lease.task.job_id).toBe(v.json.job_id);
      return lease.inputs.artifacts;
    };
    expect(await leased({})).toEqual({ features, matches });
    expect(await leased({ input_artifacts: { matches: ref(matches) } })).toEqual({ features, matches });
    // Features alone do not say which matches go with them.
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/verify`, { input_artifacts: { features: ref(features) } }),
      "input_artifacts.matches",
      "required",
    );
  });

  it("matches a pipeline computed are verified with the features that pipeline computed", async () => {
    const { pid, did } = await dataset();
    const p = await expectStatus(
      call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } }),
      202,
    );
    const extractRunner = await runner(["extract"]);
    const extract = (await extractRunner.lease())!;
    expect(extract.task.job_id).toBe(p.json.job_id);
    await completeWith(extractRunner, extract, "features.local.v1");
    const matchRunner = await runner(["match"]);
    const match = (await matchRunner.lease())!;
    await completeWith(matchRunner, match, "matches.indexed.v1");
    const own = (await call("GET", `/v1/jobs/${p.json.job_id}/artifacts`)).json.items;
    await expectStatus(call("POST", `/v1/jobs/${p.json.job_id}:cancel?force=true`), 200);
    await produced(did, "features", "features.local.v1", { spec: { max_num_features: 300 } });
    const v = await expectStatus(call("POST", `/v1/datasets/${did}/verify`, {}), 202);
    const lease = (await (await runner(["verify"])).lease())!;
    expect(lease.task.job_id).toBe(v.json.job_id);
    expect(lease.inputs.artifacts.features!.artifact_id).toBe(
      own.find((a: { kind: string }) => a.kind === "features.local.v1").artifact_id,
    );
    expect(lease.inputs.artifacts.matches!.artifact_id).toBe(
      own.find((a: { kind: string }) => a.kind === "matches.indexed.v1").artifact_id,
    );
  });

  it("each invalid reference is rejected with 422 errors[] before any job is created", async () => {
    const { did } = await dataset();
    const features = await produced(did, "features", "features.local.v1");
    const before = await jobCount();
    const matches = (input_artifacts: unknown) => call("POST", `/v1/datasets/${did}/matches`, { input_artifacts });
    expectFieldError(
      await matches({ features: ref(features), "colmap.database": { artifact_id: features.artifact_id, kind: "matches.database.colmap" } }),
      "input_artifacts.colmap.database",
      "unknown_role",
    );
    expectFieldError(
      await matches({ features: ref(features), matches: { artifact_id: features.artifact_id, kind: "matches.indexed.v1" } }),
      "input_artifacts.matches",
      "role_not_accepted",
    );
    expectFieldError(
      await matches({ features: { artifact_id: features.artifact_id, kind: "matches.indexed.v1" } }),
      "input_artifacts.features.kind",
      "role_mismatch",
    );
    expectFieldError(
      await matches({ features: { artifact_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", kind: "features.local.v1" } }),
      "input_artifacts.features.artifact_id",
      "unknown_artifact",
    );
    // A reference whose stated kind is not the artifact's.
    const verify = await call("POST", `/v1/datasets/${did}/verify`, {
      input_artifacts: { features: ref(features), matches: { artifact_id: features.artifact_id, kind: "matches.indexed.v1" } },
    });
    expectFieldError(verify, "input_artifacts.matches.kind", "kind_mismatch");
    // Every failure at once.
    const all = await matches({ features: { artifact_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", kind: "features.local.v1" }, pairs: ref(features) });
    expect(all.json.errors.map((e: { code: string }) => e.code).sort()).toEqual(["role_not_accepted", "unknown_artifact"]);
    expect(await jobCount()).toBe(before);
  });

  it("dataset scope: another dataset's artifact is refused unless its images are the same (equal manifest_hash)", async () => {
    const first = await dataset();
    const features = await produced(first.did, "features", "features.local.v1");
    const other = await dataset(["a.jpg", "b.jpg"]);
    expectFieldError(
      await call("POST", `/v1/datasets/${other.did}/matches`, { input_artifacts: { features: ref(features) } }),
      "input_artifacts.features.artifact_id",
      "dataset_mismatch",
    );
    const twin = await dataset(["a.jpg", "b.jpg", "c.jpg"], first.shas);
    expect((await call("GET", `/v1/projects/${twin.pid}/datasets/${twin.did}`)).json.manifest_hash).toBe(
      (await call("GET", `/v1/projects/${first.pid}/datasets/${first.did}`)).json.manifest_hash,
    );
    await expectStatus(call("POST", `/v1/datasets/${twin.did}/matches`, { input_artifacts: { features: ref(features) } }), 202);
  });

  it("tenant scope: another tenant's artifact id is unknown", async () => {
    const apiKey = deployment({ SVC_AUTH_MODE: "api_key" });
    const key = (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: "inputs-co" }), 201)).json.raw_key;
    const auth = { Authorization: `Bearer ${key}` };
    const { did } = await dataset();
    const features = await produced(did, "features", "features.local.v1");
    const p = await expectStatus(apiKey("POST", "/v1/projects", { name: "theirs" }, auth), 201);
    const sha = await uploadBlob(enc({ theirs: Math.random() }), auth, apiKey);
    const d = await expectStatus(
      apiKey(
        "POST",
        `/v1/projects/${p.json.project_id}/datasets`,
        { name: "d", source: { kind: "upload", entries: [{ name: "a.jpg", blob_sha: sha }] } },
        auth,
      ),
      201,
    );
    const r = await apiKey("POST", `/v1/datasets/${d.json.dataset_id}/matches`, { input_artifacts: { features: ref(features) } }, auth);
    expectFieldError(r, "input_artifacts.features.artifact_id", "unknown_artifact");
    expectProblem(r, 422, "validation");
  });
});

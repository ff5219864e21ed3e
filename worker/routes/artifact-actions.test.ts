import { SELF, env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { StageArtifact } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { DEFAULT_TENANT } from "../context";
import { tenantStore } from "../services/stores";
import { BASE, call, expectFieldError, expectProblem, expectStatus, uploadBlob, cancelLiveJobs } from "../test/helpers";
import { enc, exportRunner, scene, sealedReconstruction } from "../test/scene";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const decoder = new TextDecoder();
let sealed: Awaited<ReturnType<typeof sealedReconstruction>>;
let snapshot: StageArtifact;
/** The scene exported as a COLMAP text model (an artifact of an export job). */
let colmapText: StageArtifact;

async function drain() {
  await (await exportRunner()).drain();
}

const artifactsOf = async (jid: string) => (await call("GET", `/v1/jobs/${jid}/artifacts`)).json.items as StageArtifact[];
const jobCount = async () => (await call("GET", "/v1/jobs?page_size=1")).json.total as number;
const action = (a: { artifact_id: string }, verb: string, body?: unknown) => call("POST", `/v1/artifacts/${a.artifact_id}:${verb}`, body);

beforeAll(async () => {
  sealed = await sealedReconstruction(scene(25, 17));
  snapshot = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?kind=reconstruction.snapshot`)).json.items[0];
  const e = await expectStatus(call("POST", `/v1/reconstructions/${sealed.rid}/export`, { format: "colmap_text" }), 202);
  await drain();
  colmapText = (await artifactsOf(e.json.job_id))[0]!;
});

afterEach(cancelLiveJobs);

describe("POST /v1/artifacts:import (4.10)", () => {
  it("registers a URI without copying bytes, owned by a completed artifact_import job and task", async () => {
    const r = await expectStatus(
      call("POST", "/v1/artifacts:import", {
        project_id: sealed.pid,
        dataset_id: sealed.did,
        kind: "features.hloc_h5",
        name: "hloc features",
        uri: "s3://bucket/feats.h5",
        artifact_format: "hloc.features.h5.v1",
      }),
      201,
    );
    const a = StageArtifact.parse(r.json);
    expect(r.headers.get("Location")).toBe(`/v1/artifacts/${a.artifact_id}`);
    expect(a).toMatchObject({
      project_id: sealed.pid,
      dataset_id: sealed.did,
      recon_id: null,
      uri: "s3://bucket/feats.h5",
      files: [],
      schema_version: 1,
      media_type: "application/octet-stream",
    });
    const job = (await call("GET", `/v1/jobs/${a.job_id}`)).json;
    expect(job).toMatchObject({
      recipe: "artifact_import",
      status: "succeeded",
      tasks: [{ task_id: a.task_id, kind: "artifact_import", status: "succeeded", cache_hit: false }],
    });
    expect(job.tasks[0].outputs_ref.result).toEqual({ uri: "s3://bucket/feats.h5" });
    expect((await call("GET", `/v1/artifacts/${a.artifact_id}`)).json).toEqual(r.json);
    expect(await artifactsOf(a.job_id)).toEqual([r.json]);
    const events = await (await SELF.fetch(`${BASE}/v1/jobs/${a.job_id}/events`)).text();
    expect(events).toContain('"phase":"artifact_import"');
    // The URI is recorded, never dereferenced.
    const content = await call("GET", `/v1/artifacts/${a.artifact_id}/content`);
    expectProblem(content, 404, "not_found");
    expect(content.json.detail).toMatch(/not dereferenced/);
    // Runners read only managed files: a uri-only artifact is no stage input (2.11).
    const remote = await expectStatus(
      call("POST", "/v1/artifacts:import", {
        project_id: sealed.pid,
        dataset_id: sealed.did,
        kind: "features.local.v1",
        name: "remote",
        uri: "https://example.org/f",
        artifact_format: "svc.features.local.v1",
      }),
      201,
    );
    expectFieldError(
      await call("POST", `/v1/datasets/${sealed.did}/matches`, {
        input_artifacts: { features: { artifact_id: remote.json.artifact_id, kind: "features.local.v1" } },
      }),
      "input_artifacts.features.artifact_id",
      "no_managed_files",
    );
  });

  it("registers blobs the tenant already has as the artifact's files; they are served and live with the artifact", async () => {
    const files = [];
    for (const name of ["cameras.txt", "images.txt", "points3D.txt"]) {
      const bytes = new Uint8Array(
        await (await SELF.fetch(`${BASE}/v1/artifacts/${colmapText.artifact_id}/content?path=${name}`)).arrayBuffer(),
      );
      files.push({ path: `sparse/0/${name}`, blob_sha: await uploadBlob(bytes), byte_size: bytes.byteLength, media_type: "text/plain" });
    }
    const r = await expectStatus(
      call("POST", "/v1/artifacts:import", {
        project_id: sealed.pid,
        dataset_id: sealed.did,
        recon_id: sealed.rid,
        kind: "reconstruction.colmap_model",
        name: "their model",
        artifact_format: "colmap.model.text.v1",
        files,
      }),
      201,
    );
    expect(r.json).toMatchObject({ recon_id: sealed.rid, uri: `/v1/artifacts/${r.json.artifact_id}/content`, files });
    const got = new Uint8Array(
      await (await SELF.fetch(`${BASE}/v1/artifacts/${r.json.artifact_id}/content?path=sparse/0/cameras.txt`)).arrayBuffer(),
    );
    expect(decoder.decode(got)).toMatch(/^# Camera list/);
    expect((await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?name=their%20model`)).json.items).toEqual([r.json]);
    // An imported model converts like any other (its files found under sparse/0/), photos listed from its dataset.
    const c = await expectStatus(action(r.json, "convert", { to_format: "nerfstudio.transforms.v1" }), 202);
    await drain();
    const [nerf] = await artifactsOf(c.json.job_id);
    expect(nerf).toMatchObject({
      kind: "reconstruction.nerf_dataset",
      dataset_id: sealed.did,
      metadata: { source_artifact_id: r.json.artifact_id },
    });
    expect(nerf!.files.filter((f) => f.path.startsWith("images/")).map((f) => f.blob_sha)).toEqual(sealed.photos.map((p) => p.blob_sha));
  });

  it("refuses a bad descriptor, unknown owners and files that are not the tenant's blobs, registering nothing", async () => {
    const before = await jobCount();
    const base = {
      project_id: sealed.pid,
      kind: "features.hloc_h5",
      name: "x",
      uri: "https://example.org/x.h5",
      artifact_format: "hloc.features.h5.v1",
    };
    expectFieldError(await call("POST", "/v1/artifacts:import", { ...base, uri: undefined }), "uri");
    expectFieldError(await call("POST", "/v1/artifacts:import", { ...base, uri: "relative/path.h5" }), "uri");
    expectFieldError(
      await call("POST", "/v1/artifacts:import", { ...base, kind: "features.local.v1", artifact_format: "svc.features.global.v1" }),
      "artifact_format",
    );
    expectFieldError(await call("POST", "/v1/artifacts:import", { ...base, artifact_format: "svc.hloc.v1" }), "artifact_format");
    const sha = "0".repeat(64);
    expectFieldError(
      await call("POST", "/v1/artifacts:import", { ...base, files: [{ path: "f.h5", blob_sha: sha, byte_size: 3 }] }),
      "files.0.blob_sha",
      "unknown_blob",
    );
    const real = await uploadBlob(enc({ real: Math.random() }));
    expectFieldError(
      await call("POST", "/v1/artifacts:import", { ...base, files: [{ path: "f.h5", blob_sha: real, byte_size: 1 }] }),
      "files.0.byte_size",
      "size_mismatch",
    );
    expectFieldError(
      await call("POST", "/v1/artifacts:import", { ...base, files: [{ path: "/abs", blob_sha: real, byte_size: 1 }] }),
      "files.0.path",
    );
    expectProblem(await call("POST", "/v1/artifacts:import", { ...base, project_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV" }), 404, "not_found");
    expectProblem(await call("POST", "/v1/artifacts:import", { ...base, dataset_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV" }), 404, "not_found");
    const other = await expectStatus(call("POST", "/v1/projects", { name: "other" }), 201);
    const otherDs = await expectStatus(
      call("POST", `/v1/projects/${other.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }),
      201,
    );
    expectProblem(await call("POST", "/v1/artifacts:import", { ...base, dataset_id: otherDs.json.dataset_id }), 404, "not_found");
    expectProblem(await call("POST", "/v1/artifacts:import", { ...base, recon_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV" }), 404, "not_found");
    const ownDs = await expectStatus(
      call("POST", `/v1/projects/${sealed.pid}/datasets`, { name: "another", source: { kind: "upload", entries: [] } }),
      201,
    );
    expectFieldError(
      await call("POST", "/v1/artifacts:import", { ...base, dataset_id: ownDs.json.dataset_id, recon_id: sealed.rid }),
      "recon_id",
      "scope_mismatch",
    );
    expect(await jobCount()).toBe(before);
  });
});

describe("POST /v1/artifacts/{id}:validate (4.10)", () => {
  it("a sealed snapshot and an export are valid: every file read, hashed and checked as what it is named", async () => {
    const v = (await expectStatus(action(snapshot, "validate"), 200)).json;
    expect(v).toEqual({
      artifact_id: snapshot.artifact_id,
      valid: true,
      errors: [],
      checked: { files: 4, bytes: snapshot.files.reduce((s, f) => s + f.byte_size, 0), documents: 4 },
    });
    expect((await action(colmapText, "validate")).json).toMatchObject({ valid: true, checked: { files: 3, documents: 0 } });
    expectProblem(await call("POST", "/v1/artifacts/01ARZ3NDEKTSV4RRFFQ69G5FAV:validate"), 404, "not_found");
  });

  it("reports each problem: bytes that are not the named document, changed or missing bytes, a descriptor outside the vocabulary", async () => {
    const bad = async (path: string, bytes: Uint8Array, kind = "testing.bundle", format = "testing.bundle.v1") => {
      const sha = await uploadBlob(bytes);
      const r = await expectStatus(
        call("POST", "/v1/artifacts:import", {
          project_id: sealed.pid,
          kind,
          name: path,
          artifact_format: format,
          files: [{ path, blob_sha: sha, byte_size: bytes.byteLength }],
        }),
        201,
      );
      return { artifact: r.json as StageArtifact, sha };
    };
    const json = await bad("manifest.json", new TextEncoder().encode(`{"not": json ${Math.random()}`));
    expect((await action(json.artifact, "validate")).json).toMatchObject({
      valid: false,
      errors: [{ path: "files.0", code: "invalid_document" }],
      checked: { files: 1, documents: 1 },
    });
    const features = await bad("features/a.jpg", enc({ not: "features", n: Math.random() }), "features.local.v1", "svc.features.local.v1");
    expect((await action(features.artifact, "validate")).json.errors).toEqual([
      expect.objectContaining({ path: "files.0", code: "invalid_document", message: expect.stringMatching(/features/) }),
    ]);

    // The bytes in storage changed under the artifact, then vanished.
    const ok = await bad("notes.json", enc({ fine: Math.random() }));
    expect((await action(ok.artifact, "validate")).json.valid).toBe(true);
    const key = `t/${DEFAULT_TENANT}/blobs/${ok.sha}`;
    await env.BLOBS.put(key, enc({ tampered: true, padding: "x".repeat(50) }));
    const tampered = (await action(ok.artifact, "validate")).json;
    expect(tampered.errors.map((e: { code: string }) => e.code).sort()).toEqual(["sha_mismatch", "size_mismatch"]);
    await env.BLOBS.delete(key);
    expect((await action(ok.artifact, "validate")).json.errors).toEqual([
      expect.objectContaining({ path: "files.0.blob_sha", code: "missing_bytes" }),
    ]);

    // A stored descriptor outside the core vocabulary (2.11 rules 1-2).
    await runInDurableObject(tenantStore(env, DEFAULT_TENANT), (_o, state) => {
      const row = state.storage.sql
        .exec<{ d: string }>("SELECT descriptor_json AS d FROM artifacts WHERE artifact_id = ?", json.artifact.artifact_id)
        .one();
      const d = { ...JSON.parse(row.d), kind: "features.local.v1", artifact_format: "svc.matches.indexed.v1" };
      state.storage.sql.exec(
        "UPDATE artifacts SET descriptor_json = ? WHERE artifact_id = ?",
        JSON.stringify(d),
        json.artifact.artifact_id,
      );
    });
    expect((await action(json.artifact, "validate")).json.errors.map((e: { path: string }) => e.path)).toContain("artifact_format");
  });
});

describe(":conversionPlan and :convert (4.10)", () => {
  it("plans the shortest path, preferring the earlier accepted format; refuses impossible and lossy-when-lossless plans", async () => {
    const ply = (await expectStatus(action(snapshot, "conversionPlan", { to_format: "ply.binary_little_endian.v1" }), 200)).json;
    expect(ply).toMatchObject({
      artifact_id: snapshot.artifact_id,
      from_format: "svc.reconstruction.snapshot",
      to_format: "ply.binary_little_endian.v1",
      to_kind: "reconstruction.point_cloud",
      lossless: false,
    });
    expect(ply.steps).toEqual([
      {
        from_format: "svc.reconstruction.snapshot",
        to_format: "ply.binary_little_endian.v1",
        to_kind: "reconstruction.point_cloud",
        lossless: false,
        via: { export: "ply" },
      },
    ]);
    const two = (await action(colmapText, "conversionPlan", { accepted_formats: ["ply.binary_little_endian.v1"] })).json;
    expect(two.steps.map((s: { to_format: string }) => s.to_format)).toEqual([
      "svc.reconstruction.snapshot",
      "ply.binary_little_endian.v1",
    ]);
    expect((await action(snapshot, "conversionPlan", { accepted_formats: ["kapture.v1_1", "visualsfm.nvm_v3.v1"] })).json.to_format).toBe(
      "kapture.v1_1",
    );
    expect((await action(snapshot, "conversionPlan", { to_format: "colmap.model.text.v1", require_lossless: true })).json).toMatchObject({
      lossless: true,
    });
    expect((await action(colmapText, "conversionPlan", { accepted_formats: ["colmap.model.text.v1"] })).json.steps).toEqual([]);

    expectFieldError(
      await action(snapshot, "conversionPlan", { to_format: "ply.binary_little_endian.v1", require_lossless: true }),
      "require_lossless",
      "lossless_impossible",
    );
    expectFieldError(await action(snapshot, "conversionPlan", { to_format: "image.jpeg.v1" }), "to_format", "no_conversion_path");
    expectFieldError(
      await action(snapshot, "conversionPlan", {
        accepted_formats: ["ply.binary_little_endian.v1"],
        to_kind: "reconstruction.nerf_dataset",
      }),
      "accepted_formats",
      "no_conversion_path",
    );
    expectFieldError(await action(snapshot, "conversionPlan", {}), "to_format", "required");
    expectProblem(await call("POST", "/v1/artifacts/01ARZ3NDEKTSV4RRFFQ69G5FAV:conversionPlan", { to_format: "x.y" }), 404, "not_found");
  });

  it("converts in one convert_artifact task, each step feeding the next; the result is an artifact of the job", async () => {
    const before = await jobCount();
    expectFieldError(
      await action(colmapText, "convert", { to_format: "ply.binary_little_endian.v1", require_lossless: true }),
      "require_lossless",
      "lossless_impossible",
    );
    expectFieldError(await action(colmapText, "convert", { to_format: "image.jpeg.v1" }), "to_format", "no_conversion_path");
    expectFieldError(await action(colmapText, "convert", { to_format: "colmap.model.text.v1" }), "to_format", "already_in_format");
    const uriOnly = await expectStatus(
      call("POST", "/v1/artifacts:import", {
        project_id: sealed.pid,
        kind: "reconstruction.colmap_model",
        name: "remote",
        uri: "s3://b/m",
        artifact_format: "colmap.model.text.v1",
      }),
      201,
    );
    const afterImport = await jobCount();
    expect(afterImport).toBe(before + 1);
    expectFieldError(
      await action(uriOnly.json, "convert", { to_format: "ply.binary_little_endian.v1" }),
      "artifact_id",
      "no_managed_files",
    );
    expect(await jobCount()).toBe(afterImport);

    // COLMAP text -> snapshot -> PLY, in one task.
    const c = await expectStatus(action(colmapText, "convert", { to_format: "ply.binary_little_endian.v1" }), 202);
    expect(c.headers.get("Location")).toBe(`/v1/jobs/${c.json.job_id}`);
    expect(c.json.recon_id).toBe(sealed.rid);
    await drain();
    const job = (await call("GET", `/v1/jobs/${c.json.job_id}`)).json;
    expect(job).toMatchObject({
      recipe: "convert_artifact",
      status: "succeeded",
      tasks: [{ kind: "convert_artifact", status: "succeeded" }],
    });
    const [ply] = await artifactsOf(c.json.job_id);
    expect(ply).toMatchObject({
      kind: "reconstruction.point_cloud",
      artifact_format: "ply.binary_little_endian.v1",
      name: "colmap_text as ply.binary_little_endian.v1",
      recon_id: sealed.rid,
      metadata: {
        steps: ["svc.reconstruction.snapshot", "ply.binary_little_endian.v1"],
        source_artifact_id: colmapText.artifact_id,
        lossless: false,
      },
    });
    const bytes = new Uint8Array(await (await SELF.fetch(`${BASE}/v1/artifacts/${ply!.artifact_id}/content`)).arrayBuffer());
    expect(decoder.decode(bytes.subarray(0, 60))).toMatch(/element vertex 25\n/);
    const events = await (await SELF.fetch(`${BASE}/v1/jobs/${c.json.job_id}/events`)).text();
    expect(events).toContain('"kind":"phase_started","phase":"artifact_conversion"');

    // COLMAP text back to a snapshot artifact: valid, with the scene's points.
    const s = await expectStatus(action(colmapText, "convert", { accepted_formats: ["svc.reconstruction.snapshot"], name: "back" }), 202);
    await drain();
    const [back] = await artifactsOf(s.json.job_id);
    expect(back).toMatchObject({ kind: "reconstruction.snapshot", artifact_format: "svc.reconstruction.snapshot", name: "back" });
    expect(back!.files.map((f) => f.path)).toEqual(["cameras.json", "images.json", "points.bin", "summary.json"]);
    expect((await action(back!, "validate")).json).toMatchObject({ valid: true, checked: { documents: 4 } });
    const points = new Uint8Array(
      await (await SELF.fetch(`${BASE}/v1/artifacts/${back!.artifact_id}/content?path=points.bin`)).arrayBuffer(),
    );
    expect(decodePoints(points).count).toBe(25);
  });
});

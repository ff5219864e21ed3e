import { SELF, env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { CORE_ARTIFACT_FORMATS, StageArtifact } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { readTar } from "../../protocol/wire/tar";
import { DigestRunner } from "../../scripts/digest-runner";
import { DEFAULT_TENANT } from "../context";
import { tenantStore } from "../services/stores";
import {
  BASE,
  call,
  collectGarbage,
  deployment,
  expectProblem,
  expectStatus,
  uploadBlob,
  selfFetch,
  cancelLiveJobs,
} from "../test/helpers";
import { enc, scene, sealedReconstruction } from "../test/scene";

// Whole jobs run through the Durable Objects; slow on a loaded machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const bytesOf = async (path: string, headers: Record<string, string> = {}) => {
  const res = await SELF.fetch(`${BASE}${path}`, { headers });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
};

/** A features job on a fresh dataset of `n` images, computed by a DigestRunner. */
async function featuresJob(n = 2, reuse?: { did: string }) {
  let did = reuse?.did;
  if (!did) {
    const p = await expectStatus(call("POST", "/v1/projects", { name: "artifacts" }), 201);
    const entries = [];
    for (let i = 0; i < n; i++) entries.push({ name: `img${i}.jpg`, blob_sha: await uploadBlob(enc({ image: i, nonce: Math.random() })) });
    did = (
      await expectStatus(
        call("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries } }),
        201,
      )
    ).json.dataset_id as string;
  }
  const job = await expectStatus(call("POST", `/v1/datasets/${did}/features`, { spec: {} }), 202);
  const runner = new DigestRunner({ base: BASE, fetch: selfFetch, name: "artifacts", stages: ["extract"] });
  await runner.register();
  await runner.drain();
  return { did, jid: job.json.job_id as string, task_id: job.json.task_ids[0] as string };
}

const jobArtifacts = async (jid: string, query = "") => (await expectStatus(call("GET", `/v1/jobs/${jid}/artifacts${query}`), 200)).json;

afterEach(cancelLiveJobs);

describe("the artifact vocabulary (2.11, 4.10)", () => {
  it("/openapi.json documents the artifact routes", async () => {
    const paths = Object.keys((await call("GET", "/openapi.json")).json.paths);
    for (const p of [
      "/v1/artifacts/kinds",
      "/v1/artifacts/formats",
      "/v1/artifacts/{artifact_id}",
      "/v1/artifacts/{artifact_id}/content",
      "/v1/jobs/{jid}/artifacts",
      "/v1/reconstructions/{rid}/artifacts",
      "/v1/artifacts:import",
      "/v1/artifacts/{artifact_id}:validate",
      "/v1/artifacts/{artifact_id}:conversionPlan",
      "/v1/artifacts/{artifact_id}:convert",
      "/v1/reconstructions/{rid}/export",
    ]) {
      expect(paths).toContain(p);
    }
  });

  it("GET /v1/artifacts/kinds and /formats list the reserved core kinds and their svc.* formats as pages", async () => {
    const kinds = (await expectStatus(call("GET", "/v1/artifacts/kinds?page_size=500"), 200)).json;
    expect(kinds.total).toBe(Object.keys(CORE_ARTIFACT_FORMATS).length);
    expect(kinds.next_page_token).toBeNull();
    const byKind = Object.fromEntries(kinds.items.map((k: any) => [k.kind, k]));
    expect(byKind["features.local.v1"]).toMatchObject({
      default_format: "svc.features.local.v1",
      media_type: "application/x-sfm-features-v1",
    });
    expect(byKind["reconstruction.snapshot"]).toMatchObject({ default_format: "svc.reconstruction.snapshot" });
    for (const k of kinds.items) expect(k.description.length).toBeGreaterThan(10);

    const formats = (await call("GET", "/v1/artifacts/formats")).json;
    expect(formats.items.map((f: any) => f.artifact_format).sort()).toEqual(Object.values(CORE_ARTIFACT_FORMATS).sort());
    for (const f of formats.items) expect(f.artifact_format).toMatch(/^svc\./);

    const first = (await call("GET", "/v1/artifacts/kinds?page_size=4")).json;
    expect(first.items).toHaveLength(4);
    const rest = (await call("GET", `/v1/artifacts/kinds?page_size=500&page_token=${first.next_page_token}`)).json;
    expect([...first.items, ...rest.items]).toEqual(kinds.items);
    expectProblem(await call("GET", "/v1/artifacts/kinds?page_token=nope"), 422, "validation");
  });
});

describe("the artifact registry (2.11, 4.8, 4.10)", () => {
  it("a completed task's output becomes a StageArtifact owned by its job and task, scoped to its project and dataset", async () => {
    const { did, jid, task_id } = await featuresJob(2);
    const page = await jobArtifacts(jid);
    expect(page.total).toBe(1);
    const a = StageArtifact.parse(page.items[0]);
    const project = (await call("GET", `/v1/jobs/${jid}`)).json.project_id;
    expect(a).toMatchObject({
      job_id: jid,
      task_id,
      project_id: project,
      dataset_id: did,
      recon_id: null,
      kind: "digests.image_sha256",
      name: "image digests",
    });
    // Extraction is sharded by image: one file per image (runners.md "Shards").
    expect(a.files).toEqual(
      ["features/img0.jpg", "features/img1.jpg"].map((path) => expect.objectContaining({ path, media_type: "application/json" })),
    );
    expect(a._links.content!.href).toBe(`/v1/artifacts/${a.artifact_id}/content`);
    expect((await call("GET", `/v1/artifacts/${a.artifact_id}`)).json).toEqual(page.items[0]);
    expect(a.uri).toBe(`/v1/artifacts/${a.artifact_id}/content`);
    // The task's own outputs_ref is the descriptor the artifact holds.
    const task = (await call("GET", `/v1/jobs/${jid}`)).json.tasks[0];
    expect(task.outputs_ref.artifacts[0].files).toEqual(a.files);
  });

  it("uri is always a string (2.11): the content route for artifacts stored here, an import's recorded uri as given", async () => {
    const { jid } = await featuresJob(1);
    const stored = (await jobArtifacts(jid)).items[0];
    expect(stored.uri).toBe(`/v1/artifacts/${stored.artifact_id}/content`);
    expect((await bytesOf(stored.uri)).res.status).toBe(200);
    const project = (await call("GET", `/v1/jobs/${jid}`)).json.project_id;
    const files = stored.files;
    const base = { project_id: project, kind: "digests.image_sha256", name: "imported", artifact_format: "testrunner.image_digests.v1" };
    const withFiles = await expectStatus(call("POST", "/v1/artifacts:import", { ...base, files }), 201);
    expect(withFiles.json.uri).toBe(`/v1/artifacts/${withFiles.json.artifact_id}/content`);
    const remote = await expectStatus(call("POST", "/v1/artifacts:import", { ...base, uri: "s3://bucket/digests.json" }), 201);
    expect(remote.json.uri).toBe("s3://bucket/digests.json");
    for (const a of [stored, withFiles.json, remote.json])
      expect(typeof (await call("GET", `/v1/artifacts/${a.artifact_id}`)).json.uri).toBe("string");
  });

  it("/content serves a one-file artifact with its SHA-256 ETag, 304, Range 206 and download=true", async () => {
    const { jid } = await featuresJob(1);
    const a = (await jobArtifacts(jid)).items[0];
    const file = a.files[0];
    const whole = await bytesOf(`/v1/artifacts/${a.artifact_id}/content`);
    expect(whole.res.status).toBe(200);
    expect(whole.res.headers.get("ETag")).toBe(`"${file.blob_sha}"`);
    expect(whole.res.headers.get("Content-Type")).toBe("application/json");
    expect(whole.res.headers.get("Cache-Control")).toBe("private, max-age=31536000, immutable");
    expect(whole.res.headers.get("Content-Disposition")).toBeNull();
    expect(whole.bytes.byteLength).toBe(file.byte_size);
    expect(JSON.parse(new TextDecoder().decode(whole.bytes)).images).toHaveLength(1);

    expect((await bytesOf(`/v1/artifacts/${a.artifact_id}/content`, { "If-None-Match": `"${file.blob_sha}"` })).res.status).toBe(304);
    const part = await bytesOf(`/v1/artifacts/${a.artifact_id}/content`, { Range: "bytes=2-9" });
    expect(part.res.status).toBe(206);
    expect(part.res.headers.get("Content-Range")).toBe(`bytes 2-9/${file.byte_size}`);
    expect(part.bytes).toEqual(whole.bytes.subarray(2, 10));
    const dl = await bytesOf(`/v1/artifacts/${a.artifact_id}/content?download=true&path=features/img0.jpg`);
    expect(dl.res.headers.get("Content-Disposition")).toBe('attachment; filename="img0.jpg"');
    expect(dl.bytes).toEqual(whole.bytes);

    expectProblem(await call("GET", `/v1/artifacts/${a.artifact_id}/content?path=nope.json`), 404, "not_found");
    expectProblem(await call("GET", `/v1/artifacts/${a.artifact_id}/content?download=maybe`), 422, "validation");
    expectProblem(await call("GET", "/v1/artifacts/01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "not_found");
    expectProblem(await call("GET", "/v1/artifacts/01ARZ3NDEKTSV4RRFFQ69G5FAV/content"), 404, "not_found");
  });

  it("a cache-hit task lists artifacts of its own, with the same files as the task that computed them", async () => {
    const first = await featuresJob(2);
    const again = await featuresJob(2, { did: first.did });
    const job = (await call("GET", `/v1/jobs/${again.jid}`)).json;
    expect(job).toMatchObject({ status: "succeeded", tasks: [{ cache_hit: true }] });
    const [a] = (await jobArtifacts(first.jid)).items;
    const [b] = (await jobArtifacts(again.jid)).items;
    expect(b.artifact_id).not.toBe(a.artifact_id);
    expect(b).toMatchObject({ job_id: again.jid, task_id: again.task_id, kind: a.kind, files: a.files });
  });

  it("listings filter by kind, task_id and name (exact match) and paginate; unknown owners are 404", async () => {
    const { jid, task_id } = await featuresJob(1);
    expect((await jobArtifacts(jid, `?kind=digests.image_sha256&task_id=${task_id}&name=image%20digests`)).total).toBe(1);
    expect((await jobArtifacts(jid, "?kind=digests")).total).toBe(0);
    expect((await jobArtifacts(jid, "?name=image")).total).toBe(0);
    expect((await jobArtifacts(jid, "?task_id=01ARZ3NDEKTSV4RRFFQ69G5FAV")).total).toBe(0);
    expectProblem(await call("GET", "/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/artifacts"), 404, "not_found");
    expectProblem(await call("GET", "/v1/reconstructions/01ARZ3NDEKTSV4RRFFQ69G5FAV/artifacts"), 404, "not_found");
    expectProblem(await call("GET", `/v1/jobs/${jid}/artifacts?page_size=0`), 422, "validation");
  });

  it("another tenant's artifact is absent (404), in api_key mode", async () => {
    const { jid } = await featuresJob(1);
    const a = (await jobArtifacts(jid)).items[0];
    const apiKey = deployment({ SVC_AUTH_MODE: "api_key" });
    const key = (await expectStatus(call("POST", "/v1/admin/api-keys", { tenant_id: "other-co" }), 201)).json.raw_key;
    const auth = { Authorization: `Bearer ${key}` };
    expectProblem(await apiKey("GET", `/v1/artifacts/${a.artifact_id}`, undefined, auth), 404, "not_found");
    expectProblem(await apiKey("GET", `/v1/artifacts/${a.artifact_id}/content`, undefined, auth), 404, "not_found");
    expectProblem(await apiKey("GET", `/v1/jobs/${jid}/artifacts`, undefined, auth), 404, "not_found");
  });
});

describe("snapshots and submodels as artifacts (2.11 core kinds)", () => {
  let sealed: Awaited<ReturnType<typeof sealedReconstruction>>;
  beforeAll(async () => {
    sealed = await sealedReconstruction(scene(30));
  });

  it("a sealed snapshot is a reconstruction.snapshot artifact and its component a reconstruction.submodel, listed with the reconstruction's other artifacts", async () => {
    const page = (await expectStatus(call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?page_size=500`), 200)).json;
    const kinds = page.items.map((a: any) => a.kind).sort();
    expect(kinds).toEqual([
      "digests.image_sha256",
      "digests.image_sha256",
      "digests.image_sha256",
      "reconstruction.snapshot",
      "reconstruction.sparse.v1",
      "reconstruction.submodel",
    ]);
    const snap = page.items.find((a: any) => a.kind === "reconstruction.snapshot");
    const sub = page.items.find((a: any) => a.kind === "reconstruction.submodel");
    const mapTask = (await call("GET", `/v1/jobs/${sealed.jid}`)).json.tasks.find((t: any) => t.kind === "map");
    for (const a of [snap, sub]) {
      expect(a).toMatchObject({
        job_id: sealed.jid,
        task_id: mapTask.task_id,
        recon_id: sealed.rid,
        dataset_id: sealed.did,
        schema_version: 1,
      });
      expect(a.artifact_format).toBe(CORE_ARTIFACT_FORMATS[a.kind as "reconstruction.snapshot"]);
      expect(a.files.map((f: any) => f.path)).toEqual(["cameras.json", "images.json", "points.bin", "summary.json"]);
    }
    expect(snap.metadata).toEqual({ recon_id: sealed.rid, seq: 1, submodel_idx: null });
    expect(sub.metadata).toEqual({ recon_id: sealed.rid, seq: 1, submodel_idx: 0 });
    expect(snap.summary).toMatchObject({ num_reg_images: 3, num_points3D: 30 });
    const onlySnapshots = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?kind=reconstruction.snapshot`)).json;
    expect(onlySnapshots.items).toEqual([snap]);
  });

  it("/content of a multi-file artifact is one tar archive of its files (Range, 304, download=true)", async () => {
    const [snap] = (await call("GET", `/v1/reconstructions/${sealed.rid}/artifacts?kind=reconstruction.snapshot`)).json.items;
    const whole = await bytesOf(`/v1/artifacts/${snap.artifact_id}/content?download=true`);
    expect(whole.res.status).toBe(200);
    expect(whole.res.headers.get("Content-Type")).toBe("application/x-tar");
    expect(whole.res.headers.get("Content-Disposition")).toBe('attachment; filename="snapshot_1.tar"');
    const files = readTar(whole.bytes);
    expect([...files.keys()]).toEqual(["cameras.json", "images.json", "points.bin", "summary.json"]);
    expect(decodePoints(files.get("points.bin")!).count).toBe(30);
    expect(JSON.parse(new TextDecoder().decode(files.get("cameras.json")!))).toEqual(sealed.model.cameras);

    const etag = whole.res.headers.get("ETag")!;
    expect(etag).toMatch(/^"tar-[0-9a-f]{64}"$/);
    expect((await bytesOf(`/v1/artifacts/${snap.artifact_id}/content`, { "If-None-Match": etag })).res.status).toBe(304);
    // A range across a header, a file and padding reads the same bytes as the whole.
    const part = await bytesOf(`/v1/artifacts/${snap.artifact_id}/content`, { Range: "bytes=500-2100" });
    expect(part.res.status).toBe(206);
    expect(part.bytes).toEqual(whole.bytes.subarray(500, 2101));
    const tail = await bytesOf(`/v1/artifacts/${snap.artifact_id}/content`, { Range: "bytes=-1030" });
    expect(tail.bytes).toEqual(whole.bytes.subarray(whole.bytes.length - 1030));
    expect((await bytesOf(`/v1/artifacts/${snap.artifact_id}/content`, { Range: `bytes=${whole.bytes.length}-` })).res.status).toBe(416);
    const one = await bytesOf(`/v1/artifacts/${snap.artifact_id}/content?path=points.bin`);
    expect(one.bytes).toEqual(files.get("points.bin"));
  });

  it("artifacts hold their blobs: the bytes outlive nothing but the project, and go with it", async () => {
    const own = await sealedReconstruction(scene(12, 3));
    const filesOf = async (rid: string) =>
      (await call("GET", `/v1/reconstructions/${rid}/artifacts?page_size=500`)).json.items as StageArtifact[];
    const items = await filesOf(own.rid);
    // (Both scenes have the same cameras.json: that blob stays, held by the other project.)
    const shared = new Set((await filesOf(sealed.rid)).flatMap((a) => a.files.map((f) => f.blob_sha)));
    const shas = [...new Set(items.flatMap((a) => a.files.map((f) => f.blob_sha)))].filter((sha) => !shared.has(sha));
    expect(shas.length).toBeGreaterThan(5);
    const refcounts = async () =>
      runInDurableObject(tenantStore(env, DEFAULT_TENANT), (_o, state) =>
        shas.map(
          (sha) => state.storage.sql.exec<{ n: number }>("SELECT COALESCE(MAX(refcount), 0) AS n FROM blobs WHERE sha = ?", sha).one().n,
        ),
      );
    const held = await refcounts();
    // Each file is held by the job that made it, the reconstruction (snapshot files) and each artifact listing it.
    for (const n of held) expect(n).toBeGreaterThanOrEqual(2);
    expect((await call("DELETE", `/v1/projects/${own.pid}`)).status).toBe(204);
    await collectGarbage();
    expect(await refcounts()).toEqual(shas.map(() => 0));
    for (const a of items) expectProblem(await call("GET", `/v1/artifacts/${a.artifact_id}`), 404, "not_found");
    expect(await env.BLOBS.head(`t/${DEFAULT_TENANT}/blobs/${shas[0]}`)).toBeNull();
  });
});

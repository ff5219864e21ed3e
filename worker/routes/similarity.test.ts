import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TENANT } from "../context";
import { blobKey } from "../services/blobs";
import { call, expectFieldError, expectProblem, expectStatus, newDataset, tenantCallers, uploadBlob } from "../test/helpers";
import { LUND_01, LUND_02, SACRE_COEUR, SCEAUX } from "../test/photos";

async function register(did: string, name: string, bytes: Uint8Array) {
  const sha = await uploadBlob(bytes);
  return (await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name, blob_sha: sha }), 201)).json as {
    image_id: string;
    content_sha: string;
  };
}

const similar = (did: string, query: string) => call("GET", `/v1/datasets/${did}/similarity?${query}`);
const build = (did: string, query = "") => call("POST", `/v1/datasets/${did}/similarity:build${query}`);

describe("similarity (4.11, dhash; vlad in retrieval.test.ts)", () => {
  let did: string;
  let ids: Record<string, string>;
  beforeAll(async () => {
    ({ did } = await newDataset());
    const lund1 = await register(did, "lund-01.jpg", LUND_01);
    // A resized, recompressed copy of lund-01: its 512-pixel thumbnail.
    const thumb = await call("GET", `/v1/images/${lund1.image_id}/thumbnail?size=512`);
    const small = new Uint8Array(await thumb.res.arrayBuffer());
    ids = {
      "lund-01.jpg": lund1.image_id,
      "lund-02.jpg": (await register(did, "lund-02.jpg", LUND_02)).image_id,
      "sacre-coeur.jpg": (await register(did, "sacre-coeur.jpg", SACRE_COEUR)).image_id,
      "sceaux.jpg": (await register(did, "sceaux.jpg", SCEAUX)).image_id,
      "lund-01-small.jpg": (await register(did, "lund-01-small.jpg", small)).image_id,
      "lund-01-again.jpg": (await register(did, "lund-01-again.jpg", LUND_01)).image_id,
    };
  });

  it("a query before any build builds the index (rule 1): neighbours ascending by Hamming distance, the same bytes at 0, a resized copy close, other places far", async () => {
    const r = await expectStatus(similar(did, `image_id=${ids["lund-01.jpg"]}&k=10`), 200);
    expect(r.json.query_image_id).toBe(ids["lund-01.jpg"]);
    expect(r.json.strategy).toBe("dhash");
    expect(r.json.k).toBe(10);
    const n = r.json.neighbors as { image_id: string; distance: number }[];
    expect(n).toHaveLength(5); // every other image: fewer than k exist
    expect(n.map((x) => x.distance)).toEqual([...n.map((x) => x.distance)].sort((a, b) => a - b));
    const at = (name: string) => n.find((x) => x.image_id === ids[name])!.distance;
    expect(n[0]).toEqual({ image_id: ids["lund-01-again.jpg"], distance: 0 });
    expect(at("lund-01-small.jpg")).toBeLessThanOrEqual(4);
    expect(at("sacre-coeur.jpg")).toBeGreaterThanOrEqual(16);
    expect(at("sceaux.jpg")).toBeGreaterThanOrEqual(16);
    for (const x of n) expect(Number.isInteger(x.distance) && x.distance >= 0 && x.distance <= 64).toBe(true);
  });

  it("k defaults to 5 and bounds the answer; include_self puts the query first at 0, within k", async () => {
    expect((await expectStatus(similar(did, `image_id=${ids["sceaux.jpg"]}&k=2`), 200)).json.neighbors).toHaveLength(2);
    const d = await expectStatus(similar(did, `image_id=${ids["sceaux.jpg"]}`), 200);
    expect(d.json.k).toBe(5);
    expect(d.json.neighbors).toHaveLength(5);
    expect(d.json.neighbors.map((x: { image_id: string }) => x.image_id)).not.toContain(ids["sceaux.jpg"]);
    const self = await expectStatus(similar(did, `image_id=${ids["sceaux.jpg"]}&k=3&include_self=true`), 200);
    expect(self.json.neighbors).toHaveLength(3);
    expect(self.json.neighbors[0]).toEqual({ image_id: ids["sceaux.jpg"], distance: 0 });
    expect(self.json.neighbors.slice(1)).toEqual(d.json.neighbors.slice(0, 2));
  });

  it(":build answers 200 with the manifest: the index the query built, a features.global.v1 artifact of a job born succeeded (task vlad, phase vlad_index)", async () => {
    const r = await expectStatus(build(did, "?strategy=dhash"), 200);
    const dataset = (await call("GET", `/v1/projects/${(await call("GET", `/v1/jobs/${r.json.job_id}`)).json.project_id}/datasets/${did}`))
      .json;
    expect(r.json).toMatchObject({
      dataset_id: did,
      strategy: "dhash",
      num_images: 6,
      bits: 64,
      built: false,
      manifest_hash: dataset.manifest_hash,
    });
    const artifact = (await expectStatus(call("GET", `/v1/artifacts/${r.json.artifact_id}`), 200)).json;
    expect(artifact).toMatchObject({ kind: "features.global.v1", artifact_format: "edgesfm.features.global.dhash.v1", dataset_id: did });
    const content = (await expectStatus(call("GET", `/v1/artifacts/${r.json.artifact_id}/content`), 200)).json;
    expect(content.images.map((i: { name: string }) => i.name)).toEqual(Object.keys(ids));
    expect(content.images[0].dhash).toBe(content.images[5].dhash);
    const job = (await expectStatus(call("GET", `/v1/jobs/${r.json.job_id}`), 200)).json;
    expect(job.status).toBe("succeeded");
    expect(job.tasks).toHaveLength(1);
    expect(job.tasks[0]).toMatchObject({ kind: "vlad", status: "succeeded" });
    const progress = (await call("GET", `/v1/jobs/${r.json.job_id}/progress`)).json;
    expect(progress.current_phase).toBe("vlad_index");
    // Again: the same index; force: hashed again from the bytes, the same hashes in a new artifact.
    expect((await expectStatus(build(did), 200)).json).toMatchObject({ built: false, artifact_id: r.json.artifact_id });
    const forced = await expectStatus(build(did, "?force=true"), 200);
    expect(forced.json.built).toBe(true);
    expect(forced.json.artifact_id).not.toBe(r.json.artifact_id);
    expect((await call("GET", `/v1/artifacts/${forced.json.artifact_id}/content`)).json).toEqual(content);
    // The forced build is now the dataset's index.
    expect((await expectStatus(build(did), 200)).json).toMatchObject({ built: false, artifact_id: forced.json.artifact_id });
  });

  it("a changed manifest gets a new index (rule 4), hashing only the new image: each hash is cached by content beside the bytes", async () => {
    const before = (await expectStatus(build(did), 200)).json;
    const sha = (await register(did, "lund-02-again.jpg", LUND_02)).content_sha;
    const after = await expectStatus(build(did), 200);
    expect(after.json).toMatchObject({ built: true, num_images: 7 });
    expect(after.json.manifest_hash).not.toBe(before.manifest_hash);
    const cached = await env.BLOBS.list({ prefix: `${blobKey(DEFAULT_TENANT, sha)}/dhash/` });
    // The dataset turns photos upright by default (respect_exif_orientation): the upright pixels' hash.
    expect(cached.objects.map((o) => o.key)).toEqual([`${blobKey(DEFAULT_TENANT, sha)}/dhash/v1-upright.txt`]);
    const q = await expectStatus(similar(did, `image_id=${ids["lund-02.jpg"]}&k=1`), 200);
    expect(q.json.neighbors[0].distance).toBe(0);
  });

  it("404 for an unknown dataset, an image of another dataset or another tenant's dataset", async () => {
    expectProblem(await similar("01HZZZZZZZZZZZZZZZZZZZZZZZ", `image_id=${ids["lund-01.jpg"]}`), 404, "not_found");
    expectProblem(await build("01HZZZZZZZZZZZZZZZZZZZZZZZ"), 404, "not_found");
    const other = (await newDataset()).did;
    expectProblem(await similar(other, `image_id=${ids["lund-01.jpg"]}`), 404, "not_found");
    expectProblem(await similar(did, "image_id=01HZZZZZZZZZZZZZZZZZZZZZZZ"), 404, "not_found");
    const [stranger] = await tenantCallers("similarity-stranger");
    expectProblem(await stranger!("GET", `/v1/datasets/${did}/similarity?image_id=${ids["lund-01.jpg"]}`), 404, "not_found");
    expectProblem(await stranger!("POST", `/v1/datasets/${did}/similarity:build`), 404, "not_found");
  });

  it("422 for a bad query, a dataset without images, or images that cannot be hashed (each named, nothing built)", async () => {
    expectFieldError(await similar(did, ""), "query.image_id");
    expectFieldError(await similar(did, `image_id=${ids["lund-01.jpg"]}&k=0`), "query.k");
    expectFieldError(await similar(did, `image_id=${ids["lund-01.jpg"]}&k=1001`), "query.k");
    expectFieldError(await similar(did, `image_id=${ids["lund-01.jpg"]}&k=two`), "query.k");
    expectFieldError(await similar(did, `image_id=${ids["lund-01.jpg"]}&strategy=netvlad`), "query.strategy");
    expectFieldError(await similar(did, `image_id=${ids["lund-01.jpg"]}&include_self=yes`), "query.include_self");
    expectFieldError(await build(did, "?force=1"), "query.force");
    const empty = (await newDataset()).did;
    expectFieldError(await build(empty), "dataset_id", "empty_dataset");
    const broken = (await newDataset()).did;
    await register(broken, "good.jpg", LUND_01);
    await register(broken, "noise.bin", crypto.getRandomValues(new Uint8Array(4096)));
    const r = await build(broken);
    expectFieldError(r, "images.1", "unsupported_media_type");
    expect(r.json.errors).toHaveLength(1);
    const jobs = (await call("GET", "/v1/jobs?page_size=500")).json.items as { recipe: string }[];
    expect(jobs.filter((j) => j.recipe === "similarity:build").length).toBeGreaterThan(0);
  });

  it("vlad is advertised beside dhash; a vlad query or build names its dataset first (404), a query before the build is 404 pointing to :build", async () => {
    expectProblem(await similar("__nope__", "image_id=__nope__&strategy=vlad"), 404, "not_found");
    expectProblem(await build("__nope__", "?strategy=vlad"), 404, "not_found");
    const r = await similar(did, `image_id=${ids["lund-01.jpg"]}&strategy=vlad`);
    expectProblem(r, 404, "not_found");
    expect(r.json.detail).toContain(`/v1/datasets/${did}/similarity:build?strategy=vlad`);
    const { features } = (await call("GET", "/v1/capabilities")).json;
    expect(features["similarity.dhash"]).toBe(true);
    expect(features["similarity.vlad"]).toBe(true);
  });
});

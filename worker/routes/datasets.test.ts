import { describe, expect, it } from "vitest";
import { call, expectFieldError, expectProblem, expectStatus, newDataset, sha256Hex, uploadBlob } from "../test/helpers";

/** 2.4: SHA-256 of the (name, content_sha) pairs sorted by name, one `name<TAB>sha<LF>` line each. */
async function expectedManifest(pairs: [string, string][]): Promise<string> {
  const text = [...pairs]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([n, s]) => `${n}\t${s}\n`)
    .join("");
  return sha256Hex(new TextEncoder().encode(text));
}

const blob = (n: number) => uploadBlob(new TextEncoder().encode(`blob ${n} ${crypto.randomUUID()}`));

describe("datasets (4.4)", () => {
  it("an upload source registers its entries as images, and manifest_hash is the SHA-256 of the sorted pairs", async () => {
    const [a, b] = [await blob(1), await blob(2)];
    const { pid, did, dataset } = await newDataset({
      source: {
        kind: "upload",
        entries: [
          { name: "z/2.jpg", blob_sha: b },
          { name: "a/1.jpg", blob_sha: a },
        ],
      },
    });
    expect(dataset).toMatchObject({
      project_id: pid,
      tenant_id: "default",
      name: "d",
      camera_model: "SIMPLE_RADIAL",
      intrinsics_mode: "single_camera",
      is_spherical: false,
      respect_exif_orientation: true,
      rig_config_json: null,
      active_maskset_id: null,
      source: { kind: "upload" },
    });
    expect(dataset.source_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(Object.keys(dataset._links)).toEqual(expect.arrayContaining(["self", "images", "features"]));
    expect(dataset.manifest_hash).toBe(
      await expectedManifest([
        ["a/1.jpg", a],
        ["z/2.jpg", b],
      ]),
    );
    const images = await call("GET", `/v1/datasets/${did}/images`);
    expect(images.json.items.map((i: any) => i.name).sort()).toEqual(["a/1.jpg", "z/2.jpg"]);
  });

  it("datasets with the same pairs have equal hashes; an empty one hashes the empty string; image changes recompute it", async () => {
    const [a, b] = [await blob(3), await blob(4)];
    const one = await newDataset({
      source: {
        kind: "upload",
        entries: [
          { name: "x", blob_sha: a },
          { name: "y", blob_sha: b },
        ],
      },
    });
    const two = await newDataset();
    expect(two.dataset.manifest_hash).toBe(await sha256Hex(new Uint8Array()));
    await call("POST", `/v1/datasets/${two.did}/images`, { name: "y", blob_sha: b });
    const added = await expectStatus(call("POST", `/v1/datasets/${two.did}/images`, { name: "x", blob_sha: a }), 201);
    const get = (d: { pid: string; did: string }) => call("GET", `/v1/projects/${d.pid}/datasets/${d.did}`);
    expect((await get(two)).json.manifest_hash).toBe(one.dataset.manifest_hash);
    await expectStatus(call("DELETE", `/v1/images/${added.json.image_id}`), 204);
    expect((await get(two)).json.manifest_hash).toBe(await expectedManifest([["y", b]]));
  });

  it("local and s3 sources are validated and stored; their images cannot be registered here (422)", async () => {
    const local = await newDataset({ source: { kind: "local", root: "/data/lund", recursive: true } });
    expect(local.dataset.source).toEqual({ kind: "local", root: "/data/lund", recursive: true });
    const s3 = await newDataset({ source: { kind: "s3", bucket: "my-bucket", prefix: "lund/" } });
    expect(s3.dataset.source).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "lund/" });
    const sha = await blob(5);
    expectFieldError(
      await call("POST", `/v1/datasets/${local.did}/images`, { name: "a.jpg", blob_sha: sha }),
      "source.kind",
      "source_unreachable",
    );
    expectFieldError(
      await call("POST", `/v1/datasets/${s3.did}/images:batchCreate`, { requests: [{ name: "a.jpg", blob_sha: sha }] }),
      "source.kind",
      "source_unreachable",
    );
  });

  it("bad create bodies answer 422 with the field path", async () => {
    const { pid } = await newDataset();
    const post = (body: unknown) => call("POST", `/v1/projects/${pid}/datasets`, body);
    expectFieldError(await post({}), "name", "invalid_type");
    expectFieldError(await post({ name: "d", source: { kind: "ftp" } }), "source.kind");
    expectFieldError(await post({ name: "d", source: { kind: "local" } }), "source.root", "invalid_type");
    expectFieldError(
      await post({ name: "d", source: { kind: "local", root: "/x", recursive: "yes" } }),
      "source.recursive",
      "invalid_type",
    );
    expectFieldError(await post({ name: "d", source: { kind: "s3", bucket: "b" } }), "source.bucket", "too_small");
    expectFieldError(
      await post({ name: "d", source: { kind: "upload", entries: [{ name: "../x", blob_sha: "0".repeat(64) }] } }),
      "source.entries.0.name",
    );
    expectFieldError(
      await post({ name: "d", source: { kind: "upload", entries: [{ name: "x", blob_sha: "nope" }] } }),
      "source.entries.0.blob_sha",
    );
    expectFieldError(
      await post({ name: "d", source: { kind: "upload", entries: [{ name: "x", blob_sha: "0".repeat(64) }] } }),
      "source.entries.0.blob_sha",
      "unknown_blob",
    );
    const sha = await blob(6);
    const twice = {
      kind: "upload",
      entries: [
        { name: "x", blob_sha: sha },
        { name: "x", blob_sha: sha },
      ],
    };
    expectFieldError(await post({ name: "d", source: twice }), "source.entries.1.name", "duplicate");
    const upload = { kind: "upload", entries: [] };
    expectFieldError(await post({ name: "d", source: upload, camera_model: "FISHEYE_9000" }), "camera_model", "invalid_value");
    expectFieldError(await post({ name: "d", source: upload, intrinsics_mode: "per_camera" }), "intrinsics_mode", "invalid_value");
    expectFieldError(await post({ name: "d", source: upload, is_spherical: 1 }), "is_spherical", "invalid_type");
    expectFieldError(await post({ name: "d", source: upload, rig_config: [1, 2] }), "rig_config", "invalid_type");
    expectProblem(await call("POST", `/v1/projects/${pid}/datasets`, "{", { "Content-Type": "application/json" }), 400, "bad_request");
  });

  it("create without a source answers 422 naming the field, and creates no dataset", async () => {
    const { pid } = await newDataset();
    const before = (await call("GET", `/v1/projects/${pid}/datasets`)).json.total;
    const r = await call("POST", `/v1/projects/${pid}/datasets`, { name: "d" });
    expectFieldError(r, "source");
    expect((await call("GET", `/v1/projects/${pid}/datasets`)).json.total).toBe(before);
  });

  it("create in an absent project answers 404", async () => {
    expectProblem(
      await call("POST", "/v1/projects/01ARZ3NDEKTSV4RRFFQ69G5FAV/datasets", { name: "d", source: { kind: "upload", entries: [] } }),
      404,
      "not_found",
    );
    expectProblem(await call("GET", "/v1/projects/01ARZ3NDEKTSV4RRFFQ69G5FAV/datasets"), 404, "not_found");
  });

  it("SPHERICAL is a valid camera model, rig_config round-trips as rig_config_json", async () => {
    const { pid } = await newDataset();
    const r = await expectStatus(
      call("POST", `/v1/projects/${pid}/datasets`, {
        name: "pano",
        source: { kind: "upload", entries: [] },
        camera_model: "SPHERICAL",
        is_spherical: true,
        rig_config: { rigs: [] },
        respect_exif_orientation: false,
      }),
      201,
    );
    expect(r.json).toMatchObject({
      camera_model: "SPHERICAL",
      is_spherical: true,
      rig_config_json: { rigs: [] },
      respect_exif_orientation: false,
    });
  });

  it("list paginates, get/patch/delete check that the dataset is in the project", async () => {
    const { pid, did } = await newDataset();
    for (let i = 0; i < 2; i++)
      await call("POST", `/v1/projects/${pid}/datasets`, { name: `d${i}`, source: { kind: "upload", entries: [] } });
    const page = await expectStatus(call("GET", `/v1/projects/${pid}/datasets?page_size=2`), 200);
    expect(page.json.total).toBe(3);
    expect(page.json.items).toHaveLength(2);
    const rest = await call("GET", `/v1/projects/${pid}/datasets?page_size=2&page_token=${page.json.next_page_token}`);
    expect(rest.json.items).toHaveLength(1);
    expect(rest.json.next_page_token).toBeNull();

    const other = await newDataset();
    expectProblem(await call("GET", `/v1/projects/${other.pid}/datasets/${did}`), 404, "not_found");
    expectProblem(await call("PATCH", `/v1/projects/${other.pid}/datasets/${did}`, { name: "x" }), 404, "not_found");
    expectProblem(await call("DELETE", `/v1/projects/${other.pid}/datasets/${did}`), 404, "not_found");
    await expectStatus(call("GET", `/v1/projects/${pid}/datasets/${did}`), 200);
  });

  it("patch applies present fields or the update_mask; the source is immutable", async () => {
    const { pid, did, dataset } = await newDataset();
    const path = `/v1/projects/${pid}/datasets/${did}`;
    const r = await expectStatus(
      call("PATCH", path, { camera_model: "PINHOLE", rig_config: { a: 1 }, source: { kind: "local", root: "/x" } }),
      200,
    );
    expect(r.json).toMatchObject({ name: "d", camera_model: "PINHOLE", rig_config_json: { a: 1 }, source: dataset.source });
    const masked = await expectStatus(
      call("PATCH", `${path}?update_mask=is_spherical,active_maskset_id`, { name: "no", is_spherical: true, active_maskset_id: "m1" }),
      200,
    );
    expect(masked.json).toMatchObject({ name: "d", is_spherical: true, active_maskset_id: "m1" });
    expectFieldError(await call("PATCH", `${path}?update_mask=source`, { source: {} }), "update_mask.source", "not_allowed");
    expectFieldError(await call("PATCH", path, { intrinsics_mode: 3 }), "intrinsics_mode");
  });

  it("delete answers 204 and takes the images with it", async () => {
    const sha = await blob(7);
    const { pid, did } = await newDataset({ source: { kind: "upload", entries: [{ name: "a", blob_sha: sha }] } });
    const img = (await call("GET", `/v1/datasets/${did}/images`)).json.items[0];
    await expectStatus(call("DELETE", `/v1/projects/${pid}/datasets/${did}`), 204);
    expectProblem(await call("GET", `/v1/projects/${pid}/datasets/${did}`), 404);
    expectProblem(await call("GET", `/v1/images/${img.image_id}`), 404);
    expectProblem(await call("DELETE", `/v1/projects/${pid}/datasets/${did}`), 404);
  });
});

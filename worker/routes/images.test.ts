import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TENANT } from "../context";
import { tenantStore } from "../services/stores";
import {
  call,
  collectGarbage,
  deployment,
  expectFieldError,
  expectProblem,
  expectStatus,
  newDataset,
  sha256Hex,
  uploadBlob,
} from "../test/helpers";
import { LUND_01, LUND_02, SCEAUX } from "../test/photos";

const ABSENT = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

describe("images (4.5)", () => {
  let lund: string;
  let did: string;
  beforeAll(async () => {
    lund = await uploadBlob(LUND_01);
    did = (await newDataset()).did;
  });

  it("create reads width/height and the media type from the JPEG header at registration", async () => {
    const r = await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "lund/01.jpg", blob_sha: lund }), 201);
    expect(r.json).toMatchObject({
      dataset_id: did,
      name: "lund/01.jpg",
      content_sha: lund,
      source_kind: "upload",
      rel_path: null,
      byte_size: LUND_01.length,
      width: 1024,
      height: 768,
      media_type: "image/jpeg",
    });
    expect(Object.keys(r.json._links)).toEqual(expect.arrayContaining(["self", "bytes", "thumbnail", "exif"]));
    // The EXIF focal length goes to jobs' datasets and GET .../exif, not into the image resource (2.5).
    expect(r.json).not.toHaveProperty("focal_length_35mm");
    expect(r.headers.get("Location")).toBe(`/v1/images/${r.json.image_id}`);
    expect((await expectStatus(call("GET", `/v1/images/${r.json.image_id}`), 200)).json).toEqual(r.json);
  });

  it("registering a name the dataset holds with the same blob answers 201 with the image that exists, and changes nothing", async () => {
    const sha = await uploadBlob(crypto.getRandomValues(new Uint8Array(64)));
    const { pid, did } = await newDataset({ source: { kind: "upload", entries: [{ name: "listed.jpg", blob_sha: sha }] } });
    const before = (await call("GET", `/v1/projects/${pid}/datasets/${did}`)).json;
    const listed = (await call("GET", `/v1/datasets/${did}/images`)).json.items[0];
    const again = await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "listed.jpg", blob_sha: sha }), 201);
    expect(again.json).toEqual(listed);
    expect(again.headers.get("Location")).toBe(`/v1/images/${listed.image_id}`);
    expect((await call("GET", `/v1/datasets/${did}/images`)).json.total).toBe(1);
    expect((await call("GET", `/v1/projects/${pid}/datasets/${did}`)).json.manifest_hash).toBe(before.manifest_hash);
    // References count images, not requests: the upload's and the one image's.
    expect((await tenantStore(env, DEFAULT_TENANT).getBlob(sha))?.refcount).toBe(2);
    const first = await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "new.jpg", blob_sha: sha }), 201);
    expect((await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "new.jpg", blob_sha: sha }), 201)).json).toEqual(
      first.json,
    );
    expect((await tenantStore(env, DEFAULT_TENANT).getBlob(sha))?.refcount).toBe(3);
  });

  it("batchCreate is idempotent the same way: held names come back as they are, new ones are registered", async () => {
    const { did, dataset } = await newDataset({ source: { kind: "upload", entries: [{ name: "a.jpg", blob_sha: lund }] } });
    const held = (await call("GET", `/v1/datasets/${did}/images`)).json.items[0];
    const r = await expectStatus(
      call("POST", `/v1/datasets/${did}/images:batchCreate`, {
        requests: [
          { name: "a.jpg", blob_sha: lund },
          { name: "b.jpg", blob_sha: lund },
        ],
      }),
      201,
    );
    expect(r.json.images[0]).toEqual(held);
    expect(r.json.images[1]).toMatchObject({ name: "b.jpg", content_sha: lund });
    const again = await expectStatus(
      call("POST", `/v1/datasets/${did}/images:batchCreate`, {
        requests: [
          { name: "a.jpg", blob_sha: lund },
          { name: "b.jpg", blob_sha: lund },
        ],
      }),
      201,
    );
    expect(again.json.images).toEqual(r.json.images);
    const after = (await call("GET", `/v1/projects/${dataset.project_id}/datasets/${did}`)).json;
    expect((await call("GET", `/v1/datasets/${did}/images`)).json.total).toBe(2);
    expect(after.manifest_hash).not.toBe(dataset.manifest_hash);
  });

  it("the same name with other bytes answers 409 and registers nothing, single or in a batch", async () => {
    const other = await uploadBlob(LUND_02);
    const { did } = await newDataset();
    await expectStatus(call("POST", `/v1/datasets/${did}/images`, { name: "a.jpg", blob_sha: lund }), 201);
    expectProblem(await call("POST", `/v1/datasets/${did}/images`, { name: "a.jpg", blob_sha: other }), 409, "conflict");
    const batch = [
      { name: "b.jpg", blob_sha: lund },
      { name: "a.jpg", blob_sha: other },
    ];
    expectProblem(await call("POST", `/v1/datasets/${did}/images:batchCreate`, { requests: batch }), 409, "conflict");
    const names = (await call("GET", `/v1/datasets/${did}/images`)).json.items.map((i: any) => [i.name, i.content_sha]);
    expect(names).toEqual([["a.jpg", lund]]);
  });

  it("an unknown blob answers 422; bad names 422", async () => {
    const { did } = await newDataset();
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/images`, { name: "b.jpg", blob_sha: "f".repeat(64) }),
      "blob_sha",
      "unknown_blob",
    );
    for (const name of ["../etc/passwd", "a/../../b", "/abs.jpg", "a//b", "./a", "a\\b", "tab\there", "nul\0", ""]) {
      expectFieldError(await call("POST", `/v1/datasets/${did}/images`, { name, blob_sha: lund }), "name");
    }
    expectFieldError(await call("POST", `/v1/datasets/${did}/images`, { name: "x", blob_sha: lund.toUpperCase() }), "blob_sha");
    expectFieldError(await call("POST", `/v1/datasets/${did}/images`, { name: 5, blob_sha: lund }), "name", "invalid_type");
    expectProblem(await call("POST", `/v1/datasets/${ABSENT}/images`, { name: "x", blob_sha: lund }), 404, "not_found");
  });

  it("batchCreate registers up to 1000 images at once; 1001 are rejected; it is all-or-nothing", async () => {
    const { did } = await newDataset();
    const requests = Array.from({ length: 1000 }, (_, i) => ({ name: `f/${String(i).padStart(4, "0")}.jpg`, blob_sha: lund }));
    const r = await expectStatus(call("POST", `/v1/datasets/${did}/images:batchCreate`, { requests }), 201);
    expect(r.json.images).toHaveLength(1000);
    expect(r.json.images[999]).toMatchObject({ name: "f/0999.jpg", width: 1024 });
    const over = [...requests, { name: "one-more.jpg", blob_sha: lund }];
    expectFieldError(await call("POST", `/v1/datasets/${did}/images:batchCreate`, { requests: over }), "requests", "too_big");
    expectFieldError(await call("POST", `/v1/datasets/${did}/images:batchCreate`, { requests: [] }), "requests", "too_small");

    const { did: fresh } = await newDataset();
    const dupes = [
      { name: "a", blob_sha: lund },
      { name: "a", blob_sha: lund },
    ];
    expectFieldError(await call("POST", `/v1/datasets/${fresh}/images:batchCreate`, { requests: dupes }), "requests.1.name", "duplicate");
    const unknown = [
      { name: "a", blob_sha: lund },
      { name: "b", blob_sha: "e".repeat(64) },
    ];
    expectFieldError(
      await call("POST", `/v1/datasets/${fresh}/images:batchCreate`, { requests: unknown }),
      "requests.1.blob_sha",
      "unknown_blob",
    );
    expectFieldError(
      await call("POST", `/v1/datasets/${fresh}/images:batchCreate`, { requests: [{ name: "../a", blob_sha: lund }] }),
      "requests.0.name",
    );
    expect((await call("GET", `/v1/datasets/${fresh}/images`)).json.total).toBe(0);
    const tight = deployment({ SVC_MAX_JSON_BYTES: "1000" });
    expectProblem(
      await tight("POST", `/v1/datasets/${fresh}/images:batchCreate`, { requests: requests.slice(0, 20) }),
      413,
      "payload_too_large",
    );
  });

  it("list walks every image once with page tokens; delete answers 204 then 404", async () => {
    const { did } = await newDataset();
    const requests = Array.from({ length: 7 }, (_, i) => ({ name: `${i}.jpg`, blob_sha: lund }));
    const created = (await call("POST", `/v1/datasets/${did}/images:batchCreate`, { requests })).json.images.map((i: any) => i.image_id);
    const seen: string[] = [];
    let token: string | null = null;
    do {
      const page: any = (await call("GET", `/v1/datasets/${did}/images?page_size=3${token ? `&page_token=${token}` : ""}`)).json;
      expect(page.total).toBe(7);
      seen.push(...page.items.map((i: any) => i.image_id));
      token = page.next_page_token;
    } while (token);
    expect(seen).toEqual(created);
    await expectStatus(call("DELETE", `/v1/images/${created[0]}`), 204);
    expectProblem(await call("GET", `/v1/images/${created[0]}`), 404, "not_found");
    expectProblem(await call("DELETE", `/v1/images/${created[0]}`), 404, "not_found");
    expect((await call("GET", `/v1/datasets/${did}/images`)).json.total).toBe(6);
    expectProblem(await call("GET", `/v1/datasets/${ABSENT}/images`), 404, "not_found");
  });

  it("legacy delete by name, with '/' and spaces percent-encoded", async () => {
    const { did } = await newDataset();
    await call("POST", `/v1/datasets/${did}/images:batchCreate`, {
      requests: [
        { name: "dir/a b.jpg", blob_sha: lund },
        { name: "c.jpg", blob_sha: lund },
      ],
    });
    await expectStatus(call("DELETE", `/v1/datasets/${did}/images/${encodeURIComponent("dir/a b.jpg")}`), 204);
    await expectStatus(call("DELETE", `/v1/datasets/${did}/images/c.jpg`), 204);
    expectProblem(await call("DELETE", `/v1/datasets/${did}/images/c.jpg`), 404, "not_found");
    expectProblem(await call("DELETE", `/v1/datasets/${ABSENT}/images/c.jpg`), 404, "not_found");
    expectProblem(await call("DELETE", `/v1/datasets/${did}/images/${encodeURIComponent("../c.jpg")}`), 404, "not_found");
    expect((await call("GET", `/v1/datasets/${did}/images`)).json.total).toBe(0);
  });

  it("deleting the last image of a blob deletes its bytes once the upload reference is gone", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(64));
    const sha = await uploadBlob(bytes);
    const { did } = await newDataset();
    const img = (await call("POST", `/v1/datasets/${did}/images`, { name: "x", blob_sha: sha })).json;
    const stub = tenantStore(env, DEFAULT_TENANT);
    expect((await stub.getBlob(sha))?.refcount).toBe(2);
    await call("DELETE", `/v1/images/${img.image_id}`);
    expect((await stub.getBlob(sha))?.refcount).toBe(1);
  });

  describe("bytes", () => {
    let id: string;
    beforeAll(async () => {
      id = (await call("POST", `/v1/datasets/${did}/images`, { name: "bytes.jpg", blob_sha: lund })).json.image_id;
    });

    it("serve the image with a strong ETag (its SHA-256) and immutable caching", async () => {
      const r = await call("GET", `/v1/images/${id}/bytes`);
      expect(r.status).toBe(200);
      expect(r.headers.get("ETag")).toBe(`"${lund}"`);
      expect(r.headers.get("Content-Type")).toBe("image/jpeg");
      expect(r.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
      expect(r.headers.get("Accept-Ranges")).toBe("bytes");
      const body = new Uint8Array(await r.res.arrayBuffer());
      expect(await sha256Hex(body)).toBe(lund);
    });

    it("HEAD answers the headers and length without a body", async () => {
      const r = await call("HEAD", `/v1/images/${id}/bytes`);
      expect(r.status).toBe(200);
      expect(r.headers.get("ETag")).toBe(`"${lund}"`);
      expect(r.headers.get("Content-Length")).toBe(String(LUND_01.length));
      expect((await r.res.arrayBuffer()).byteLength).toBe(0);
    });

    it("If-None-Match with the ETag answers 304", async () => {
      for (const inm of [`"${lund}"`, `W/"${lund}"`, `"other", "${lund}"`, "*"]) {
        const r = await call("GET", `/v1/images/${id}/bytes`, undefined, { "If-None-Match": inm });
        expect(r.status).toBe(304);
        expect(r.headers.get("ETag")).toBe(`"${lund}"`);
      }
      expect((await call("GET", `/v1/images/${id}/bytes`, undefined, { "If-None-Match": '"other"' })).status).toBe(200);
    });

    it("Range answers 206 with Content-Range; an unsatisfiable range 416", async () => {
      const size = LUND_01.length;
      const cases: [string, number, number][] = [
        ["bytes=0-99", 0, 99],
        ["bytes=100-", 100, size - 1],
        ["bytes=-50", size - 50, size - 1],
        [`bytes=10-${size + 100}`, 10, size - 1],
      ];
      for (const [header, a, b] of cases) {
        const r = await call("GET", `/v1/images/${id}/bytes`, undefined, { Range: header });
        expect(r.status).toBe(206);
        expect(r.headers.get("Content-Range")).toBe(`bytes ${a}-${b}/${size}`);
        // Digests, not element-wise comparison: deep equality of large typed arrays is slow.
        expect(await sha256Hex(new Uint8Array(await r.res.arrayBuffer()))).toBe(await sha256Hex(LUND_01.slice(a, b + 1)));
      }
      const bad = await call("GET", `/v1/images/${id}/bytes`, undefined, { Range: `bytes=${size}-` });
      expectProblem(bad, 416, "range_not_satisfiable");
      expect(bad.headers.get("Content-Range")).toBe(`bytes */${size}`);
      // Invalid or multi-range specs are ignored: the whole body (RFC 9110 14.2).
      for (const header of ["bytes=5-2", "bytes=0-1,5-6", "pages=1-2"]) {
        const r = await call("GET", `/v1/images/${id}/bytes`, undefined, { Range: header });
        expect(r.status).toBe(200);
        await r.res.arrayBuffer();
      }
    });

    it("download=true sets an attachment disposition with the file name", async () => {
      const r = await call("GET", `/v1/images/${id}/bytes?download=true`);
      expect(r.headers.get("Content-Disposition")).toBe('attachment; filename="bytes.jpg"');
      await r.res.arrayBuffer();
      expectFieldError(await call("GET", `/v1/images/${id}/bytes?download=maybe`), "query.download");
    });

    it("absent images answer 404 on every sub-resource", async () => {
      for (const sub of ["", "/bytes", "/exif", "/thumbnail"])
        expectProblem(await call("GET", `/v1/images/${ABSENT}${sub}`), 404, "not_found");
    });
  });

  describe("exif", () => {
    it("parses a real camera's tags (Kodak Z612: make, model, focal length, date)", async () => {
      const sha = await uploadBlob(SCEAUX);
      const { did } = await newDataset();
      const img = (await call("POST", `/v1/datasets/${did}/images`, { name: "100_7100.JPG", blob_sha: sha })).json;
      expect(img).toMatchObject({ width: 2832, height: 2128 });
      const r = await expectStatus(call("GET", `/v1/images/${img.image_id}/exif`), 200);
      expect(r.json).toMatchObject({
        image_id: img.image_id,
        orientation: 1,
        make: "EASTMAN KODAK COMPANY",
        model: "KODAK Z612 ZOOM DIGITAL CAMERA",
        focal_length_mm: 5.85,
        gps: null,
      });
      expect(r.json.datetime_original).toMatch(/^2010-10-12T\d\d:43:07/);
      expect(r.json.tags.Make).toBe("EASTMAN KODAK COMPANY");
    });

    it("reads GPS coordinates", async () => {
      const sha = await uploadBlob(LUND_02);
      const { did } = await newDataset();
      const img = (await call("POST", `/v1/datasets/${did}/images`, { name: "02.jpg", blob_sha: sha })).json;
      const r = await expectStatus(call("GET", `/v1/images/${img.image_id}/exif`), 200);
      expect(r.json.focal_length_mm).toBe(4.3);
      expect(r.json.gps.latitude).toBeCloseTo(55.698, 3);
      expect(r.json.gps.longitude).toBeCloseTo(13.195, 3);
    });

    it("bytes without EXIF answer null members, not an error", async () => {
      const sha = await uploadBlob(new TextEncoder().encode("not an image"));
      const { did } = await newDataset();
      const img = (await call("POST", `/v1/datasets/${did}/images`, { name: "t.txt", blob_sha: sha })).json;
      expect(img).toMatchObject({ width: null, height: null });
      const r = await expectStatus(call("GET", `/v1/images/${img.image_id}/exif`), 200);
      expect(r.json).toMatchObject({ orientation: null, make: null, gps: null, tags: {} });
    });
  });

  it("garbage collection keeps bytes another image still references", async () => {
    const { did } = await newDataset();
    const a = (await call("POST", `/v1/datasets/${did}/images`, { name: "a", blob_sha: lund })).json;
    await call("DELETE", `/v1/images/${a.image_id}`);
    await collectGarbage();
    expect(await env.BLOBS.head(`t/${DEFAULT_TENANT}/blobs/${lund}`)).not.toBeNull();
  });
});

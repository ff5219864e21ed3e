import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEFAULT_TENANT } from "../context";
import { tenantStore } from "../services/stores";
import { call, collectGarbage, deployment, expectFieldError, expectProblem, expectStatus, expireUploads, sha256Hex } from "../test/helpers";

const range = (start: number, end: number, total: number | "*") => ({ "Content-Range": `bytes ${start}-${end}/${total}` });

async function open(size: number, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const r = await expectStatus(call("POST", "/v1/uploads", { expected_size: size, ...extra }, headers), 201);
  return r.json.upload_id as string;
}

describe("chunked uploads (4.3)", () => {
  it("create answers 201 open with a 24 h expires_at and Location", async () => {
    const r = await expectStatus(call("POST", "/v1/uploads", { expected_size: 10, content_type: "image/jpeg" }), 201);
    expect(r.json).toMatchObject({ state: "open", expected_size: 10, received_bytes: 0, blob_sha: null, content_type: "image/jpeg" });
    expect(Date.parse(r.json.expires_at) - Date.parse(r.json.created_at)).toBe(24 * 3600 * 1000);
    expect(r.headers.get("Location")).toBe(`/v1/uploads/${r.json.upload_id}`);
  });

  it("the lifetime is a deployment setting (SVC_UPLOAD_LIFETIME_SECONDS)", async () => {
    const r = await expectStatus(deployment({ SVC_UPLOAD_LIFETIME_SECONDS: "60" })("POST", "/v1/uploads", { expected_size: 1 }), 201);
    expect(Date.parse(r.json.expires_at) - Date.parse(r.json.created_at)).toBe(60_000);
  });

  it("chunks in order, resume via GET, finalize with the right X-Content-SHA256: blob_sha addresses the bytes", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(10_000));
    const sha = await sha256Hex(bytes);
    const id = await open(bytes.length, { content_type: "application/octet-stream" });
    const first = await expectStatus(call("PATCH", `/v1/uploads/${id}`, bytes.slice(0, 4000), range(0, 3999, 10_000)), 200);
    expect(first.json).toMatchObject({ state: "open", received_bytes: 4000 });
    const resume = await expectStatus(call("GET", `/v1/uploads/${id}`), 200);
    expect(resume.json.received_bytes).toBe(4000);
    await expectStatus(call("PATCH", `/v1/uploads/${id}`, bytes.slice(4000, 9000), range(4000, 8999, "*")), 200);
    const last = await expectStatus(call("PATCH", `/v1/uploads/${id}`, bytes.slice(9000), range(9000, 9999, 10_000)), 200);
    expect(last.json).toMatchObject({ state: "received", received_bytes: 10_000 });
    const fin = await expectStatus(call("POST", `/v1/uploads/${id}:finalize`, undefined, { "X-Content-SHA256": sha }), 200);
    expect(fin.json).toMatchObject({ state: "finalized", blob_sha: sha });
    const stored = await env.BLOBS.get(`t/${DEFAULT_TENANT}/blobs/${sha}`);
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(bytes);
    // A finalized upload is immutable: strong ETag, 304 on If-None-Match.
    const got = await expectStatus(call("GET", `/v1/uploads/${id}`), 200);
    expect(got.headers.get("ETag")).toBe(`"${id}-${sha}"`);
    expect((await call("GET", `/v1/uploads/${id}`, undefined, { "If-None-Match": got.headers.get("ETag")! })).status).toBe(304);
    expect(resume.headers.get("ETag")).toBeNull();
    // Finalize is idempotent; a chunk after it is a conflict.
    expect((await expectStatus(call("POST", `/v1/uploads/${id}:finalize`, {}), 200)).json.blob_sha).toBe(sha);
    expectProblem(await call("PATCH", `/v1/uploads/${id}`, bytes.slice(0, 1), range(0, 0, 10_000)), 409, "conflict");
    // The chunk objects are garbage once the blob exists.
    await collectGarbage();
    expect((await env.BLOBS.list({ prefix: `t/${DEFAULT_TENANT}/uploads/${id}/` })).objects).toEqual([]);
  });

  it("re-sending a chunk at the same offset is idempotent; different bytes there conflict", async () => {
    const id = await open(6);
    const chunk = new Uint8Array([1, 2, 3]);
    await expectStatus(call("PATCH", `/v1/uploads/${id}`, chunk, range(0, 2, 6)), 200);
    const again = await expectStatus(call("PATCH", `/v1/uploads/${id}`, chunk, range(0, 2, 6)), 200);
    expect(again.json.received_bytes).toBe(3);
    expectProblem(await call("PATCH", `/v1/uploads/${id}`, new Uint8Array([9, 9, 9]), range(0, 2, 6)), 409, "conflict");
    expect((await call("GET", `/v1/uploads/${id}`)).json.received_bytes).toBe(3);
  });

  it("a chunk past the received bytes (out of order) answers 409", async () => {
    const id = await open(6);
    const r = await call("PATCH", `/v1/uploads/${id}`, new Uint8Array([4, 5, 6]), range(3, 5, 6));
    expectProblem(r, 409, "conflict");
    expect(r.json.detail).toMatch(/byte 0/);
  });

  it("a malformed Content-Range or a body length different from the range answers 422", async () => {
    const id = await open(6);
    const body = new Uint8Array([1, 2, 3]);
    for (const header of ["bytes 0-2", "bytes=0-2/6", "bytes 2-0/6", "bytes 0-6/6", "bytes a-b/6", "items 0-2/6", "bytes -1-2/6"]) {
      expectFieldError(
        await call("PATCH", `/v1/uploads/${id}`, body, { "Content-Range": header }),
        "Content-Range",
        "invalid_content_range",
      );
    }
    expectFieldError(await call("PATCH", `/v1/uploads/${id}`, body), "header.content-range");
    expectFieldError(await call("PATCH", `/v1/uploads/${id}`, body, range(0, 3, 6)), "Content-Range", "length_mismatch");
    expectFieldError(await call("PATCH", `/v1/uploads/${id}`, body, range(0, 2, 7)), "Content-Range", "total_mismatch");
    expect((await call("GET", `/v1/uploads/${id}`)).json.received_bytes).toBe(0);
  });

  it("sizes beyond the deployment's limits answer 413", async () => {
    const small = deployment({ SVC_MAX_UPLOAD_BYTES: "100", SVC_MAX_CHUNK_BYTES: "4" });
    expectProblem(await small("POST", "/v1/uploads", { expected_size: 101 }), 413, "payload_too_large");
    const up = await expectStatus(small("POST", "/v1/uploads", { expected_size: 100 }), 201);
    expectProblem(await small("PATCH", `/v1/uploads/${up.json.upload_id}`, new Uint8Array(5), range(0, 4, 100)), 413, "payload_too_large");
    await expectStatus(small("PATCH", `/v1/uploads/${up.json.upload_id}`, new Uint8Array(4), range(0, 3, 100)), 200);
    // A streamed body declares no length: it is cut off at the limit, not buffered whole.
    const stream = new Blob([new Uint8Array(64)]).stream();
    const streamed = await small("PATCH", `/v1/uploads/${up.json.upload_id}`, stream, range(4, 7, 100));
    expectProblem(streamed, 413, "payload_too_large");
  });

  it("bad UploadInit bodies answer 422", async () => {
    expectFieldError(await call("POST", "/v1/uploads", {}), "expected_size", "invalid_type");
    expectFieldError(await call("POST", "/v1/uploads", { expected_size: -1 }), "expected_size", "too_small");
    expectFieldError(await call("POST", "/v1/uploads", { expected_size: 1.5 }), "expected_size");
    expectFieldError(await call("POST", "/v1/uploads", { expected_size: "10" }), "expected_size", "invalid_type");
    expectFieldError(await call("POST", "/v1/uploads", { expected_size: 1, expected_sha: "ABC" }), "expected_sha");
    expectFieldError(await call("POST", "/v1/uploads", { expected_size: 1, content_type: "not a type" }), "content_type");
    expectFieldError(
      await call("POST", "/v1/uploads", { expected_size: 1 }, { "Idempotency-Key": "k".repeat(256) }),
      "header.idempotency-key",
    );
  });

  it("the same Idempotency-Key returns the original upload instead of a duplicate", async () => {
    const key = crypto.randomUUID();
    const a = await expectStatus(call("POST", "/v1/uploads", { expected_size: 5 }, { "Idempotency-Key": key }), 201);
    const b = await expectStatus(call("POST", "/v1/uploads", { expected_size: 5 }, { "Idempotency-Key": key }), 201);
    expect(b.json).toEqual(a.json);
    expect(b.headers.get("Idempotent-Replayed")).toBe("true");
    const c = await call("POST", "/v1/uploads", { expected_size: 5 }, { "Idempotency-Key": crypto.randomUUID() });
    expect(c.json.upload_id).not.toBe(a.json.upload_id);
  });

  it("finalize checks X-Content-SHA256 and expected_sha: a mismatch answers 422 and leaves the upload unfinalized", async () => {
    const bytes = new Uint8Array([1, 2, 3, 4]);
    const sha = await sha256Hex(bytes);
    const wrong = "0".repeat(64);
    const id = await open(4, { expected_sha: wrong });
    await call("PATCH", `/v1/uploads/${id}`, bytes, range(0, 3, 4));
    expectFieldError(await call("POST", `/v1/uploads/${id}:finalize`), "expected_sha", "sha_mismatch");
    const id2 = await open(4, { expected_sha: sha });
    await call("PATCH", `/v1/uploads/${id2}`, bytes, range(0, 3, 4));
    expectFieldError(
      await call("POST", `/v1/uploads/${id2}:finalize`, undefined, { "X-Content-SHA256": wrong }),
      "X-Content-SHA256",
      "sha_mismatch",
    );
    expectFieldError(
      await call("POST", `/v1/uploads/${id2}:finalize`, undefined, { "X-Content-SHA256": "xyz" }),
      "header.x-content-sha256",
    );
    expect((await call("GET", `/v1/uploads/${id2}`)).json.state).toBe("received");
    expect((await expectStatus(call("POST", `/v1/uploads/${id2}:finalize`), 200)).json.blob_sha).toBe(sha);
  });

  it("finalize of an incomplete upload answers 409; of an empty one yields the empty blob", async () => {
    const id = await open(4);
    await call("PATCH", `/v1/uploads/${id}`, new Uint8Array([1]), range(0, 0, 4));
    expectProblem(await call("POST", `/v1/uploads/${id}:finalize`), 409, "conflict");
    const empty = await open(0);
    const fin = await expectStatus(call("POST", `/v1/uploads/${empty}:finalize`), 200);
    expect(fin.json.blob_sha).toBe(await sha256Hex(new Uint8Array()));
  });

  it("an upload past expires_at, or one that never existed, answers 404 everywhere", async () => {
    const id = await open(3);
    await call("PATCH", `/v1/uploads/${id}`, new Uint8Array([1]), range(0, 0, 3));
    await expireUploads("upload_id = ?", id);
    for (const uid of [id, "01ARZ3NDEKTSV4RRFFQ69G5FAV"]) {
      expectProblem(await call("GET", `/v1/uploads/${uid}`), 404, "not_found");
      expectProblem(await call("PATCH", `/v1/uploads/${uid}`, new Uint8Array([2]), range(1, 1, 3)), 404, "not_found");
      expectProblem(await call("POST", `/v1/uploads/${uid}:finalize`), 404, "not_found");
    }
    // The alarm removes the expired upload and its chunk bytes.
    await collectGarbage();
    expect((await env.BLOBS.list({ prefix: `t/${DEFAULT_TENANT}/uploads/${id}/` })).objects).toEqual([]);
  });

  it("the same bytes finalized again while their old copy awaits the collector stay stored", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const sha = await sha256Hex(bytes);
    const key = `t/${DEFAULT_TENANT}/blobs/${sha}`;
    const first = await open(32);
    await call("PATCH", `/v1/uploads/${first}`, bytes, range(0, 31, 32));
    await call("POST", `/v1/uploads/${first}:finalize`);
    const stub = tenantStore(env, DEFAULT_TENANT);
    // The only reference expires: the bytes are queued as garbage, the collector has not run yet.
    await expireUploads("upload_id = ?", first);
    await runInDurableObject(stub, (o) => (o as unknown as { expireUploads(): void }).expireUploads());
    expect(await stub.getBlob(sha)).toBeNull();
    const second = await open(32);
    await call("PATCH", `/v1/uploads/${second}`, bytes, range(0, 31, 32));
    await expectStatus(call("POST", `/v1/uploads/${second}:finalize`), 200);
    await collectGarbage();
    expect(await env.BLOBS.head(key)).not.toBeNull();
    expect((await stub.getBlob(sha))?.refcount).toBe(1);
  });

  it("a finalize that stopped before its bytes were stored is completed by the next finalize", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    const sha = await sha256Hex(bytes);
    const id = await open(16);
    await call("PATCH", `/v1/uploads/${id}`, bytes, range(0, 15, 16));
    const stub = tenantStore(env, DEFAULT_TENANT);
    const key = `t/${DEFAULT_TENANT}/blobs/${sha}`;
    // The reference is taken, then the Worker dies before writing the blob: nothing shows it.
    await stub.reserveBlob(id, {
      sha,
      r2_key: key,
      size: 16,
      media_type: null,
      width: null,
      height: null,
      focal_length_35mm: null,
      gps_json: null,
    });
    expect(await env.BLOBS.head(key)).toBeNull();
    expect((await call("GET", `/v1/uploads/${id}`)).json).toMatchObject({ state: "received", blob_sha: null });
    expect(await stub.getBlob(sha)).toBeNull();
    await expectStatus(call("POST", `/v1/uploads/${id}:finalize`), 200);
    expect(await env.BLOBS.head(key)).not.toBeNull();
    await collectGarbage();
    expect((await env.BLOBS.list({ prefix: `t/${DEFAULT_TENANT}/uploads/${id}/` })).objects).toEqual([]);
  });

  it("a finalize racing another that already released the chunks answers 409, not 500", async () => {
    const id = await open(3);
    await call("PATCH", `/v1/uploads/${id}`, new Uint8Array([1, 2, 3]), range(0, 2, 3));
    const chunks = await env.BLOBS.list({ prefix: `t/${DEFAULT_TENANT}/uploads/${id}/` });
    await env.BLOBS.delete(chunks.objects.map((o) => o.key));
    expectProblem(await call("POST", `/v1/uploads/${id}:finalize`), 409, "conflict");
  });

  it("custom methods answer 405 to other verbs", async () => {
    const r = await call("DELETE", "/v1/uploads/01ARZ3NDEKTSV4RRFFQ69G5FAV:finalize");
    expectProblem(r, 405, "method_not_allowed");
    expect(r.headers.get("Allow")).toContain("POST");
  });
});

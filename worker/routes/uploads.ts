/**
 * @module Chunked uploads (spec 2.6, 3.3, 4.3): create (with `Idempotency-Key`), resume via
 * GET, PATCH chunks with `Content-Range` (RFC 9110 14.4), finalize checking the SHA-256.
 * Chunks are stored in R2 as they arrive; finalize assembles them at the blob's content address.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { Id, Sha256, Upload, UploadInit } from "../../protocol";
import { notFound, payloadTooLarge, validation } from "../errors";
import { chunkBodyLimit } from "../middleware/limits";
import { json, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { blobFacts, blobKey, chunkKey, digestChunks, sha256Hex, storeBlob, uploadHead } from "../services/blobs";
import { etagMatches } from "../services/bytes";
import { uploadResource } from "../services/resources";
import { tenantStore, unwrap } from "../services/stores";

export const uploads = newRouter();

const PathParams = z.object({ uid: Id });

uploads.openapi(
  createRoute({
    method: "post",
    path: "/v1/uploads",
    tags: ["uploads"],
    request: {
      headers: z.object({ "idempotency-key": z.string().min(1).max(255).optional() }),
      body: { content: { "application/json": { schema: UploadInit } }, required: true },
    },
    responses: {
      201: json(Upload, "created (or the upload created earlier with the same Idempotency-Key)"),
      ...problemResponses(400, 401, 413, 422),
    },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const max = c.var.config.maxUploadBytes;
    if (body.expected_size > max) throw payloadTooLarge(`expected_size ${body.expected_size} exceeds the limit of ${max} bytes`);
    const { upload, created } = await tenantStore(c.env, c.var.tenantId).createUpload(
      { ...body, idempotency_key: c.req.valid("header")["idempotency-key"] },
      c.var.config.uploadLifetimeMs,
    );
    return c.json(uploadResource(upload), 201, {
      Location: `/v1/uploads/${upload.upload_id}`,
      ...(created ? {} : { "Idempotent-Replayed": "true" }),
    });
  },
);

uploads.openapi(
  createRoute({
    method: "get",
    path: "/v1/uploads/{uid}",
    tags: ["uploads"],
    request: { params: PathParams },
    responses: {
      200: json(Upload, "the upload, to resume from received_bytes; a finalized one carries a strong ETag"),
      304: { description: "not modified (a finalized upload never changes)" },
      ...problemResponses(401, 404),
    },
  }),
  async (c) => {
    const up = await tenantStore(c.env, c.var.tenantId).getUpload(c.req.valid("param").uid);
    if (!up) throw notFound("upload");
    if (up.state !== "finalized") return c.json(uploadResource(up), 200);
    // Finalized uploads are immutable resources (4, caching rule 1).
    const etag = `"${up.upload_id}-${up.blob_sha}"`;
    if (etagMatches(c.req.header("If-None-Match"), etag)) return c.body(null, 304, { ETag: etag });
    return c.json(uploadResource(up), 200, { ETag: etag });
  },
);

/** `bytes <start>-<end>/<total|*>` (RFC 9110 14.4), or a 422 naming the header. */
export function parseContentRange(header: string | undefined): { start: number; end: number; total: number | null } {
  const m = /^bytes (\d{1,15})-(\d{1,15})\/(\d{1,15}|\*)$/.exec(header?.trim() ?? "");
  const bad = (message: string) =>
    validation(`malformed Content-Range: ${message}`, [{ path: "Content-Range", message, code: "invalid_content_range" }]);
  if (!m) throw bad("expected 'bytes <start>-<end>/<total>'");
  const [start, end] = [Number(m[1]), Number(m[2])];
  const total = m[3] === "*" ? null : Number(m[3]);
  if (end < start) throw bad("end is before start");
  if (total !== null && end >= total) throw bad("end is not below total");
  return { start, end, total };
}

uploads.openapi(
  createRoute({
    method: "patch",
    path: "/v1/uploads/{uid}",
    tags: ["uploads"],
    middleware: [chunkBodyLimit] as const,
    request: {
      params: PathParams,
      headers: z.object({ "content-range": z.string().describe("bytes <start>-<end>/<total>") }),
      body: { content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } }, required: true },
    },
    responses: {
      200: json(Upload, "the chunk is stored (or was already)"),
      ...problemResponses(401, 404, 409, 413, 422),
    },
  }),
  async (c) => {
    const { uid } = c.req.valid("param");
    const range = parseContentRange(c.req.header("Content-Range"));
    const length = range.end - range.start + 1;
    const max = c.var.config.maxChunkBytes;
    if (length > max) throw payloadTooLarge(`upload chunks are limited to ${max} bytes`);
    const store = tenantStore(c.env, c.var.tenantId);
    if (!(await store.getUpload(uid))) throw notFound("upload");
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.byteLength !== length) {
      throw validation(`the body has ${bytes.byteLength} bytes but Content-Range names ${length}`, [
        { path: "Content-Range", message: "body length differs from the range length", code: "length_mismatch" },
      ]);
    }
    const sha = await sha256Hex(bytes);
    const key = chunkKey(c.var.tenantId, uid, range.start, sha);
    await c.env.BLOBS.put(key, bytes);
    const outcome = await store.recordChunk(uid, { start: range.start, length, sha, r2_key: key }, range.total);
    // An identical re-send keeps the first copy (same key); a rejected chunk leaves nothing behind.
    if (!outcome.ok) await c.env.BLOBS.delete(key);
    return c.json(uploadResource(unwrap(outcome).upload), 200);
  },
);

uploads.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/uploads/{uid}:finalize",
    tags: ["uploads"],
    request: {
      params: PathParams,
      headers: z.object({ "x-content-sha256": Sha256.optional() }),
    },
    responses: { 200: json(Upload, "finalized; blob_sha addresses the bytes"), ...problemResponses(401, 404, 409, 422) },
  }),
  async (c) => {
    const { uid } = c.req.valid("param");
    const store = tenantStore(c.env, c.var.tenantId);
    const { upload, chunks } = unwrap(await store.chunksToFinalize(uid));
    // Finalized with its chunks released: done. (An upload that is not finalized may hold a blob
    // reserved by an earlier finalize that stopped before the bytes were in place: this one finishes it.)
    if (upload.state === "finalized" && chunks.length === 0) return c.json(uploadResource(upload), 200);
    const sha = await digestChunks(c.env.BLOBS, chunks);
    const claimed = [c.req.valid("header")["x-content-sha256"], upload.expected_sha].filter((s): s is string => !!s);
    const wrong = claimed.find((s) => s !== sha);
    if (wrong) {
      throw validation(`the received bytes hash to ${sha}, not ${wrong}`, [
        {
          path: c.req.valid("header")["x-content-sha256"] === wrong ? "X-Content-SHA256" : "expected_sha",
          message: "SHA-256 mismatch",
          code: "sha_mismatch",
        },
      ]);
    }
    const key = blobKey(c.var.tenantId, sha);
    const facts = await blobFacts(await uploadHead(c.env.BLOBS, chunks), key, sha, upload.expected_size, upload.content_type);
    // Reference first, bytes second: once referenced, the blob's key is safe from the garbage
    // collector; the upload is finalized (and its blob usable) only once the bytes are in place.
    unwrap(await store.reserveBlob(uid, facts));
    await storeBlob(c.env.BLOBS, key, chunks, upload.expected_size, upload.content_type);
    return c.json(uploadResource(unwrap(await store.completeFinalize(uid))), 200);
  },
);

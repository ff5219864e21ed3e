/**
 * @module Chunked uploads (spec 2.6, 3.3, 4.3): chunks recorded in order as they reach R2, then
 * finalized into a content-addressed blob that the upload holds a reference to until it expires.
 */
import { ulid } from "../ids";
import { type Outcome, clash, invalid, missing, ok } from "../outcome";
import { first, nowIso } from "../sql";
import type { BlobFacts, ChunkRecord, UploadInput, UploadRow } from "../tenant-rows";
import * as blobs from "./blobs";
import * as garbage from "./garbage";

const uploadOf = (r: Record<string, SqlStorageValue>) => r as unknown as UploadRow;

/** Creates an upload, or returns the one created earlier under the same `Idempotency-Key`. */
export function create(db: DurableObjectStorage, input: UploadInput, lifetimeMs: number): { upload: UploadRow; created: boolean } {
  expire(db);
  if (input.idempotency_key) {
    const prior = first(db.sql, "SELECT * FROM uploads WHERE idempotency_key = ?", input.idempotency_key);
    if (prior) return { upload: uploadOf(prior), created: false };
  }
  const now = Date.now();
  const row: UploadRow = {
    upload_id: ulid(),
    state: input.expected_size === 0 ? "received" : "open",
    expected_size: input.expected_size,
    received_bytes: 0,
    content_type: input.content_type ?? null,
    expected_sha: input.expected_sha ?? null,
    blob_sha: null,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + lifetimeMs).toISOString(),
  };
  db.sql.exec(
    `INSERT INTO uploads (upload_id, state, expected_size, received_bytes, content_type, expected_sha, blob_sha,
       idempotency_key, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    row.upload_id,
    row.state,
    row.expected_size,
    row.received_bytes,
    row.content_type,
    row.expected_sha,
    row.blob_sha,
    input.idempotency_key ?? null,
    row.created_at,
    row.expires_at,
  );
  garbage.schedule(db);
  return { upload: row, created: true };
}

/** The upload, or null when it never existed or has passed `expires_at` (3.3: both are 404). */
export function get(db: DurableObjectStorage, uploadId: string): UploadRow | null {
  const r = first(db.sql, "SELECT * FROM uploads WHERE upload_id = ?", uploadId);
  if (!r || (r.expires_at as string) <= nowIso()) return null;
  return uploadOf(r);
}

/**
 * Records a chunk already written to R2 at `chunk.r2_key`. Chunks append at `received_bytes`;
 * re-sending the same bytes at an offset already received is a no-op (4.3 idempotent re-send).
 * On any failure the caller deletes the orphan R2 object.
 */
export function recordChunk(
  db: DurableObjectStorage,
  uploadId: string,
  chunk: ChunkRecord,
  total: number | null,
): Outcome<{ upload: UploadRow; stored: boolean }> {
  const up = get(db, uploadId);
  if (!up) return missing("upload");
  if (total !== null && total !== up.expected_size) {
    return invalid(`Content-Range total ${total} differs from the upload's expected_size ${up.expected_size}`, [
      { path: "Content-Range", message: "total must equal expected_size", code: "total_mismatch" },
    ]);
  }
  if (chunk.start + chunk.length > up.expected_size) {
    return invalid(`chunk ends at byte ${chunk.start + chunk.length}, past expected_size ${up.expected_size}`, [
      { path: "Content-Range", message: "range exceeds expected_size", code: "range_exceeds_size" },
    ]);
  }
  const prior = first<{ length: number; sha: string }>(
    db.sql,
    "SELECT length, sha FROM upload_chunks WHERE upload_id = ? AND start = ?",
    uploadId,
    chunk.start,
  );
  if (prior) {
    if (prior.length === chunk.length && prior.sha === chunk.sha) return ok({ upload: up, stored: false });
    return clash(`different bytes were already received at offset ${chunk.start}`);
  }
  if (up.state === "finalized") return clash("the upload is finalized");
  if (chunk.start !== up.received_bytes) {
    return clash(`chunks must be sent in order: the next chunk starts at byte ${up.received_bytes}`);
  }
  const received = up.received_bytes + chunk.length;
  const state = received === up.expected_size ? "received" : "open";
  db.transactionSync(() => {
    db.sql.exec(
      "INSERT INTO upload_chunks (upload_id, start, length, sha, r2_key) VALUES (?, ?, ?, ?, ?)",
      uploadId,
      chunk.start,
      chunk.length,
      chunk.sha,
      chunk.r2_key,
    );
    db.sql.exec("UPDATE uploads SET received_bytes = ?, state = ? WHERE upload_id = ?", received, state, uploadId);
  });
  return ok({ upload: { ...up, received_bytes: received, state }, stored: true });
}

/** The chunks to assemble, in order, once every byte is received. */
export function chunksToFinalize(db: DurableObjectStorage, uploadId: string): Outcome<{ upload: UploadRow; chunks: ChunkRecord[] }> {
  const up = get(db, uploadId);
  if (!up) return missing("upload");
  if (up.state === "open") {
    return clash(`upload incomplete: ${up.received_bytes} of ${up.expected_size} bytes received`);
  }
  const chunks = db.sql
    .exec("SELECT start, length, sha, r2_key FROM upload_chunks WHERE upload_id = ? ORDER BY start", uploadId)
    .toArray() as unknown as ChunkRecord[];
  return ok({ upload: up, chunks });
}

/**
 * Takes the upload's reference to its blob before the caller writes the bytes to their content
 * address, so the garbage collector can no longer delete an earlier copy there, and notes the
 * blob on the upload. A blob new to the tenant stays pending (nothing can reference it) and the
 * upload stays `received` until `completeFinalize`: a finalize that fails in between (R2 down, the
 * Worker gone) shows nothing half-done, and the next finalize finishes it. Idempotent: a later
 * call for the same upload takes no second reference.
 */
export function reserveBlob(db: DurableObjectStorage, uploadId: string, blob: BlobFacts): Outcome<UploadRow> {
  const up = get(db, uploadId);
  if (!up) return missing("upload");
  if (up.blob_sha) return ok(up);
  db.transactionSync(() => {
    blobs.retain(db, blob, { pending: true });
    db.sql.exec("UPDATE uploads SET blob_sha = ? WHERE upload_id = ?", blob.sha, uploadId);
  });
  return ok({ ...up, blob_sha: blob.sha });
}

/** The bytes are at their content address: the upload is finalized, its blob usable, its chunks queued for deletion. */
export function completeFinalize(db: DurableObjectStorage, uploadId: string): Outcome<UploadRow> {
  const up = get(db, uploadId);
  if (!up) return missing("upload");
  const sha = up.blob_sha;
  if (!sha) return clash("the upload's blob is not reserved yet; finalize again");
  db.transactionSync(() => {
    db.sql.exec("UPDATE uploads SET state = 'finalized' WHERE upload_id = ?", uploadId);
    blobs.stored(db, sha);
    discardChunks(db, uploadId);
  });
  garbage.schedule(db);
  return ok({ ...up, state: "finalized" });
}

/** Uploads past `expires_at` are removed with their chunks; a finalized one drops its blob reference. */
export function expire(db: DurableObjectStorage): void {
  const expired = db.sql.exec<{ upload_id: string; blob_sha: string | null }>(
    "SELECT upload_id, blob_sha FROM uploads WHERE expires_at <= ?",
    nowIso(),
  );
  db.transactionSync(() => {
    for (const u of expired.toArray()) {
      discardChunks(db, u.upload_id);
      if (u.blob_sha) blobs.release(db, u.blob_sha);
      db.sql.exec("DELETE FROM uploads WHERE upload_id = ?", u.upload_id);
    }
  });
}

function discardChunks(db: DurableObjectStorage, uploadId: string): void {
  for (const c of db.sql.exec<{ r2_key: string }>("SELECT r2_key FROM upload_chunks WHERE upload_id = ?", uploadId)) {
    garbage.queue(db, c.r2_key);
  }
  db.sql.exec("DELETE FROM upload_chunks WHERE upload_id = ?", uploadId);
}

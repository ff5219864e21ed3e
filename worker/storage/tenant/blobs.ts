/**
 * @module A tenant's blobs and their reference counts. Bytes live in R2 at their content
 * address, stored once per tenant; each holder (an upload until it expires, an image, a job,
 * a reconstruction, an artifact) keeps references, and the last one released queues the bytes
 * and the objects derived from them for deletion (garbage.ts).
 */
import { type Failure, invalid } from "../outcome";
import { first, nowIso } from "../sql";
import type { BlobFacts, BlobRow, StoredFile } from "../tenant-rows";
import * as garbage from "./garbage";

/** A stored blob: one that something still references, with its bytes in place (not pending). */
export function get(db: DurableObjectStorage, sha: string): BlobRow | null {
  return first<BlobRow>(db.sql, "SELECT * FROM blobs WHERE sha = ? AND refcount > 0 AND pending = 0", sha);
}

/**
 * Stores the blob with one reference, or gives the stored one another; its bytes are no longer
 * garbage. A blob stored before the focal length and GPS were read gains them when its bytes are finalized again.
 * `pending`: the caller writes the bytes after this call (an upload's finalize, which takes the
 * reference first so the collector cannot delete an earlier copy): a blob new to the tenant stays
 * unusable until `stored`. A blob whose bytes are already in place stays usable.
 */
export function retain(db: DurableObjectStorage, b: BlobFacts, o: { pending?: boolean } = {}): void {
  db.sql.exec(
    `INSERT INTO blobs (sha, r2_key, size, media_type, width, height, focal_length_35mm, gps_json, refcount, created_at, pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
     ON CONFLICT (sha) DO UPDATE SET refcount = refcount + 1, focal_length_35mm = coalesce(focal_length_35mm, excluded.focal_length_35mm),
       gps_json = coalesce(gps_json, excluded.gps_json), width = coalesce(width, excluded.width), height = coalesce(height, excluded.height),
       pending = min(pending, excluded.pending)`,
    b.sha,
    b.r2_key,
    b.size,
    b.media_type,
    b.width,
    b.height,
    b.focal_length_35mm,
    b.gps_json,
    nowIso(),
    o.pending ? 1 : 0,
  );
  garbage.unqueue(db, b.r2_key);
}

/** The blob's bytes are at their content address: it may be referenced. */
export function stored(db: DurableObjectStorage, sha: string): void {
  db.sql.exec("UPDATE blobs SET pending = 0 WHERE sha = ?", sha);
}

/** One more reference to a stored blob. */
export function reference(db: DurableObjectStorage, sha: string): void {
  db.sql.exec("UPDATE blobs SET refcount = refcount + 1 WHERE sha = ?", sha);
}

/** Drops one reference; the last one queues the bytes and their derived objects (`<key>/...`) for deletion. */
export function release(db: DurableObjectStorage, sha: string): void {
  db.sql.exec("UPDATE blobs SET refcount = refcount - 1 WHERE sha = ?", sha);
  const gone = first<{ r2_key: string }>(db.sql, "SELECT r2_key FROM blobs WHERE sha = ? AND refcount <= 0", sha);
  if (gone) {
    db.sql.exec("DELETE FROM blobs WHERE sha = ?", sha);
    garbage.queue(db, gone.r2_key);
    garbage.queue(db, `${gone.r2_key}/`);
  }
}

/** The holders that keep one reference per blob they hold, and the table that records which. */
const HOLDINGS = {
  job: { table: "job_blobs", key: "job_id" },
  recon: { table: "recon_blobs", key: "recon_id" },
  artifact: { table: "artifact_blobs", key: "artifact_id" },
} as const;
export type Holder = keyof typeof HOLDINGS;

/** Records that the holder holds the blob; false when it already did. */
function claim(db: DurableObjectStorage, holder: Holder, id: string, sha: string): boolean {
  const { table, key } = HOLDINGS[holder];
  return db.sql.exec(`INSERT OR IGNORE INTO ${table} (${key}, sha) VALUES (?, ?)`, id, sha).rowsWritten > 0;
}

/** One more reference to a stored blob, held by the holder (once per holder and blob). */
export function hold(db: DurableObjectStorage, holder: Holder, id: string, sha: string): void {
  if (claim(db, holder, id, sha)) reference(db, sha);
}

/** Like `hold`, for bytes the tenant may not have stored yet (a runner's upload): stored with one reference, or one more. */
export function holdNew(db: DurableObjectStorage, holder: Holder, id: string, facts: BlobFacts): void {
  if (claim(db, holder, id, facts.sha)) retain(db, facts);
}

/** The holder's reference to one blob goes. */
export function letGo(db: DurableObjectStorage, holder: Holder, id: string, sha: string): void {
  const { table, key } = HOLDINGS[holder];
  db.sql.exec(`DELETE FROM ${table} WHERE ${key} = ? AND sha = ?`, id, sha);
  release(db, sha);
}

/** Every reference the holder keeps goes (the holder is being deleted). */
export function letGoAll(db: DurableObjectStorage, holder: Holder, id: string): void {
  const { table, key } = HOLDINGS[holder];
  for (const b of db.sql.exec<{ sha: string }>(`SELECT sha FROM ${table} WHERE ${key} = ?`, id).toArray()) release(db, b.sha);
  db.sql.exec(`DELETE FROM ${table} WHERE ${key} = ?`, id);
}

/** A named file whose bytes are the blob `ref.sha`, with where they are; null without a ref or a stored blob. */
export function storedFile(db: DurableObjectStorage, name: string, ref: { sha: string; size: number } | null): StoredFile | null {
  const blob = ref ? get(db, ref.sha) : null;
  return ref && blob ? { name, sha: ref.sha, size: ref.size, r2_key: blob.r2_key } : null;
}

/** A 422 naming each sha the tenant stores no blob for (at `path(i)`), or null when all are stored. */
export function unknown(db: DurableObjectStorage, shas: string[], path: (i: number) => string): Failure | null {
  const errors = shas.flatMap((sha, i) =>
    get(db, sha) ? [] : [{ path: path(i), message: `no finalized upload with blob_sha ${sha}`, code: "unknown_blob" }],
  );
  return errors.length ? invalid("unknown blob_sha: finalize an upload of these bytes first", errors) : null;
}

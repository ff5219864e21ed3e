/**
 * @module R2 garbage of a tenant: the keys of bytes nothing references any more, queued in
 * `r2_garbage` and deleted by the tenant object's alarm, which also wakes when the next upload
 * expires (spec 3.3).
 */
import { nowIso } from "../sql";

/** How long a garbage R2 key waits before its delete is retried, when R2 fails. */
const GC_RETRY_MS = 60_000;
/** Garbage keys deleted per alarm, so one run stays well inside blockConcurrencyWhile's 30 s. */
const GC_BATCH = 100;

/** Queues an R2 key for deletion; a key ending in '/' stands for every object under it. */
export function queue(db: DurableObjectStorage, r2Key: string): void {
  db.sql.exec("INSERT OR IGNORE INTO r2_garbage (r2_key, queued_at) VALUES (?, ?)", r2Key, nowIso());
}

/** Takes a blob's key and its derived objects off the queue: the bytes are referenced again. */
export function unqueue(db: DurableObjectStorage, r2Key: string): void {
  db.sql.exec("DELETE FROM r2_garbage WHERE r2_key IN (?, ?)", r2Key, `${r2Key}/`);
}

/** Wakes the alarm at once when garbage waits, else at the next upload expiry. */
export function schedule(db: DurableObjectStorage): void {
  const garbage = db.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM r2_garbage").one().n;
  const next = db.sql.exec<{ t: string | null }>("SELECT MIN(expires_at) AS t FROM uploads").one().t;
  const at = garbage > 0 ? Date.now() : next ? Date.parse(next) : null;
  if (at !== null) void db.setAlarm(at);
}

/** Deletes a batch of garbage from R2 (more waits for the next alarm), then wakes again when needed. */
export async function collect(state: DurableObjectState, bucket: R2Bucket): Promise<void> {
  // No other event runs while garbage is deleted, so a finalize cannot re-reference a blob
  // between the choice of its key and the R2 delete (the bytes would vanish under it).
  const deleted = await state.blockConcurrencyWhile(() => deleteBatch(state.storage, bucket));
  if (!deleted) await state.storage.setAlarm(Date.now() + GC_RETRY_MS);
  else schedule(state.storage);
}

/** False when R2 failed: the keys not yet deleted stay queued. */
async function deleteBatch(db: DurableObjectStorage, bucket: R2Bucket): Promise<boolean> {
  const keys = db.sql.exec<{ r2_key: string }>("SELECT r2_key FROM r2_garbage ORDER BY queued_at LIMIT ?", GC_BATCH).toArray();
  try {
    for (const k of keys) {
      const listed = k.r2_key.endsWith("/") ? await bucket.list({ prefix: k.r2_key }) : null;
      const doomed = listed ? listed.objects.map((o) => o.key) : [k.r2_key];
      if (doomed.length > 0) await bucket.delete(doomed);
      if (!listed?.truncated) db.sql.exec("DELETE FROM r2_garbage WHERE r2_key = ?", k.r2_key);
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * @module A dataset's images (spec 2.5, 4.5), each holding a reference to its blob, and the
 * dataset's manifest hash (2.4), which they determine. (datasets.ts builds on this module, so
 * a dataset's existence is read here from its table.)
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { ulid } from "../ids";
import { type Failure, type Outcome, clash, invalid, missing, ok } from "../outcome";
import { type PageRequest, type PageResult, exists, first, nowIso, paginate } from "../sql";
import type { ImageRow } from "../tenant-rows";
import * as blobs from "./blobs";
import * as garbage from "./garbage";
import * as posePriors from "./pose-priors";

const imageOf = (r: Record<string, SqlStorageValue>) => r as unknown as ImageRow;
const datasetExists = (db: DurableObjectStorage, datasetId: string) =>
  exists(db.sql, "SELECT 1 FROM datasets WHERE dataset_id = ?", datasetId);

/**
 * Registers every item or none (batchCreate is all-or-nothing). `listField` names the request's
 * list of items (`requests`), or is null for a single item whose fields are the body's own.
 * Registering a name the dataset already holds with the same blob (an upload source's entry,
 * a retried request) answers with the image that exists; the same name with other bytes is a
 * conflict.
 */
export function create(
  db: DurableObjectStorage,
  datasetId: string,
  items: { name: string; blob_sha: string }[],
  listField: string | null,
): Outcome<ImageRow[]> {
  if (!datasetExists(db, datasetId)) return missing("dataset");
  const at = (i: number, field: string) => (listField === null ? field : `${listField}.${i}.${field}`);
  const bad = blobs.unknown(
    db,
    items.map((i) => i.blob_sha),
    (i) => at(i, "blob_sha"),
  );
  if (bad) return bad;
  const dupes = duplicateNames(
    items.map((i) => i.name),
    (i) => at(i, "name"),
  );
  if (dupes) return dupes;
  const held = items.map((i) => byName(db, datasetId, i.name));
  const differing = items.find((item, k) => (held[k]?.content_sha ?? item.blob_sha) !== item.blob_sha);
  if (differing) return clash(`an image named '${differing.name}' with other bytes already exists in this dataset`);
  const rows = db.transactionSync(() => {
    const out = items.map((item, k) => held[k] ?? insert(db, datasetId, item.name, item.blob_sha));
    if (held.some((h) => !h)) refreshManifest(db, datasetId);
    return out;
  });
  return ok(rows);
}

const byName = (db: DurableObjectStorage, datasetId: string, name: string) =>
  first<ImageRow>(db.sql, "SELECT * FROM images WHERE dataset_id = ? AND name = ?", datasetId, name);

export function list(db: DurableObjectStorage, datasetId: string, page: PageRequest): Outcome<PageResult<ImageRow>> {
  if (!datasetExists(db, datasetId)) return missing("dataset");
  return ok(paginate(db.sql, { table: "images", key: "image_id", where: "dataset_id = ?", params: [datasetId] }, page, imageOf));
}

/** All images of a dataset in creation order (for stages that need the whole manifest). */
export function all(db: DurableObjectStorage, datasetId: string): ImageRow[] {
  return db.sql.exec("SELECT * FROM images WHERE dataset_id = ? ORDER BY image_id", datasetId).toArray().map(imageOf);
}

export function get(db: DurableObjectStorage, imageId: string): ImageRow | null {
  return first<ImageRow>(db.sql, "SELECT * FROM images WHERE image_id = ?", imageId);
}

export function remove(db: DurableObjectStorage, imageId: string): boolean {
  const img = get(db, imageId);
  if (!img) return false;
  db.transactionSync(() => {
    db.sql.exec("DELETE FROM images WHERE image_id = ?", imageId);
    posePriors.forgetImage(db, imageId);
    blobs.release(db, img.content_sha);
    refreshManifest(db, img.dataset_id);
  });
  garbage.schedule(db);
  return true;
}

export function removeByName(db: DurableObjectStorage, datasetId: string, name: string): boolean {
  const r = byName(db, datasetId, name);
  return r ? remove(db, r.image_id) : false;
}

/** Registers a stored blob as an image of the dataset, which references it (inside the caller's transaction). */
export function insert(db: DurableObjectStorage, datasetId: string, name: string, sha: string): ImageRow {
  const blob = blobs.get(db, sha)!;
  const row: ImageRow = {
    image_id: ulid(),
    dataset_id: datasetId,
    name,
    content_sha: sha,
    source_kind: "upload",
    rel_path: null,
    byte_size: blob.size,
    width: blob.width,
    height: blob.height,
    media_type: blob.media_type,
    focal_length_35mm: blob.focal_length_35mm,
    gps_json: blob.gps_json,
    created_at: nowIso(),
  };
  db.sql.exec(
    `INSERT INTO images (image_id, dataset_id, name, content_sha, source_kind, rel_path, byte_size, width, height,
       media_type, focal_length_35mm, gps_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ...Object.values(row),
  );
  blobs.reference(db, sha);
  return row;
}

/** Every image of the dataset goes with its prior, releasing its blob (the dataset is being deleted). */
export function removeAll(db: DurableObjectStorage, datasetId: string): void {
  posePriors.forgetDataset(db, datasetId);
  for (const img of db.sql.exec<{ content_sha: string }>("SELECT content_sha FROM images WHERE dataset_id = ?", datasetId)) {
    blobs.release(db, img.content_sha);
  }
  db.sql.exec("DELETE FROM images WHERE dataset_id = ?", datasetId);
}

/** Recomputes the dataset's manifest hash from its images (2.4). */
export function refreshManifest(db: DurableObjectStorage, datasetId: string): void {
  const pairs = db.sql
    .exec<{ name: string; content_sha: string }>("SELECT name, content_sha FROM images WHERE dataset_id = ?", datasetId)
    .toArray();
  db.sql.exec("UPDATE datasets SET manifest_hash = ? WHERE dataset_id = ?", manifestHash(pairs), datasetId);
}

/** SHA-256 of the sorted (name, content_sha) pairs (2.4). */
export function manifestHash(pairs: { name: string; content_sha: string }[]): string {
  const lines = pairs
    .map((p) => `${p.name}\t${p.content_sha}\n`)
    .sort()
    .join("");
  return bytesToHex(sha256(utf8ToBytes(lines)));
}

/** A 422 naming each repeat of an earlier name (at `path(i)`), or null when the names are unique. */
export function duplicateNames(names: string[], path: (i: number) => string): Failure | null {
  const seen = new Set<string>();
  const errors = names.flatMap((n, i) => {
    if (!seen.has(n)) {
      seen.add(n);
      return [];
    }
    return [{ path: path(i), message: `duplicate name '${n}'`, code: "duplicate" }];
  });
  return errors.length ? invalid("image names must be unique within a dataset", errors) : null;
}

/**
 * @module Pose priors (spec 4.12): at most one per image, validated by the route, kept as JSON
 * text and deleted with their image (images.ts calls `forgetImage`, `forgetDataset`).
 */
import { type Outcome, invalid, missing, ok } from "../outcome";
import { exists, first, nowIso } from "../sql";

const imageDataset = (db: DurableObjectStorage, imageId: string) =>
  first<{ dataset_id: string }>(db.sql, "SELECT dataset_id FROM images WHERE image_id = ?", imageId)?.dataset_id ?? null;

/** The image's prior (JSON text), or null when it has none; 404 when the image does not exist. */
export function get(db: DurableObjectStorage, imageId: string): Outcome<string | null> {
  if (!imageDataset(db, imageId)) return missing("image");
  return ok(first<{ prior_json: string }>(db.sql, "SELECT prior_json FROM pose_priors WHERE image_id = ?", imageId)?.prior_json ?? null);
}

export function put(db: DurableObjectStorage, imageId: string, priorJson: string): Outcome<null> {
  const datasetId = imageDataset(db, imageId);
  if (!datasetId) return missing("image");
  upsert(db, datasetId, imageId, priorJson);
  return ok(null);
}

/** Deletes the image's prior (none is fine: the image then has none, as asked); 404 when the image does not exist. */
export function remove(db: DurableObjectStorage, imageId: string): Outcome<null> {
  if (!imageDataset(db, imageId)) return missing("image");
  forgetImage(db, imageId);
  return ok(null);
}

/** Every prior of the dataset's images, by image id (JSON text); 404 when the dataset does not exist. */
export function ofDataset(db: DurableObjectStorage, datasetId: string): Outcome<Record<string, string>> {
  if (!exists(db.sql, "SELECT 1 FROM datasets WHERE dataset_id = ?", datasetId)) return missing("dataset");
  const rows = db.sql.exec<{ image_id: string; prior_json: string }>(
    "SELECT image_id, prior_json FROM pose_priors WHERE dataset_id = ? ORDER BY image_id",
    datasetId,
  );
  return ok(Object.fromEntries([...rows].map((r) => [r.image_id, r.prior_json])));
}

/** Writes every prior or none: each key must be an image of the dataset (422 naming the others). */
export function putMany(db: DurableObjectStorage, datasetId: string, priors: Record<string, string>): Outcome<{ written: number }> {
  if (!exists(db.sql, "SELECT 1 FROM datasets WHERE dataset_id = ?", datasetId)) return missing("dataset");
  const foreign = Object.keys(priors).filter((id) => imageDataset(db, id) !== datasetId);
  if (foreign.length > 0) {
    return invalid(
      "every key must be the image_id of an image of this dataset: nothing was written",
      foreign.map((id) => ({ path: id, message: "no image of this dataset has this id", code: "unknown_image" })),
    );
  }
  db.transactionSync(() => {
    for (const [imageId, json] of Object.entries(priors)) upsert(db, datasetId, imageId, json);
  });
  return ok({ written: Object.keys(priors).length });
}

/** The image's prior goes with it (inside the caller's transaction). */
export function forgetImage(db: DurableObjectStorage, imageId: string): void {
  db.sql.exec("DELETE FROM pose_priors WHERE image_id = ?", imageId);
}

/** Every prior of the dataset goes with its images (inside the caller's transaction). */
export function forgetDataset(db: DurableObjectStorage, datasetId: string): void {
  db.sql.exec("DELETE FROM pose_priors WHERE dataset_id = ?", datasetId);
}

function upsert(db: DurableObjectStorage, datasetId: string, imageId: string, json: string): void {
  db.sql.exec(
    `INSERT INTO pose_priors (image_id, dataset_id, prior_json, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (image_id) DO UPDATE SET prior_json = excluded.prior_json, updated_at = excluded.updated_at`,
    imageId,
    datasetId,
    json,
    nowIso(),
  );
}

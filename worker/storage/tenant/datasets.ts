/** @module Datasets (spec 2.3, 2.4, 4.4): an upload source's entries become the dataset's images at creation. */
import type { DatasetPatch } from "../../../protocol";
import { ulid } from "../ids";
import { type Outcome, missing, ok } from "../outcome";
import { type PageRequest, type PageResult, first, nowIso, paginate } from "../sql";
import type { BlobFacts, DatasetInput, DatasetRow } from "../tenant-rows";
import * as blobs from "./blobs";
import * as garbage from "./garbage";
import * as images from "./images";
import * as posePriors from "./pose-priors";
import * as projects from "./projects";

const datasetOf = (r: Record<string, SqlStorageValue>): DatasetRow => ({
  dataset_id: r.dataset_id as string,
  project_id: r.project_id as string,
  source_id: r.source_id as string,
  source: JSON.parse(r.source_json as string),
  name: r.name as string,
  camera_model: r.camera_model as string,
  intrinsics_mode: r.intrinsics_mode as DatasetRow["intrinsics_mode"],
  is_spherical: r.is_spherical === 1,
  respect_exif_orientation: r.respect_exif_orientation === 1,
  rig_config_text: (r.rig_config_json as string | null) ?? null,
  active_maskset_id: (r.active_maskset_id as string | null) ?? null,
  manifest_hash: r.manifest_hash as string,
  created_at: r.created_at as string,
});

/**
 * The dataset a task registers (4.14 rule 4, 4.2 imports), created with its images atomically: a
 * retry of the task gets the one it registered (`reused`); a name the project already has gets
 * the task id appended, so the name stays deterministic.
 */
export function createDerived(
  db: DurableObjectStorage,
  projectId: string,
  taskId: string,
  input: DatasetInput,
): Outcome<{ dataset: DatasetRow; reused: boolean }> {
  const registered = first(db.sql, "SELECT dataset_id FROM datasets WHERE created_by_task = ?", taskId);
  if (registered) return ok({ dataset: get(db, registered.dataset_id as string)!, reused: true });
  const taken = first(db.sql, "SELECT 1 AS x FROM datasets WHERE project_id = ? AND name = ?", projectId, input.name);
  const created = create(db, projectId, { ...input, name: taken ? `${input.name}-${taskId}` : input.name }, taskId);
  return created.ok ? ok({ dataset: created.value, reused: false }) : created;
}

/**
 * A dataset the service imported (4.2 Kapture): the blobs whose bytes it wrote for the images
 * (`made`), the dataset with its images and their pose priors (JSON text by image name), in one
 * transaction. A name the project already has gets `-2`, `-3`, ... appended.
 */
export function createImported(
  db: DurableObjectStorage,
  projectId: string,
  input: DatasetInput,
  made: BlobFacts[],
  priorsByName: Record<string, string>,
): Outcome<DatasetRow> {
  let name = input.name;
  for (let n = 2; first(db.sql, "SELECT 1 AS x FROM datasets WHERE project_id = ? AND name = ?", projectId, name); n++)
    name = `${input.name}-${n}`;
  let created: Outcome<DatasetRow> = missing("project");
  db.transactionSync(() => {
    // The images take their own references; these hold the new bytes until they do.
    for (const b of made) blobs.retain(db, b);
    created = create(db, projectId, { ...input, name });
    if (created.ok) {
      const ids = Object.fromEntries(images.all(db, created.value.dataset_id).map((i) => [i.name, i.image_id]));
      posePriors.putMany(db, created.value.dataset_id, Object.fromEntries(Object.entries(priorsByName).map(([n, p]) => [ids[n]!, p])));
    }
    for (const b of made) blobs.release(db, b.sha);
  });
  return created;
}

/** Creates the dataset and, for an `upload` source, registers its entries as images, atomically. */
export function create(
  db: DurableObjectStorage,
  projectId: string,
  input: DatasetInput,
  createdByTask: string | null = null,
): Outcome<DatasetRow> {
  if (!projects.get(db, projectId)) return missing("project");
  const entries = input.source.kind === "upload" ? input.source.entries : [];
  const bad = blobs.unknown(
    db,
    entries.map((e) => e.blob_sha),
    (i) => `source.entries.${i}.blob_sha`,
  );
  if (bad) return bad;
  const dupes = images.duplicateNames(
    entries.map((e) => e.name),
    (i) => `source.entries.${i}.name`,
  );
  if (dupes) return dupes;
  const datasetId = ulid();
  db.transactionSync(() => {
    db.sql.exec(
      `INSERT INTO datasets (dataset_id, project_id, source_id, source_json, name, camera_model, intrinsics_mode,
         is_spherical, respect_exif_orientation, rig_config_json, active_maskset_id, manifest_hash, created_at, created_by_task)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
      datasetId,
      projectId,
      ulid(),
      JSON.stringify(input.source),
      input.name,
      input.camera_model,
      input.intrinsics_mode,
      input.is_spherical ? 1 : 0,
      input.respect_exif_orientation ? 1 : 0,
      input.rig_config ? JSON.stringify(input.rig_config) : null,
      images.manifestHash([]),
      nowIso(),
      createdByTask,
    );
    for (const e of entries) images.insert(db, datasetId, e.name, e.blob_sha);
    images.refreshManifest(db, datasetId);
  });
  return ok(get(db, datasetId)!);
}

export function list(db: DurableObjectStorage, projectId: string, page: PageRequest): Outcome<PageResult<DatasetRow>> {
  if (!projects.get(db, projectId)) return missing("project");
  return ok(paginate(db.sql, { table: "datasets", key: "dataset_id", where: "project_id = ?", params: [projectId] }, page, datasetOf));
}

export function get(db: DurableObjectStorage, datasetId: string): DatasetRow | null {
  const r = first(db.sql, "SELECT * FROM datasets WHERE dataset_id = ?", datasetId);
  return r ? datasetOf(r) : null;
}

export function patch(db: DurableObjectStorage, datasetId: string, patch: DatasetPatch): DatasetRow | null {
  const cur = get(db, datasetId);
  if (!cur) return null;
  const next: DatasetRow = {
    ...cur,
    name: patch.name ?? cur.name,
    camera_model: patch.camera_model ?? cur.camera_model,
    intrinsics_mode: patch.intrinsics_mode ?? cur.intrinsics_mode,
    is_spherical: patch.is_spherical ?? cur.is_spherical,
    respect_exif_orientation: patch.respect_exif_orientation ?? cur.respect_exif_orientation,
    rig_config_text: patch.rig_config !== undefined ? (patch.rig_config ? JSON.stringify(patch.rig_config) : null) : cur.rig_config_text,
    active_maskset_id: patch.active_maskset_id !== undefined ? patch.active_maskset_id : cur.active_maskset_id,
  };
  db.sql.exec(
    `UPDATE datasets SET name = ?, camera_model = ?, intrinsics_mode = ?, is_spherical = ?,
       respect_exif_orientation = ?, rig_config_json = ?, active_maskset_id = ? WHERE dataset_id = ?`,
    next.name,
    next.camera_model,
    next.intrinsics_mode,
    next.is_spherical ? 1 : 0,
    next.respect_exif_orientation ? 1 : 0,
    next.rig_config_text,
    next.active_maskset_id,
    datasetId,
  );
  return next;
}

export function remove(db: DurableObjectStorage, datasetId: string): boolean {
  if (!get(db, datasetId)) return false;
  db.transactionSync(() => drop(db, datasetId));
  garbage.schedule(db);
  return true;
}

/** Forgets the dataset and its images, releasing their blobs (inside the caller's transaction). */
export function drop(db: DurableObjectStorage, datasetId: string): void {
  images.removeAll(db, datasetId);
  db.sql.exec("DELETE FROM datasets WHERE dataset_id = ?", datasetId);
}

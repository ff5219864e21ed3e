/**
 * @module `POST /v1/projects/{pid}/datasets:import_kapture` (spec 4.2, capability `import.kapture`):
 * an uploaded Kapture archive (`archive_path` = `blob:<sha256>`, an uncompressed tar or a zip)
 * becomes a dataset of the project. Its camera sensors set the dataset's camera model and
 * intrinsics mode, each camera record is an image (its bytes at `sensors/records_data/<path>`,
 * stored content-addressed), and each record with a pose in trajectories.txt (directly, or through
 * a rig of rigs.txt) gets that pose as its pose prior (4.12). The sensors' rigs and intrinsics
 * become the dataset's `rig_config` (COLMAP's rig config, protocol/wire/kapture.ts
 * kaptureRigConfig), so nothing of the archive's calibration is lost; the mapper does not read a
 * dataset's rig_config yet (it estimates every camera, starting from EXIF or a default focal
 * length, and only the spherical pipeline adjusts rigs), so they are recorded, not held fixed. The
 * archive may hold the kapture tree at its top or under one folder.
 *
 * This is parsing and copying, not computing, so the Worker does it within the request: the
 * archive is read in place (services/archives.ts, one file at a time), every listing and every
 * image is checked before anything is recorded (422 naming each file and line; nothing is
 * imported then), and the dataset, its images and priors are created in one transaction. The job
 * answered (202) is born succeeded, like an artifact import (4.10); its task's result is
 * `{sensors, records, image_root}` plus the dataset it created (`x-derived_dataset`).
 */
import { type DatasetCreate, type JobAccepted, type KaptureImportRequest, type KaptureImportResult, type PosePrior } from "../../protocol";
import {
  KAPTURE_IMAGE_ROOT,
  KAPTURE_RECORDS,
  KAPTURE_RIGS,
  KAPTURE_SENSORS,
  KAPTURE_TRAJECTORIES,
  KaptureError,
  type KaptureListings,
  kaptureRigConfig,
  parseKapture,
} from "../../protocol/wire/kapture";
import { type FieldError, notFound, validation } from "../errors";
import type { BlobFacts } from "../storage/tenant-rows";
import { type Archive, ArchiveError, openArchive } from "./archives";
import { SNIFF_BYTES, blobFacts, blobKey, sha256Hex } from "./blobs";
import { blobAtPath } from "./blob-paths";
import { requireCapability } from "./capabilities";
import { frozenDataset, submitJob } from "./jobs";
import { tenantStore, unwrap } from "./stores";

/** At most this many problems are listed in one answer. */
const MAX_PROBLEMS = 100;
/** Images read at once. */
const PARALLEL_READS = 4;

const malformed = (detail: string, errors: FieldError[]) => validation(`${detail}: nothing was imported`, errors.slice(0, MAX_PROBLEMS));

/** The folder holding `sensors/sensors.txt` ('' or 'name/'): the shallowest one. */
function kaptureRoot(archive: Archive): string {
  const roots = [...archive.files.keys()]
    .filter((p) => p === KAPTURE_SENSORS || p.endsWith(`/${KAPTURE_SENSORS}`))
    .map((p) => p.slice(0, p.length - KAPTURE_SENSORS.length))
    .sort((a, b) => a.split("/").length - b.split("/").length);
  if (roots.length === 0)
    throw malformed("the archive is not a Kapture dataset", [
      { path: "archive_path", message: `no ${KAPTURE_SENSORS} in the archive (at its top or under one folder)`, code: "malformed_kapture" },
    ]);
  return roots[0]!;
}

async function text(archive: Archive, path: string): Promise<string | null> {
  const entry = archive.files.get(path);
  if (!entry) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(await entry.read());
  } catch (err) {
    if (err instanceof ArchiveError) throw err;
    throw malformed("the Kapture archive is malformed", [{ path, message: "is not UTF-8 text", code: "malformed_kapture" }]);
  }
}

/** Runs `work` over `items`, `limit` at a time, in order of results. */
async function inBatches<T, R>(items: T[], limit: number, work: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += limit) out.push(...(await Promise.all(items.slice(i, i + limit).map((it, k) => work(it, i + k)))));
  return out;
}

/** The dataset's camera settings from the cameras its records use: their model (the most used), one camera or one per folder or image. */
function cameraSettings(listings: KaptureListings): Pick<DatasetCreate, "camera_model" | "intrinsics_mode"> {
  const used = new Map<string, string[]>();
  for (const r of listings.records) used.set(r.sensor_id, [...(used.get(r.sensor_id) ?? []), r.image_path]);
  const cameras = listings.cameras.filter((c) => used.has(c.sensor_id));
  const byModel = new Map<string, number>();
  for (const c of cameras) byModel.set(c.model, (byModel.get(c.model) ?? 0) + used.get(c.sensor_id)!.length);
  const camera_model = [...byModel].sort((a, b) => b[1] - a[1])[0]![0];
  if (cameras.length === 1) return { camera_model, intrinsics_mode: "single_camera" };
  // One camera per folder when no folder holds the images of two cameras.
  const folderOf = (p: string) => p.slice(0, p.lastIndexOf("/") + 1);
  const owner = new Map<string, string>();
  let perFolder = true;
  for (const [sensor, paths] of used) {
    for (const folder of new Set(paths.map(folderOf))) {
      if (owner.has(folder) && owner.get(folder) !== sensor) perFolder = false;
      owner.set(folder, sensor);
    }
  }
  return { camera_model, intrinsics_mode: perFolder ? "per_folder" : "per_image" };
}

export async function importKapture(env: Env, tenantId: string, projectId: string, body: KaptureImportRequest): Promise<JobAccepted> {
  requireCapability(env, "import.kapture");
  const tenant = tenantStore(env, tenantId);
  if (!(await tenant.getProject(projectId))) throw notFound("project");
  const blob = await blobAtPath(env, tenantId, body.archive_path, "archive_path");
  const archiveSha = blob.sha;
  let archive: Archive;
  let listings: KaptureListings;
  let root: string;
  try {
    archive = await openArchive(env.BLOBS, blob.r2_key, blob.size);
    root = kaptureRoot(archive);
    const texts = {
      sensors: (await text(archive, root + KAPTURE_SENSORS))!,
      records: await text(archive, root + KAPTURE_RECORDS),
      trajectories: await text(archive, root + KAPTURE_TRAJECTORIES),
      rigs: await text(archive, root + KAPTURE_RIGS),
    };
    if (texts.records === null)
      throw malformed("the archive is not a Kapture dataset", [
        { path: root + KAPTURE_RECORDS, message: "is missing: the dataset has no camera records", code: "malformed_kapture" },
      ]);
    listings = parseKapture({ ...texts, records: texts.records }, (p) => archive.files.has(`${root}${KAPTURE_IMAGE_ROOT}/${p}`));
  } catch (err) {
    if (err instanceof ArchiveError)
      throw malformed("the archive cannot be read", [{ path: "archive_path", message: err.message, code: "malformed_archive" }]);
    if (err instanceof KaptureError)
      throw malformed(
        `the Kapture archive is malformed (${err.problems.length} problem${err.problems.length === 1 ? "" : "s"})`,
        err.problems.map((p) => ({
          path: `${root!}${p.file}${p.line !== null ? `:${p.line}` : ""}`,
          message: p.message,
          code: "malformed_kapture",
        })),
      );
    throw err;
  }

  // Every image read and checked before any byte is stored, then stored where the tenant lacks it.
  const imagePath = (p: string) => `${root}${KAPTURE_IMAGE_ROOT}/${p}`;
  const read = async (p: string) => {
    try {
      return await archive.files.get(imagePath(p))!.read();
    } catch (err) {
      if (err instanceof ArchiveError)
        throw malformed("an image cannot be read", [{ path: imagePath(p), message: err.message, code: "malformed_archive" }]);
      throw err;
    }
  };
  const facts = await inBatches(listings.records, PARALLEL_READS, async (r) => {
    const bytes = await read(r.image_path);
    const sha = await sha256Hex(bytes);
    return blobFacts(bytes.subarray(0, SNIFF_BYTES), blobKey(tenantId, sha), sha, bytes.byteLength, null);
  });
  const notImages = listings.records.flatMap((r, i): FieldError[] =>
    facts[i]!.width === null
      ? [{ path: imagePath(r.image_path), message: "is not an image this service reads (JPEG, PNG, WebP, ...)", code: "not_an_image" }]
      : [],
  );
  if (notImages.length > 0) throw malformed("records of the Kapture archive are not images", notImages);
  await inBatches(listings.records, PARALLEL_READS, async (r, i) => {
    const f = facts[i]!;
    if (!(await env.BLOBS.head(f.r2_key)))
      await env.BLOBS.put(f.r2_key, await read(r.image_path), { httpMetadata: f.media_type ? { contentType: f.media_type } : undefined });
  });

  const priors: Record<string, string> = {};
  for (const r of listings.records) {
    if (!r.cam_from_world) continue;
    const prior: PosePrior = { cam_from_world: r.cam_from_world, timestamp_ns: r.timestamp };
    priors[r.image_path] = JSON.stringify(prior);
  }
  const folder = root.replace(/\/$/, "").split("/").pop();
  const rigs = kaptureRigConfig(listings);
  const made: BlobFacts[] = [...new Map(facts.map((f) => [f.sha, f])).values()];
  const dataset = unwrap(
    await tenant.createImportedDataset(
      projectId,
      {
        name: folder || `kapture-${archiveSha.slice(0, 12)}`,
        source: { kind: "upload", entries: listings.records.map((r, i) => ({ name: r.image_path, blob_sha: facts[i]!.sha })) },
        ...cameraSettings(listings),
        is_spherical: false,
        rig_config: rigs.rig_config,
        respect_exif_orientation: true,
      },
      made,
      priors,
    ),
  );
  const counts = new Map<string, number>();
  for (const r of listings.records) counts.set(r.sensor_id, (counts.get(r.sensor_id) ?? 0) + 1);
  const result: KaptureImportResult = {
    sensors: listings.cameras.filter((c) => counts.has(c.sensor_id)).map((c) => ({ ...c, num_records: counts.get(c.sensor_id)! })),
    records: listings.records.length,
    image_root: `${root}${KAPTURE_IMAGE_ROOT}`,
    "x-num_pose_priors": Object.keys(priors).length,
    "x-derived_dataset": { dataset_id: dataset.dataset_id, project_id: projectId, name: dataset.name, reused: false },
    "x-rig_config_skipped": rigs.skipped,
  };
  const images = await tenant.allImages(dataset.dataset_id);
  const stored = unwrap(await tenant.datasetPosePriors(dataset.dataset_id));
  return submitJob(env, {
    tenantId,
    projectId,
    dataset: frozenDataset(dataset, images, stored),
    recipe: "import_kapture",
    stages: [{ kind: "import_kapture", params: { import_kapture: { archive_sha: archiveSha } } }],
    input_artifacts: {},
    recon: null,
    imported: { artifacts: [], result },
  });
}

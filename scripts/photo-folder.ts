/**
 * @module A folder of photos through the API with the client: uploaded (resumable; photos the
 * server holds are not sent again), one dataset, a recipe (`incremental` or `global`) submitted; and the
 * final model read back from the reconstruction's last sealed snapshot. What `npm run
 * reconstruct`, the end-to-end benchmark and the end-to-end suites share.
 */
import { readFileSync, readdirSync } from "node:fs";
import { extname, join } from "node:path";
import { type EdgeSfmClient, PARALLEL_UPLOADS, atMost, type UploadProgress, type components, unwrap } from "../client/index";
import { CamerasFile, ImagesFile, SummaryFile } from "../protocol";

type DatasetCreate = components["schemas"]["DatasetCreate"];

const PHOTO = new Set([".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff"]);

/** The photos of a folder, by name. */
export function photoNames(folder: string): string[] {
  return readdirSync(folder)
    .filter((n) => PHOTO.has(extname(n).toLowerCase()))
    .sort();
}

export interface SubmitOptions {
  /** The project's and the dataset's name. */
  name: string;
  /** A project of the tenant to add the dataset to, instead of a new one. */
  project_id?: string;
  camera_model?: DatasetCreate["camera_model"];
  intrinsics_mode?: DatasetCreate["intrinsics_mode"];
  /** The recipe (2.12 PipelineSpec kind): `incremental` (default), `global` or `hierarchical`. */
  mapper?: "incremental" | "global" | "hierarchical";
  /** Fields of the recipe's spec beside its `kind`. */
  spec?: Record<string, unknown>;
  /** How pairs are chosen (2.12 PairsSpec); the recipe's default (exhaustive) when absent. */
  pairs?: components["schemas"]["PairsSpec"];
  signal?: AbortSignal;
  /** Each photo's upload progress: its index, its name, and the client's progress of its bytes. */
  onUpload?(index: number, name: string, p: UploadProgress): void;
}

export interface Submitted {
  project_id: string;
  dataset_id: string;
  job_id: string;
  recon_id: string;
}

/** Uploads every photo of `folder`, registers them as one dataset and submits the recipe (incremental by default) on it. */
export async function submitFolder(client: EdgeSfmClient, folder: string, o: SubmitOptions): Promise<Submitted> {
  const names = photoNames(folder);
  if (names.length === 0) throw new Error(`no photos in ${folder}`);
  const { signal } = o;
  const pid = o.project_id ?? (await unwrap(client.api.POST("/v1/projects", { body: { name: o.name }, signal }))).project_id;
  // A few photos at a time (as the demo uploads), each entry in its photo's place.
  const entries = await atMost(PARALLEL_UPLOADS, names, async (name, i) => {
    const bytes = new Uint8Array(readFileSync(join(folder, name)));
    const { blob_sha } = await client.upload(bytes, { signal, onProgress: (p) => o.onUpload?.(i, name, p) });
    return { name, blob_sha };
  });
  const dataset = await unwrap(
    client.api.POST("/v1/projects/{pid}/datasets", {
      params: { path: { pid } },
      body: {
        name: o.name,
        source: { kind: "upload", entries },
        camera_model: o.camera_model ?? "SIMPLE_RADIAL",
        intrinsics_mode: o.intrinsics_mode ?? "single_camera",
      },
      signal,
    }),
  );
  const job = await unwrap(
    client.api.POST("/v1/projects/{pid}/pipelines/{recipe}", {
      params: { path: { pid, recipe: o.mapper ?? "incremental" } },
      body: {
        dataset_id: dataset.dataset_id,
        spec: { kind: o.mapper ?? "incremental", ...o.spec },
        ...(o.pairs ? { pairs: o.pairs } : {}),
      },
      signal,
    }),
  );
  // A pipeline always makes a reconstruction (4.7); the type is shared with the stage routes, which make none.
  if (!job.recon_id) throw new Error(`pipeline job ${job.job_id} answered without a reconstruction`);
  return { project_id: pid, dataset_id: dataset.dataset_id, job_id: job.job_id, recon_id: job.recon_id };
}

/** A sealed snapshot as its files say: the model (cameras, images, points as `points.bin` bytes) and its summary. */
export interface SealedModel {
  seq: number;
  cameras: CamerasFile;
  images: ImagesFile;
  summary: SummaryFile;
  points: Uint8Array;
}

/**
 * The reconstruction's last sealed snapshot (its root: the largest model, or the models joined) or, with `submodel`,
 * one of its components (4.9, `summary.models[].idx`); throws when none is sealed.
 */
export async function lastSnapshot(
  client: EdgeSfmClient,
  reconId: string,
  o: { submodel?: number; signal?: AbortSignal } = {},
): Promise<SealedModel> {
  const { signal } = o;
  const { seqs } = await unwrap(client.api.GET("/v1/reconstructions/{rid}/snapshots", { params: { path: { rid: reconId } }, signal }));
  const seq = seqs.at(-1);
  if (seq === undefined) throw new Error(`reconstruction ${reconId} has no sealed snapshot`);
  const dir = `/v1/reconstructions/${encodeURIComponent(reconId)}/snapshots/${seq}${o.submodel === undefined ? "" : `/submodels/${o.submodel}`}`;
  const file = (name: string) => client.fetch(`${dir}/${name}`, { signal });
  const json = async (name: string) => (await file(name)).json();
  return {
    seq,
    cameras: CamerasFile.parse(await json("cameras.json")),
    images: ImagesFile.parse(await json("images.json")),
    summary: SummaryFile.parse(await json("summary.json")),
    points: new Uint8Array(await (await file("points.bin")).arrayBuffer()),
  };
}

/**
 * Every model of the reconstruction's last sealed snapshot, largest first: the root (the largest
 * model, or the models its seal joined by their shared photos), then each component (4.9) the root
 * does not hold: the models of photos that do not connect.
 */
export async function sealedModels(client: EdgeSfmClient, reconId: string, signal?: AbortSignal): Promise<SealedModel[]> {
  const root = await lastSnapshot(client, reconId, { signal });
  const joined = new Set((root.summary["x-joined_models"] as number[] | undefined) ?? [0]);
  const others = root.summary.models.filter((m) => !joined.has(m.idx) && m.num_reg_images > 0);
  return [root, ...(await Promise.all(others.map((m) => lastSnapshot(client, reconId, { submodel: m.idx, signal }))))];
}

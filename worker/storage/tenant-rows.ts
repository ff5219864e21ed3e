/** @module The tenant store's records, as they cross the RPC boundary (no links, no tenant id). */
import type { JobRow } from "./job-rows";
import type { DatasetCreate, ImageSource, UploadInit } from "../../protocol";

export interface ProjectRow {
  project_id: string;
  name: string;
  description: string | null;
  pool_opt_in: boolean;
  created_at: string;
}

export interface DatasetRow {
  dataset_id: string;
  project_id: string;
  source_id: string;
  source: ImageSource;
  name: string;
  camera_model: string;
  intrinsics_mode: "single_camera" | "per_image" | "per_folder";
  is_spherical: boolean;
  respect_exif_orientation: boolean;
  /** JSON text (free-form documents cross the RPC boundary as text). */
  rig_config_text: string | null;
  active_maskset_id: string | null;
  manifest_hash: string;
  created_at: string;
}

export interface ImageRow {
  image_id: string;
  dataset_id: string;
  name: string;
  content_sha: string;
  source_kind: "upload" | "local" | "s3";
  rel_path: string | null;
  byte_size: number | null;
  width: number | null;
  height: number | null;
  media_type: string | null;
  /** EXIF FocalLengthIn35mmFormat of the bytes, when they have one (the runner's prior focal length). */
  focal_length_35mm: number | null;
  /** The bytes' EXIF GPS position, a GpsCoord as JSON text, when they have one. */
  gps_json: string | null;
  created_at: string;
}

/** What the service learnt about finalized bytes (sniffed from the header once). */
export interface BlobFacts {
  sha: string;
  r2_key: string;
  size: number;
  media_type: string | null;
  width: number | null;
  height: number | null;
  /** EXIF FocalLengthIn35mmFormat, when the bytes are an image that has one. */
  focal_length_35mm: number | null;
  /** EXIF GPS, a GpsCoord as JSON text, when the bytes are an image that has one. */
  gps_json: string | null;
}

/** A stored blob: its facts, and how many references hold it. */
export interface BlobRow extends BlobFacts {
  refcount: number;
  created_at: string;
}

export interface UploadRow {
  upload_id: string;
  state: "open" | "received" | "finalized";
  expected_size: number;
  received_bytes: number;
  content_type: string | null;
  expected_sha: string | null;
  blob_sha: string | null;
  created_at: string;
  expires_at: string;
}

export interface ChunkRecord {
  start: number;
  length: number;
  sha: string;
  r2_key: string;
}

export type DatasetInput = DatasetCreate;
export type UploadInput = UploadInit & { idempotency_key?: string | undefined };

/** What identifies a pipeline's reconstruction (2.7): dataset snapshot, params and runtime. */
export interface ReconInput {
  dataset_id: string;
  dataset_snapshot_hash: string;
  params_hash: string;
  rv_id: string;
  spec_json: string;
}

export interface ReconRow {
  recon_id: string;
  project_id: string;
  dataset_id: string;
  dataset_snapshot_hash: string;
  params_hash: string;
  rv_id: string;
  spec_json: string;
  status: "pending" | "running" | "succeeded" | "failed";
  job_id: string;
  created_at: string;
}

export interface SubmodelRow {
  submodel_id: string;
  recon_id: string;
  idx: number;
  parent_submodel_id: string | null;
  /** JSON text (free-form documents cross the RPC boundary as text). */
  summary_json: string;
  rigidity_json: string | null;
  snapshot_seq: number;
  created_at: string;
}

/** A sealed file (or a reconstruction-level file) and where its bytes are. */
export interface StoredFile {
  name: string;
  sha: string;
  size: number;
  r2_key: string;
}

/** A validated seal (2.10): files per component (-1 = root) and each component's counts. */
export interface SealInput {
  recon_id: string;
  job_id: string;
  task_id: string;
  lease_id: string;
  /** Digest of the request, so a retried seal answers the snapshot it already made. */
  digest: string;
  /** The manifest of the dataset the map task's job froze: the snapshot artifacts' dataset scope. */
  manifest_hash: string | null;
  summary_json: string;
  files: { component: number; name: string; sha: string; size: number }[];
  components: { idx: number; num_reg_images: number; num_points3D: number; summary_json: string }[];
}

/** Where an artifact belongs (2.11): its project, the dataset it was computed from (by id and manifest), its reconstruction. */
export interface ArtifactScope {
  project_id: string;
  dataset_id: string | null;
  /** The dataset's manifest_hash when the producing job froze it: datasets with equal manifests are interchangeable. */
  manifest_hash: string | null;
  recon_id: string | null;
}

/** A stored artifact: the owner, the scope and the descriptor (JSON text, see DatasetRow). */
export interface ArtifactRow extends ArtifactScope {
  artifact_id: string;
  job_id: string;
  task_id: string;
  kind: string;
  name: string;
  descriptor_json: string;
  created_at: string;
}

/** A task whose outputs the tenant has not recorded yet (its cache entry and its artifacts). */
/** A new job as the tenant indexes it: its input blobs, the cache keys to look up (its tasks', its items'), its reconstruction. */
export interface JobRegistration {
  job: JobRow;
  input_shas: string[];
  /** Blobs the service wrote for the job itself (a similarity index, 4.11): stored, and held by the job. */
  made_blobs?: BlobFacts[];
  cache_keys: string[];
  /** Cache keys of sharded tasks' items (runners.md "Shards"), looked up like the tasks'. */
  item_keys?: string[];
  recon: ReconInput | { recon_id: string } | null;
}

/** What a JobStore tells the tenant after a change: tasks whose outputs to record, and computed items for the cache. */
export interface JobCompletions {
  dataset: { dataset_id: string; manifest_hash: string } | null;
  tasks: CompletedTask[];
  /** Items of sharded tasks a runner computed: cache entries only (their task's artifact is recorded with the task). */
  items?: { task_id: string; cache_key: string; outputs_json: string }[];
}

export interface CompletedTask {
  task_id: string;
  cache_key: string;
  /** Whether the outputs enter the task cache (3.2.1): a runner computed them (not a cache hit, not an import). */
  cacheable: boolean;
  /** TaskOutputs as JSON text. */
  outputs_json: string;
}

/** The exact-match filters of an artifact listing (4.8, 4.9). */
export interface ArtifactFilter {
  kind?: string | undefined;
  task_id?: string | undefined;
  name?: string | undefined;
}

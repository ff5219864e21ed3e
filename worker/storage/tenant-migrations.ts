/**
 * @module Schema of a tenant's Durable Object, one step per version. Append-only: a released
 * step is never edited; a change is a new step.
 */
export const TENANT_MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE projects (
      project_id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT,
      pool_opt_in INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)`,
    `CREATE TABLE datasets (
      dataset_id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES projects(project_id),
      source_id TEXT NOT NULL, source_json TEXT NOT NULL, name TEXT NOT NULL,
      camera_model TEXT NOT NULL, intrinsics_mode TEXT NOT NULL, is_spherical INTEGER NOT NULL,
      respect_exif_orientation INTEGER NOT NULL, rig_config_json TEXT, active_maskset_id TEXT,
      manifest_hash TEXT NOT NULL, created_at TEXT NOT NULL)`,
    `CREATE INDEX datasets_by_project ON datasets(project_id, dataset_id)`,
    `CREATE TABLE blobs (
      sha TEXT PRIMARY KEY, r2_key TEXT NOT NULL, size INTEGER NOT NULL, media_type TEXT, width INTEGER, height INTEGER,
      refcount INTEGER NOT NULL, created_at TEXT NOT NULL)`,
    `CREATE TABLE images (
      image_id TEXT PRIMARY KEY, dataset_id TEXT NOT NULL REFERENCES datasets(dataset_id),
      name TEXT NOT NULL, content_sha TEXT NOT NULL, source_kind TEXT NOT NULL, rel_path TEXT,
      byte_size INTEGER, width INTEGER, height INTEGER, media_type TEXT, created_at TEXT NOT NULL,
      UNIQUE (dataset_id, name))`,
    `CREATE INDEX images_by_dataset ON images(dataset_id, image_id)`,
    `CREATE TABLE uploads (
      upload_id TEXT PRIMARY KEY, state TEXT NOT NULL, expected_size INTEGER NOT NULL,
      received_bytes INTEGER NOT NULL, content_type TEXT, expected_sha TEXT, blob_sha TEXT,
      idempotency_key TEXT UNIQUE, created_at TEXT NOT NULL, expires_at TEXT NOT NULL)`,
    `CREATE INDEX uploads_by_expiry ON uploads(expires_at)`,
    `CREATE TABLE upload_chunks (
      upload_id TEXT NOT NULL, start INTEGER NOT NULL, length INTEGER NOT NULL, sha TEXT NOT NULL,
      r2_key TEXT NOT NULL, PRIMARY KEY (upload_id, start))`,
    `CREATE TABLE r2_garbage (r2_key TEXT PRIMARY KEY, queued_at TEXT NOT NULL)`,
  ],
  // Jobs (2.9): the index behind GET /v1/jobs (the JobStore of each job is the truth; `version`
  // is its event cursor, so a late update never overwrites a newer one), the task cache (3.2.1),
  // the blobs each job holds a reference to, and reconstructions (2.7).
  [
    `CREATE TABLE jobs (
      job_id TEXT PRIMARY KEY, project_id TEXT NOT NULL, status TEXT NOT NULL, job_json TEXT NOT NULL,
      version INTEGER NOT NULL DEFAULT 0)`,
    `CREATE INDEX jobs_by_status ON jobs(status, job_id)`,
    `CREATE INDEX jobs_by_project ON jobs(project_id)`,
    `CREATE TABLE task_cache (
      cache_key TEXT PRIMARY KEY, outputs_json TEXT NOT NULL, job_id TEXT NOT NULL, task_id TEXT NOT NULL, created_at TEXT NOT NULL)`,
    `CREATE INDEX task_cache_by_job ON task_cache(job_id)`,
    `CREATE TABLE job_blobs (job_id TEXT NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (job_id, sha))`,
    `CREATE TABLE reconstructions (
      recon_id TEXT PRIMARY KEY, project_id TEXT NOT NULL, dataset_id TEXT NOT NULL, dataset_snapshot_hash TEXT NOT NULL,
      params_hash TEXT NOT NULL, rv_id TEXT NOT NULL, spec_json TEXT NOT NULL, status TEXT NOT NULL, job_id TEXT NOT NULL,
      created_at TEXT NOT NULL, UNIQUE (project_id, dataset_snapshot_hash, params_hash, rv_id))`,
  ],
  // Sealed snapshots (2.10, 3.5: append-only rows, never updated), their files (component -1 is the
  // root), each component's counts per snapshot (2.8 rule 2 picks the largest), the SubModels (one
  // per component, following its latest snapshot), the reconstruction-level files (2.14) and the
  // blobs each reconstruction holds a reference to (once per reconstruction and blob).
  [
    `CREATE TABLE snapshots (
      recon_id TEXT NOT NULL, seq INTEGER NOT NULL, job_id TEXT NOT NULL, task_id TEXT NOT NULL, lease_id TEXT NOT NULL,
      digest TEXT NOT NULL, summary_json TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (recon_id, seq))`,
    `CREATE INDEX snapshots_by_lease ON snapshots(recon_id, lease_id, digest)`,
    `CREATE TABLE snapshot_files (
      recon_id TEXT NOT NULL, seq INTEGER NOT NULL, component INTEGER NOT NULL, name TEXT NOT NULL, sha TEXT NOT NULL,
      size INTEGER NOT NULL, PRIMARY KEY (recon_id, seq, component, name))`,
    `CREATE TABLE snapshot_components (
      recon_id TEXT NOT NULL, seq INTEGER NOT NULL, idx INTEGER NOT NULL, num_reg_images INTEGER NOT NULL,
      num_points3D INTEGER NOT NULL, PRIMARY KEY (recon_id, seq, idx))`,
    `CREATE TABLE submodels (
      submodel_id TEXT PRIMARY KEY, recon_id TEXT NOT NULL, idx INTEGER NOT NULL, parent_submodel_id TEXT,
      summary_json TEXT NOT NULL, rigidity_json TEXT, snapshot_seq INTEGER NOT NULL, created_at TEXT NOT NULL,
      UNIQUE (recon_id, idx))`,
    `CREATE TABLE recon_files (recon_id TEXT NOT NULL, name TEXT NOT NULL, sha TEXT NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (recon_id, name))`,
    `CREATE TABLE recon_blobs (recon_id TEXT NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (recon_id, sha))`,
  ],
  // Stage artifacts (2.11): one row per artifact a task produced (UNIQUE (task_id, ord): recording a
  // task's outputs again changes nothing), per imported artifact, and per sealed snapshot root
  // (component -1) or component (snapshot_seq set, ord null). Each holds its blobs once
  // (artifact_blobs), so the bytes live as long as the artifact.
  [
    `CREATE TABLE artifacts (
      artifact_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, task_id TEXT NOT NULL, ord INTEGER,
      project_id TEXT NOT NULL, dataset_id TEXT, manifest_hash TEXT, recon_id TEXT, snapshot_seq INTEGER, component INTEGER,
      kind TEXT NOT NULL, name TEXT NOT NULL, descriptor_json TEXT NOT NULL, created_at TEXT NOT NULL,
      UNIQUE (task_id, ord))`,
    `CREATE INDEX artifacts_by_job ON artifacts(job_id, artifact_id)`,
    `CREATE INDEX artifacts_by_recon ON artifacts(recon_id, artifact_id)`,
    `CREATE INDEX artifacts_by_project ON artifacts(project_id)`,
    `CREATE UNIQUE INDEX artifacts_by_snapshot ON artifacts(recon_id, snapshot_seq, component) WHERE snapshot_seq IS NOT NULL`,
    `CREATE TABLE artifact_blobs (artifact_id TEXT NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (artifact_id, sha))`,
  ],
  // The EXIF 35 mm-equivalent focal length read at finalize (null for blobs stored before it was
  // read, or without one), copied to each image of the bytes: the prior a job's runner starts from.
  [`ALTER TABLE blobs ADD COLUMN focal_length_35mm REAL`, `ALTER TABLE images ADD COLUMN focal_length_35mm REAL`],
  // Pose priors (4.12), one per image, deleted with it; and the EXIF GPS position read at finalize (a
  // GpsCoord as JSON text), copied to each image of the bytes like the focal length.
  [
    `CREATE TABLE pose_priors (image_id TEXT PRIMARY KEY, dataset_id TEXT NOT NULL, prior_json TEXT NOT NULL, updated_at TEXT NOT NULL)`,
    `CREATE INDEX pose_priors_by_dataset ON pose_priors(dataset_id, image_id)`,
    `ALTER TABLE blobs ADD COLUMN gps_json TEXT`,
    `ALTER TABLE images ADD COLUMN gps_json TEXT`,
  ],
  // A dataset's latest output of a kind: what a stage without `input_artifacts` reads (4.6).
  [`CREATE INDEX artifacts_by_dataset ON artifacts(dataset_id, kind, artifact_id)`],
  // The task that registered a derived dataset (4.14 rule 4; imports of 4.2): a retry of the task finds it.
  [
    `ALTER TABLE datasets ADD COLUMN created_by_task TEXT`,
    `CREATE UNIQUE INDEX datasets_by_task ON datasets(created_by_task) WHERE created_by_task IS NOT NULL`,
  ],
  // A blob new to the tenant is pending from the moment an upload's finalize takes its reference until its
  // bytes are at their content address: nothing can reference it, and the upload is not finalized, before then.
  [`ALTER TABLE blobs ADD COLUMN pending INTEGER NOT NULL DEFAULT 0`],
];

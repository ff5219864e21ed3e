/**
 * @module Schema of a job's Durable Object, one step per version. Append-only: a released step
 * is never edited; a change is a new step.
 */
export const JOB_MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE job (
      id INTEGER PRIMARY KEY CHECK (id = 1), job_id TEXT NOT NULL, tenant_id TEXT NOT NULL, project_id TEXT NOT NULL,
      recipe TEXT NOT NULL, status TEXT NOT NULL, cancel_requested INTEGER NOT NULL DEFAULT 0,
      cancel_force INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,
      error_class TEXT, error_message TEXT, recon_id TEXT, pool_opt_in INTEGER NOT NULL, dataset_json TEXT NOT NULL)`,
    `CREATE TABLE tasks (
      task_id TEXT PRIMARY KEY, ord INTEGER NOT NULL, kind TEXT NOT NULL, phase TEXT NOT NULL, status TEXT NOT NULL,
      depends_json TEXT NOT NULL, params_json TEXT NOT NULL, inputs_hash TEXT NOT NULL, params_hash TEXT NOT NULL,
      rv_id TEXT NOT NULL, cache_key TEXT NOT NULL, outputs_json TEXT, cache_hit INTEGER NOT NULL DEFAULT 0,
      attempts INTEGER NOT NULL DEFAULT 0, started_at TEXT, finished_at TEXT, error_class TEXT, error_message TEXT,
      checkpoint_json TEXT, latest_event_kind TEXT, progress_current INTEGER, progress_total INTEGER)`,
    `CREATE TABLE leases (
      lease_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, runner_id TEXT NOT NULL, pool INTEGER NOT NULL,
      granted_at TEXT NOT NULL, expires_at INTEGER NOT NULL, state TEXT NOT NULL)`,
    `CREATE INDEX leases_active ON leases(state, expires_at)`,
    `CREATE TABLE events (event_id INTEGER PRIMARY KEY, task_id TEXT, kind TEXT NOT NULL, body TEXT NOT NULL)`,
    `CREATE TABLE blobs (sha TEXT PRIMARY KEY, byte_size INTEGER NOT NULL)`,
  ],
  // Set while the tenant index or a queue missed a change; the alarm retries until they have it.
  [`ALTER TABLE job ADD COLUMN sync_pending INTEGER NOT NULL DEFAULT 0`],
  // The resolved `input_artifacts` by role (2.11), given to every lease; and whether the tenant has
  // recorded a succeeded task's outputs (its cache entry and its artifacts).
  [
    `ALTER TABLE job ADD COLUMN artifacts_json TEXT NOT NULL DEFAULT '{}'`,
    `ALTER TABLE tasks ADD COLUMN recorded INTEGER NOT NULL DEFAULT 0`,
  ],
  // Sharded tasks (runners.md "Shards"): a task's work as content-keyed items (cached one by one),
  // grouped into shards that runners lease independently; a lease covers a whole task or one shard.
  [
    `CREATE TABLE items (
      task_id TEXT NOT NULL, ord INTEGER NOT NULL, item_key TEXT NOT NULL, item_json TEXT NOT NULL, shard_id TEXT,
      outputs_json TEXT, cache_hit INTEGER NOT NULL DEFAULT 0, recorded INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (task_id, ord))`,
    `CREATE INDEX items_by_shard ON items(shard_id)`,
    `CREATE TABLE shards (
      shard_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, idx INTEGER NOT NULL, status TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0, runner_id TEXT)`,
    `CREATE INDEX shards_by_task ON shards(task_id, status, idx)`,
    `ALTER TABLE tasks ADD COLUMN sharded INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE leases ADD COLUMN shard_id TEXT`,
  ],
  // Untrusted results (runners.md "Trust"): every shard result with who computed it and its verdict;
  // a shard holding an unconfirmed result of an untrusted runner waits for a replica from another
  // principal, or for a trusted runner when two results disagree (need).
  [
    `CREATE TABLE shard_results (
      result_id INTEGER PRIMARY KEY, shard_id TEXT NOT NULL, lease_id TEXT NOT NULL, runner_id TEXT NOT NULL,
      principal TEXT NOT NULL, trusted INTEGER NOT NULL, outputs_json TEXT NOT NULL, verdict TEXT NOT NULL, created_at TEXT NOT NULL)`,
    `CREATE INDEX shard_results_by_shard ON shard_results(shard_id, verdict)`,
    `ALTER TABLE shards ADD COLUMN need TEXT NOT NULL DEFAULT 'any'`,
    `ALTER TABLE leases ADD COLUMN principal TEXT`,
  ],
  // A pipeline's max_runtime_seconds (2.12): the job fails once it has run this long.
  [`ALTER TABLE job ADD COLUMN max_runtime_seconds INTEGER`],
  // A backend action's job (4.16 :run): its tasks are reported with kind backend_action.
  [`ALTER TABLE job ADD COLUMN action_id TEXT`],
  // A match or verify block's listed pairs by image name (null: every pair of its groups), which weigh it when its shards
  // are packed again by the extraction's keypoint counts (job/sizing.ts).
  [`ALTER TABLE items ADD COLUMN pairs_json TEXT`],
];

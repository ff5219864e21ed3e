/**
 * @module The runner protocol (our reference-only extension): how a compute runner registers,
 * leases a task, holds the lease, reports progress, uploads outputs and completes. Shared by
 * the worker (which validates it) and browser-runtime (which speaks it).
 */
import { z } from "zod";
import { Phase, RunnerEvent } from "../events";
import { Id, Links, Problem, Sha256, Timestamp, queryNumber } from "./common";
import { ArtifactFile, StageArtifact } from "../artifacts";
import { GpsCoord, PosePrior } from "./geo";
import { TaskKind, TaskOutputs } from "./job";

/** What the runner's device offers; recorded with the runner and visible to operators. */
export const RunnerAbilities = z
  .object({
    webgpu: z
      .object({
        adapter: z.object({
          vendor: z.string().max(256).default(""),
          architecture: z.string().max(256).default(""),
          device: z.string().max(256).default(""),
          description: z.string().max(512).default(""),
          is_fallback_adapter: z.boolean().default(false),
        }),
        features: z.array(z.string().max(128)).max(128).default([]),
        limits: z.record(z.string(), z.number()).default({}),
      })
      .nullable()
      .default(null),
    wasm: z.object({ simd: z.boolean(), threads: z.boolean() }).default({ simd: false, threads: false }),
    memory_bytes: z.number().int().min(0).nullable().default(null),
    hardware_concurrency: z.number().int().min(1).nullable().default(null),
  })
  .meta({ id: "RunnerAbilities" });
export type RunnerAbilities = z.infer<typeof RunnerAbilities>;

/**
 * The version of the runner protocol (worker/routes/runners.md) this service speaks, reported by
 * `/version` as `x-runner_protocol`; raised when a change would break runners of an earlier build.
 */
export const RUNNER_PROTOCOL_VERSION = "1";

/**
 * Why a runner that speaks runner protocol `ours` must not work for a service that announces
 * `theirs` (its `/version` `x-runner_protocol`), or null when it may. `MAJOR[.MINOR]`: only a major
 * change breaks the other side, so the majors must be equal. A service that announces nothing
 * is refused too: this runner cannot know what it speaks.
 */
export function runnerProtocolMismatch(theirs: string | undefined, ours: string = RUNNER_PROTOCOL_VERSION): string | null {
  const major = (v: string) => v.split(".")[0];
  if (theirs !== undefined && major(theirs) === major(ours)) return null;
  const service = theirs === undefined ? "the service announces no runner protocol" : `the service speaks runner protocol ${theirs}`;
  const update =
    theirs !== undefined && Number(major(theirs)) < Number(major(ours))
      ? "run the runner of the service's release"
      : "update this runner (reload the page, or install the service's release)";
  return `${service}, this runner ${ours}: ${update}`;
}

/**
 * `runtime_versions` is the runner's build map (engine wasm and shader build ids, see
 * worker/services/runtime.ts); a runner leases only tasks whose `rv_id` its map hashes to.
 */
export const RunnerRegister = z
  .object({
    name: z.string().min(1).max(256),
    stages: z.array(TaskKind).min(1).max(16).describe("task kinds this runner computes"),
    runtime_versions: z.record(z.string().max(64), z.string().max(256)),
    abilities: RunnerAbilities.default(RunnerAbilities.parse({})),
  })
  .meta({ id: "RunnerRegister" });
export type RunnerRegister = z.infer<typeof RunnerRegister>;

export const Runner = z
  .object({
    runner_id: Id,
    name: z.string(),
    pool: z.boolean().describe("a volunteer runner (runner token): leases only tasks of projects with x-pool_opt_in"),
    stages: z.array(TaskKind),
    runtime_versions: z.record(z.string(), z.string()),
    rv_id: Sha256,
    service_rv_id: Sha256.describe(
      "the rv_id of tasks this service submits now; a runner whose rv_id differs (another engine build) is offered only older tasks of its own build, so it should be updated",
    ),
    abilities: RunnerAbilities,
    registered_at: Timestamp,
    lease_ttl_seconds: z.number().int(),
    heartbeat_interval_seconds: z.number().int(),
    _links: Links,
  })
  .meta({ id: "Runner" });
export type Runner = z.infer<typeof Runner>;

/** A job's inputs frozen at submission: the dataset as it was (its images and camera settings). */
export const DatasetSnapshot = z
  .object({
    dataset_id: Id,
    manifest_hash: Sha256,
    camera_model: z.string(),
    intrinsics_mode: z.string(),
    is_spherical: z.boolean(),
    respect_exif_orientation: z.boolean(),
    rig_config: z.record(z.string(), z.unknown()).nullable(),
    images: z.array(
      z.object({
        image_id: Id,
        name: z.string(),
        content_sha: Sha256,
        byte_size: z.number().int().nullable(),
        width: z.number().int().nullable(),
        height: z.number().int().nullable(),
        media_type: z.string().nullable(),
        focal_length_35mm: z
          .number()
          .positive()
          .nullable()
          .default(null)
          .describe("EXIF FocalLengthIn35mmFormat of the image, when it has one: the runner's prior focal length (COLMAP's rule)"),
        gps: GpsCoord.nullable().default(null).describe("the image's EXIF GPS position, when it has one"),
        pose_prior: PosePrior.nullable().default(null).describe("the image's pose prior (4.12), when it has one"),
      }),
    ),
  })
  .meta({ id: "DatasetSnapshot" });
export type DatasetSnapshot = z.infer<typeof DatasetSnapshot>;

/** The latest mapping checkpoint a runner stored; a resumed map task continues from it (3.1). */
export const Checkpoint = z
  .object({ blob_sha: Sha256, byte_size: z.number().int().min(0), summary: z.record(z.string(), z.unknown()).default({}) })
  .meta({ id: "Checkpoint" });
export type Checkpoint = z.infer<typeof Checkpoint>;

/** `continue`; `stop`: a cooperative cancel, finish the phase and `:release`; `teardown`: drop the work and the GPU device. */
export const LeaseDirective = z.enum(["continue", "stop", "teardown"]);
export type LeaseDirective = z.infer<typeof LeaseDirective>;

/**
 * One cacheable unit of a sharded task's work, keyed by the content it reads (its images' bytes,
 * the specs, the runtime): an image to extract, or a block of the pair list (the pairs between
 * two groups of images) to match or verify. Its output is one artifact with one file at `path`.
 */
export const ShardItem = z
  .object({
    key: Sha256.describe("the item's cache key: SHA-256 of what its result depends on"),
    path: z.string().describe("where the item's one output file goes in the task's artifact"),
    images: z.array(z.string()).describe("names of the dataset images the item reads"),
    block: z
      .tuple([z.array(z.string()), z.array(z.string())])
      .nullable()
      .default(null)
      .describe(
        "match and verify: the item covers the task's pairs with one image in each list (the same list twice: the pairs inside it)",
      ),
    reads: z
      .array(ArtifactFile)
      .optional()
      .describe(
        "a hierarchical map's merge item: the files of the task's earlier items it joins (the clusters' models); a match block of pairs chosen on a runner: the task's pair list",
      ),
  })
  .meta({ id: "ShardItem" });
export type ShardItem = z.infer<typeof ShardItem>;

/** The part of a sharded task a lease covers; the task succeeds when every shard has. */
export const LeaseShard = z
  .object({
    shard_id: z.string(),
    index: z.number().int().describe("0-based, in the task's item order"),
    count: z.number().int().describe("how many shards the task has now (a running task may add more)"),
    items: z.array(ShardItem).min(1).max(64),
  })
  .meta({ id: "LeaseShard" });
export type LeaseShard = z.infer<typeof LeaseShard>;

/** The most leases one request takes or completes (`x-max_leases`, runners.md "Batching"). */
export const MAX_LEASES = 32;

/** What a leased task reads: its dataset, its upstream tasks' outputs, its input artifacts. */
const LeaseInputs = z.object({
  dataset: DatasetSnapshot.nullable().describe(
    "the dataset frozen at submission; null for a conversion of an artifact that belongs to no dataset",
  ),
  upstream: z.array(z.object({ task_id: Id, kind: TaskKind, outputs_ref: TaskOutputs })),
  artifacts: z
    .record(z.string(), StageArtifact)
    .default({})
    .describe("resolved `input_artifacts` by role (2.11); `snapshot` or `submodel` for an export, `source` for a conversion"),
});

/**
 * A further lease's inputs by reference (`x-inputs_by_ref`, runners.md "Inputs by reference"): those of an
 * earlier lease of the same answer, which carries them whole.
 */
const LeaseInputsRef = z
  .object({
    "x-inputs_of": z.string().describe("the lease_id of an earlier lease in the same answer whose `inputs` these are"),
  })
  .meta({ id: "LeaseInputsRef" });

/** One lease's fields (a Lease adds the others of a multi-shard lease, runners.md "Batching"). */
const leaseFields = {
  lease_id: z.string(),
  runner_id: Id,
  expires_at: Timestamp,
  ttl_seconds: z.number().int(),
  task: z.object({
    task_id: Id,
    job_id: Id,
    kind: TaskKind,
    phase: Phase.describe("the task's own phase: the service reports its start and completion; the runner may report progress in it"),
    attempt: z.number().int(),
    params: z.record(z.string(), z.unknown()).describe("the normalised specs the task runs with"),
  }),
  inputs: LeaseInputs,
  // A union, not `.nullable()`: the OpenAPI generator would make the Checkpoint component itself nullable.
  checkpoint: z.union([Checkpoint, z.null()]),
  shard: z
    .union([LeaseShard, z.null()])
    .default(null)
    .describe(
      "a sharded task (extract, match, verify, a hierarchical map): the lease covers these items only; complete with one artifact per item, in order, each with one file at the item's path (a hierarchical map's merge item: the model's files). Null: the lease covers the whole task",
    ),
  _links: Links,
};

/**
 * One of the further leases of a multi-shard lease (`x-more_leases`): a Lease without more. Asked
 * with `x-inputs_by_ref`, its `inputs` may name an earlier lease's instead of repeating them.
 */
const MoreLease = z
  .object({
    ...leaseFields,
    inputs: z
      .union([LeaseInputs, LeaseInputsRef])
      .describe('the task\'s inputs, or with `x-inputs_by_ref` those of an earlier lease of the answer (runners.md "Inputs by reference")'),
  })
  .meta({ id: "MoreLease" });

export const Lease = z
  .object({
    ...leaseFields,
    "x-more_leases": z
      .array(MoreLease)
      .optional()
      .describe(
        'extension (2.0): the further leases of a request that asked for several (`x-max_leases`, runners.md "Batching"), each its own lease (id, expiry, heartbeats, completion)',
      ),
  })
  .meta({ id: "Lease" });
export type Lease = z.infer<typeof Lease>;

/** `wait`: long-poll for up to this many seconds until work is ready (0: answer at once). */
export const LeaseQuery = z.object({
  wait: queryNumber(z.number().int().min(0).max(25))
    .default(0)
    .describe("seconds to hold the request open until a task is ready (long poll); 0 answers at once"),
  "x-max_leases": queryNumber(z.number().int().min(1).max(MAX_LEASES))
    .optional()
    .describe(
      'extension (2.0): lease up to this many tasks or shards in one request (runners.md "Batching"): the first is the answer, the others its `x-more_leases`',
    ),
  "x-inputs_by_ref": z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true")
    .describe(
      'extension (2.0): with `x-max_leases`, a further lease whose inputs are those of an earlier one in the answer carries `{"x-inputs_of": <its lease_id>}` as its `inputs` (runners.md "Inputs by reference")',
    ),
});

export const LeaseState = z
  .object({ lease_id: z.string(), expires_at: Timestamp, directive: LeaseDirective, latest_event_id: z.number().int() })
  .meta({ id: "LeaseState" });
export type LeaseState = z.infer<typeof LeaseState>;

export const EventsPost = z.object({ events: z.array(RunnerEvent).min(1).max(500) }).meta({ id: "RunnerEventsPost" });

/** `outputs_ref` is validated by the service after parsing, so a malformed one can fail the task (2.11 rule 3). */
/** `:complete` with `x-lease_next` (runners.md "Batching"): the runner's next lease, or null when nothing is ready now. */
export const LeaseCompleted = z
  .object({ "x-lease": Lease.nullable().describe("the next lease, as `:lease` answers it; null: nothing ready now (ask `:lease?wait=`)") })
  .meta({ id: "LeaseCompleted" });
export const CompleteRequest = z
  .object({
    outputs_ref: z.unknown(),
    "x-lease_next": z
      .boolean()
      .optional()
      .describe(
        "extension (2.0): lease the runner's next task or shard in the same request, without waiting; answered 200 `LeaseCompleted` instead of 204",
      ),
  })
  .meta({ id: "LeaseComplete" });
/**
 * `POST /v1/runners/{rid}:complete_leases` (runners.md "Batching"): several of the runner's leases
 * completed in one request, each as its own `:complete` would be, and optionally its next leases.
 */
export const CompleteLeasesRequest = z
  .object({
    completions: z
      .array(z.object({ lease_id: z.string(), outputs_ref: z.unknown() }))
      .min(1)
      .max(MAX_LEASES)
      .describe("each lease held by this runner, with its result (as `:complete`'s `outputs_ref`)"),
    "x-lease_next": z.boolean().optional().describe("lease the runner's next work in the same request (as on `:complete`)"),
    "x-max_leases": z
      .number()
      .int()
      .min(1)
      .max(MAX_LEASES)
      .optional()
      .describe("with `x-lease_next`: up to this many (as on `:lease`); default 1"),
    "x-inputs_by_ref": z
      .boolean()
      .optional()
      .describe(
        'with `x-lease_next`: the further leases may carry their inputs by reference (as on `:lease`, runners.md "Inputs by reference")',
      ),
  })
  .meta({ id: "LeasesComplete" });
export const LeasesCompleted = z
  .object({
    completions: z
      .array(
        z.object({
          lease_id: z.string(),
          problem: z
            .union([Problem, z.null()])
            .describe("null: completed (what `:complete` answers 204); else the problem `:complete` would have answered"),
        }),
      )
      .describe("one per completion, in order; one's refusal leaves the others standing"),
    "x-lease": Lease.nullable().describe("with `x-lease_next`: the next lease (more in its `x-more_leases`), or null; else null"),
  })
  .meta({ id: "LeasesCompleted" });
export type LeasesCompleted = z.infer<typeof LeasesCompleted>;
export const FailRequest = z
  .object({
    error_class: z.string().min(1).max(128),
    message: z.string().max(8192),
    detail: z.record(z.string(), z.unknown()).nullable().default(null),
  })
  .meta({ id: "LeaseFail" });
export type FailRequest = z.infer<typeof FailRequest>;
export const ReleaseRequest = z.object({ reason: z.string().max(1024).default("released by the runner") }).meta({ id: "LeaseRelease" });

export const BlobStored = z.object({ blob_sha: Sha256, byte_size: z.number().int() }).meta({ id: "BlobStored" });

export const RunnerTokenIssue = z.object({ name: z.string().max(256).optional() }).meta({ id: "RunnerTokenIssue" });
export const RunnerToken = z
  .object({
    token_id: Id,
    name: z.string().nullable(),
    created_at: Timestamp,
    revoked_at: Timestamp.nullable(),
    quarantined_at: Timestamp.nullable().describe(
      "set when a runner of this token returned a result that disagreed with a trusted or independent one; the token is refused from then on",
    ),
    quarantine_reason: z.string().nullable().describe("which result disagreed, with whose, by which measure"),
    confirmed: z
      .number()
      .int()
      .describe(
        "results of this token's runners that another runner's confirmed; below SVC_POOL_VALIDATION_TRUST_AFTER every result is replicated",
      ),
    raw_token: z.string().nullable().describe("`sfr_<ULID>_<random>`; present only in the issuing response"),
  })
  .meta({ id: "RunnerToken" });
export type RunnerToken = z.infer<typeof RunnerToken>;

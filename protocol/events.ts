/**
 * @module ProgressEvent (spec 6): the event kinds and phase names, defined once for the worker
 * (which stores and streams them), the runner (which posts some of them) and the site (which
 * renders them). Kinds are additive (6.1): a reader surfaces an unknown kind through a generic
 * catch-all instead of failing the stream.
 */
import { z } from "zod";
import { Id, Timestamp } from "./schemas/common";

/** The `phase` values of section 6, plus `artifact_import` and `georegister` (additive values, 9.2): the phases of an `artifact_import` task (4.10) and of a `georegister` task (4.13). */
export const PHASES = [
  "feature_extraction",
  "matching",
  "geometric_verification",
  "incremental_init",
  "incremental_register",
  "incremental_ba",
  "global_rotation_avg",
  "global_positioning",
  "global_ba",
  "hierarchical_cluster",
  "hierarchical_merge",
  "panorama",
  "spherical",
  "bundle_adjust",
  "triangulate",
  "relocalize",
  "pose_graph_optimize",
  "segment",
  "export",
  "vlad_index",
  "backend_action",
  "artifact_conversion",
  "artifact_import",
  "georegister",
] as const;
export const Phase = z.enum(PHASES);
export type Phase = z.infer<typeof Phase>;

export const JOB_STATUSES = ["pending", "running", "succeeded", "failed", "cancelled", "cancelled_dirty"] as const;
export const JobStatus = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatus>;
export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(["succeeded", "failed", "cancelled", "cancelled_dirty"]);

export const LogLevel = z.enum(["DEBUG", "INFO", "WARNING", "ERROR"]);

/** The kind-specific members of each event (6), without the common fields. */
export const PhaseStarted = z.object({ kind: z.literal("phase_started"), phase: Phase });
export const PhaseProgress = z.object({
  kind: z.literal("phase_progress"),
  phase: Phase,
  current: z.number().int().min(0),
  total: z.number().int().min(0).nullable(),
  rate: z.number().nullable(),
});
export const PhaseCompleted = z.object({ kind: z.literal("phase_completed"), phase: Phase });
export const Metric = z.object({ kind: z.literal("metric"), key: z.string().min(1).max(256), value: z.number() });
export const SnapshotAvailable = z.object({
  kind: z.literal("snapshot_available"),
  snapshot_seq: z.number().int().min(0),
  summary: z.record(z.string(), z.unknown()),
});
export const LogLine = z.object({ kind: z.literal("log_line"), level: LogLevel, message: z.string().max(8192) });
export const Warning = z.object({ kind: z.literal("warning"), message: z.string().max(8192) });
export const ErrorEvent = z.object({
  kind: z.literal("error"),
  error_class: z.string(),
  message: z.string(),
  detail: z.record(z.string(), z.unknown()).nullable(),
});
/**
 * Our additive kind (6.1, 9.5): the job's status changed. The event that carries a terminal
 * status is the last one of a run, after which SSE and WebSocket streams close.
 */
export const JobStatusChanged = z.object({
  kind: z.literal("job_status"),
  status: JobStatus,
  error_class: z.string().nullable(),
});

/** Fields every ProgressEvent carries (6), plus `event_id`, the durable cursor (the SSE `id:`). */
const Common = {
  schema_version: z.literal(1),
  event_id: z.number().int().positive().describe("position in the job's log; the SSE id and Last-Event-ID cursor"),
  ts: Timestamp,
  job_id: Id,
  task_id: Id.nullable(),
  seq: z.number().int().positive().describe("equals event_id: the event's place in its job's log"),
};

export const ProgressEvent = z
  .discriminatedUnion("kind", [
    PhaseStarted.extend(Common),
    PhaseProgress.extend(Common),
    PhaseCompleted.extend(Common),
    Metric.extend(Common),
    SnapshotAvailable.extend(Common),
    LogLine.extend(Common),
    Warning.extend(Common),
    ErrorEvent.extend(Common),
    JobStatusChanged.extend(Common),
  ])
  .meta({ id: "ProgressEvent" });
export type ProgressEvent = z.infer<typeof ProgressEvent>;

/** An event's kind-specific part, as the service composes it before stamping the common fields. */
export const EventBody = z.discriminatedUnion("kind", [
  PhaseStarted,
  PhaseProgress,
  PhaseCompleted,
  Metric,
  SnapshotAvailable,
  LogLine,
  Warning,
  ErrorEvent,
  JobStatusChanged,
]);
export type EventBody = z.infer<typeof EventBody>;

/**
 * What a runner may post through a progress reporter (6.3): intermediate progress, metrics,
 * warnings and log lines, plus start/completion of sub-phases. The start and completion of a
 * task's own phase are the service's to emit; errors travel with `:fail`.
 */
export const RunnerEvent = z
  .discriminatedUnion("kind", [PhaseStarted, PhaseProgress, PhaseCompleted, Metric, LogLine, Warning])
  .meta({ id: "RunnerEvent" });
export type RunnerEvent = z.infer<typeof RunnerEvent>;

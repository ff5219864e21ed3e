/**
 * @module @edgesfm/client: a typed client of the EdgeSfM API (SfM Service Interface
 * Specification v1) for browsers, Web Workers, Node and Workers.
 */
export { type Api, type Page, collect, pages, unwrap } from "./api.js";
export { atMost } from "./at-most.js";
export { type ClientOptions, EdgeSfmClient, createEdgeSfmClient } from "./client.js";
export {
  type EventStreamOptions,
  type JobEvent,
  type JobStatus,
  type Phase,
  type ProgressEvent,
  type StreamState,
  type TaskKind,
  type UnknownEvent,
  type WebSocketFactory,
  TERMINAL_STATUSES,
  isTerminal,
} from "./events.js";
export { type FetchLike, type Problem, ProblemError, Transport, type TransportOptions, describeError } from "./http.js";
export { type JobDetail, type WaitOptions } from "./jobs.js";
export { type JobProgressOut, type JobProgressUpdate, JobProgressTracker, StageClock, type StageProgress, formatEta } from "./progress.js";
export * from "./runner.js";
export type { components, paths } from "./schema.js";
export { sha256Hex } from "./sha256.js";
export {
  DEFAULT_CHUNK_BYTES,
  PARALLEL_UPLOADS,
  type Upload,
  type UploadOptions,
  type UploadPhase,
  type UploadProgress,
  type UploadResult,
} from "./uploads.js";

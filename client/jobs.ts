/**
 * @module Waiting for a job (4.8): its progress snapshot, then its events from that snapshot's
 * cursor, with a progress callback (the job's fraction, the running stage's rate and time left)
 * at every change, until the job's terminal status; answers the final JobDetail.
 */
import { type Api, unwrap } from "./api.js";
import { type EventStreamOptions, type JobEvent, type ProgressEvent, TERMINAL_STATUSES } from "./events.js";
import { JobProgressTracker, type JobProgressUpdate } from "./progress.js";
import type { components } from "./schema.js";

export type JobDetail = components["schemas"]["JobDetail"];

export interface WaitOptions {
  signal?: AbortSignal;
  /** Every event after the snapshot, in order (unknown kinds too). */
  onEvent?(e: JobEvent): void;
  onProgress?(p: JobProgressUpdate): void;
  onState?: EventStreamOptions["onState"];
}

/** Kinds after which tasks may have started or ended: the snapshot is read again. */
const TASK_BOUNDARIES = new Set(["phase_started", "phase_completed", "job_status", "error"]);

export async function waitForJob(
  api: Api,
  events: (jobId: string, o: EventStreamOptions) => AsyncIterable<JobEvent>,
  jobId: string,
  o: WaitOptions = {},
): Promise<JobDetail> {
  const { signal } = o;
  const progress = () => unwrap(api.GET("/v1/jobs/{jid}/progress", { params: { path: { jid: jobId } }, signal }));
  const first = await progress();
  const tracker = new JobProgressTracker(first);
  o.onProgress?.(tracker.update());
  if (!TERMINAL_STATUSES.has(first.status)) {
    for await (const e of events(jobId, { after: first.latest_event_id, signal, onState: o.onState })) {
      o.onEvent?.(e);
      const changed = tracker.apply(e as ProgressEvent);
      if (changed) o.onProgress?.(changed);
      if (TASK_BOUNDARIES.has(e.kind)) o.onProgress?.(tracker.refresh(await progress()));
    }
  }
  return unwrap(api.GET("/v1/jobs/{jid}", { params: { path: { jid: jobId } }, signal }));
}

/** @module A job's progress (spec 4.8 JobProgressOut), computed from its tasks and its latest phase event. */
import type { JobStatus } from "../../../protocol";
import { TERMINAL_STATUSES } from "../../../protocol";
import type { JobContext } from "./context";
import { latestEventId, latestPhase } from "./events";
import { backendAction, jobRow, reportedKind, str, taskRows } from "./records";

/** Terminal tasks count 1.0, a running one `current/total` when both are known, others 0. */
export function progress(cx: JobContext) {
  const job = jobRow(cx);
  if (!job) return null;
  const now = Date.now();
  const rows = taskRows(cx);
  const actionId = backendAction(cx);
  const counts = Object.fromEntries(
    ["pending", "running", "succeeded", "failed", "cancelled", "cancelled_dirty"].map((s) => [s, 0]),
  ) as Record<JobStatus, number>;
  const tasks = rows.map((r) => {
    const status = r.status as JobStatus;
    counts[status] += 1;
    const current = r.progress_current as number | null;
    const total = r.progress_total as number | null;
    const fraction = TERMINAL_STATUSES.has(status)
      ? 1
      : status === "running" && current !== null && total !== null && total > 0
        ? Math.min(1, current / total)
        : 0;
    const started = str(r.started_at);
    const finished = str(r.finished_at);
    return {
      task_id: r.task_id as string,
      ...reportedKind(r, actionId),
      status,
      progress: fraction,
      latest_event_kind: str(r.latest_event_kind),
      elapsed_seconds: started ? ((finished ? Date.parse(finished) : now) - Date.parse(started)) / 1000 : null,
      current: status === "running" ? current : null,
      total: status === "running" ? total : null,
    };
  });
  const current = tasks.find((t) => t.status === "running") ?? tasks.find((t) => t.status === "pending") ?? null;
  return {
    job_id: job.job_id,
    recipe: job.recipe,
    status: job.status,
    progress: tasks.length ? tasks.reduce((s, t) => s + t.progress, 0) / tasks.length : 1,
    total_tasks: tasks.length,
    completed_tasks: tasks.filter((t) => TERMINAL_STATUSES.has(t.status)).length,
    task_counts: counts,
    current_task_id: current?.task_id ?? null,
    current_task_kind: current?.kind ?? null,
    current_phase: latestPhase(cx),
    latest_event_id: latestEventId(cx),
    tasks,
  };
}

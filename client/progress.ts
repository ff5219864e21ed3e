/**
 * @module How far a job is and how long its current stage has left: the job's fraction by the
 * rules of spec 4.8 (terminal tasks 1, a running task `current / total` of its latest
 * `phase_progress`, others 0), and each stage's rate (items per second) and time left, from its
 * `phase_progress` events.
 */
import type { JobStatus, Phase, ProgressEvent, TaskKind } from "./events.js";
import { TERMINAL_STATUSES } from "./events.js";
import type { components } from "./schema.js";

export type JobProgressOut = components["schemas"]["JobProgressOut"];
type PhaseProgress = Extract<ProgressEvent, { kind: "phase_progress" }>;

/** One stage (a task's phase) as far as its events tell. */
export interface StageProgress {
  task_id: string | null;
  kind: TaskKind | null;
  phase: Phase;
  current: number;
  total: number | null;
  /** Items per second over the stage so far: the runner's, else measured from the events' timestamps; null until known. */
  rate: number | null;
  /** Seconds the stage has left at that rate; null while the total or the rate is unknown. */
  eta_seconds: number | null;
}

export interface JobProgressUpdate {
  job_id: string;
  status: JobStatus;
  /** In [0, 1], best-effort (4.8): decide what is terminal by `status`, never by this. */
  fraction: number;
  completed_tasks: number;
  total_tasks: number;
  /** The stage progressing now, or null before the first progress report (and after the job ended). */
  stage: StageProgress | null;
}

/** Rate and time left of each stage, from its phase_progress events. */
export class StageClock {
  private readonly first = new Map<string, { t: number; current: number }>();

  observe(e: PhaseProgress, kind: TaskKind | null = null): StageProgress {
    const key = `${e.task_id}\u0000${e.phase}`;
    const t = Date.parse(e.ts);
    const first = this.first.get(key);
    if (!first) this.first.set(key, { t, current: e.current });
    const seconds = first ? (t - first.t) / 1000 : 0;
    const measured = first && seconds > 0 ? (e.current - first.current) / seconds : null;
    const rate = e.rate !== null && e.rate > 0 ? e.rate : measured !== null && measured > 0 ? measured : null;
    const eta = e.total !== null && rate !== null ? Math.max(0, e.total - e.current) / rate : null;
    return { task_id: e.task_id, kind, phase: e.phase, current: e.current, total: e.total, rate, eta_seconds: eta };
  }
}

/**
 * Follows a job from its 4.8 progress snapshot and the events after it: `apply` each event;
 * `refresh` with a new snapshot when tasks start or end (the snapshot is the truth on task
 * states, the events on the running stage).
 */
export class JobProgressTracker {
  private readonly clock = new StageClock();
  private stage: StageProgress | null = null;

  constructor(private snapshot: JobProgressOut) {}

  refresh(snapshot: JobProgressOut): JobProgressUpdate {
    this.snapshot = snapshot;
    if (TERMINAL_STATUSES.has(snapshot.status)) this.stage = null;
    return this.update();
  }

  /** Answers the new state when the event changed it (phase_progress), else null. */
  apply(e: ProgressEvent): JobProgressUpdate | null {
    if (e.kind !== "phase_progress") return null;
    const task = this.snapshot.tasks.find((t) => t.task_id === e.task_id);
    this.stage = this.clock.observe(e, task?.kind ?? null);
    // A task that reports progress runs, whatever the last snapshot said.
    if (task && task.status === "pending") task.status = "running";
    if (task && e.total) Object.assign(task, { current: e.current, total: e.total, progress: Math.min(1, e.current / e.total) });
    return this.update();
  }

  update(): JobProgressUpdate {
    const s = this.snapshot;
    const tasks = s.tasks;
    const fraction =
      tasks.length === 0
        ? s.progress
        : tasks.reduce((sum, t) => sum + (TERMINAL_STATUSES.has(t.status) ? 1 : t.status === "running" ? t.progress : 0), 0) / tasks.length;
    return {
      job_id: s.job_id,
      status: s.status,
      fraction,
      completed_tasks: s.completed_tasks,
      total_tasks: s.total_tasks,
      stage: this.stage,
    };
  }
}

/** `seconds` as a short duration for a progress line: `45 s`, `3 min 20 s`, `1 h 05 min`. */
export function formatEta(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

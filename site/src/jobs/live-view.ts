/**
 * @module Step 3, the live job: initial state from `GET /progress` (4.8), then the SSE stream
 * from its `latest_event_id` (6): a phase timeline with per-phase progress, rate and time left
 * (at the stage's rate: the runner's, else measured from its events; client/progress.ts), the job's progress
 * bar, a log pane (log lines, warnings, errors, unknown kinds), and the 3D view reloaded at every
 * `snapshot_available`.
 */
import { type JobProgressOut, StageClock, formatEta } from "../../../client/index";
import { type JobStatus, type Phase, TERMINAL_STATUSES } from "../../../protocol/events";
import type { TaskKind } from "../../../protocol/schemas/job";
import { ProblemError, describeError } from "../api/client";
import { getJob, getProgress, snapshotSeqs } from "../api/resources";
import { byId, h, say } from "../ui/dom";
import { EXPORT_RECIPE, modelDownloadButtons } from "./downloads";
import { JobEventStream, type StreamEvent } from "./event-stream";

/** The phase each core task kind runs (6), so a job's tasks seed the timeline before any event. */
const TASK_PHASE: Partial<Record<TaskKind, Phase>> = {
  extract: "feature_extraction",
  match: "matching",
  verify: "geometric_verification",
  map: "incremental_register",
};
const PHASE_LABEL: Partial<Record<Phase, string>> = {
  feature_extraction: "Features",
  matching: "Matching",
  geometric_verification: "Verification",
  incremental_init: "Initial pair",
  incremental_register: "Registering photos",
  incremental_ba: "Bundle adjustment",
};
const MAX_LOG_LINES = 500;
const PROGRESS_REFRESH_MS = 1000;

interface PhaseRow {
  el: HTMLLIElement;
  bar: HTMLProgressElement;
  text: HTMLSpanElement;
}

export interface SnapshotTarget {
  load(reconId: string, seq: number): Promise<void>;
}

export class LiveView {
  private stream: JobEventStream | null = null;
  private clock = new StageClock();
  private phases = new Map<string, PhaseRow>();
  /** The task each phase was reported by: a task that moves on to a later phase, or succeeds, has ended its earlier ones. */
  private phaseTask = new Map<string, string>();
  private jobId: string | null = null;
  private reconId: string | null = null;
  private refreshTimer: number | undefined;
  /** The last status shown, to explain each change once. */
  private status: JobStatus | null = null;
  private readonly timeline = byId<HTMLOListElement>("timeline");
  private readonly log = byId<HTMLOListElement>("log");
  private readonly streamStatus = byId("stream-status");

  constructor(
    private readonly viewer: SnapshotTarget,
    private readonly onStatusChange: () => void,
    /** The server's capabilities (1.2), which gate the model downloads. */
    private readonly features: () => Record<string, boolean>,
  ) {}

  /** Shows a job: its progress now, then live events; loads its newest snapshot if any. */
  async watch(jobId: string, reconId: string | null): Promise<void> {
    this.stream?.close();
    this.jobId = jobId;
    this.reconId = reconId;
    this.status = null;
    say(byId("job-note"), "");
    byId("job-downloads").hidden = true;
    this.phases.clear();
    this.phaseTask.clear();
    this.clock = new StageClock();
    this.timeline.replaceChildren();
    this.log.replaceChildren();
    byId("live-empty").hidden = true;
    byId("live-body").hidden = false;
    byId("live-title").textContent = `Job ${jobId}: loading…`;
    byId("live").scrollIntoView({ behavior: "smooth", block: "start" });
    try {
      const [progress, job] = await Promise.all([getProgress(jobId), reconId ? null : getJob(jobId)]);
      this.reconId = reconId ?? job?.recon_id ?? null;
      this.showProgress(progress);
      // The log starts from the beginning so a reopened job shows its history.
      this.stream = new JobEventStream(jobId, 0, { onEvent: (e) => this.onEvent(e), onState: (s, d) => this.onStreamState(s, d) });
      if (this.reconId) await this.loadNewestSnapshot(this.reconId);
    } catch (e) {
      byId("live-title").textContent = `Job ${jobId}: ${describeError(e)}`;
    }
  }

  private async loadNewestSnapshot(reconId: string): Promise<void> {
    try {
      const { seqs } = await snapshotSeqs(reconId);
      const newest = seqs.length > 0 ? Math.max(...seqs) : null;
      if (newest !== null) await this.viewer.load(reconId, newest);
    } catch (e) {
      // 404: nothing sealed for this reconstruction yet; other failures say what went wrong.
      say(
        byId("viewer-status"),
        e instanceof ProblemError && e.status === 404 ? "No snapshot yet." : `Could not list snapshots: ${describeError(e)}`,
        e instanceof ProblemError && e.status === 404 ? "info" : "error",
      );
    }
  }

  private showProgress(p: JobProgressOut): void {
    const phase = p.status === "running" && p.current_phase ? `, ${PHASE_LABEL[p.current_phase] ?? p.current_phase}` : "";
    byId("live-title").textContent = `Job ${p.job_id} (${p.recipe}): ${p.status}${phase}`;
    if (p.status !== this.status) {
      this.status = p.status;
      void this.showOutcome(p.job_id, p.status, p.recipe);
    }
    // A cancelled or failed job has ended, not completed: its bars show the work that was done.
    const ended = TERMINAL_STATUSES.has(p.status) && p.status !== "succeeded";
    const succeeded = p.task_counts.succeeded ?? 0;
    const fraction = ended ? succeeded / Math.max(1, p.total_tasks) : p.progress;
    byId<HTMLProgressElement>("job-progress").value = fraction;
    byId("job-progress-text").textContent = ended
      ? `${p.status} · ${succeeded}/${p.total_tasks} tasks done`
      : `${Math.round(fraction * 100)}% · ${p.completed_tasks}/${p.total_tasks} tasks`;
    for (const t of p.tasks) {
      if (t.status === "succeeded") this.endPhasesOf(t.task_id);
      const phase = TASK_PHASE[t.kind];
      if (!phase) continue;
      const state = t.status === "succeeded" ? "done" : t.status;
      const counted = t.current !== null && t.total ? t.current / t.total : null;
      this.setPhase(
        this.phase(phase),
        state,
        counted ?? (TERMINAL_STATUSES.has(t.status) && state !== "done" ? 0 : t.progress),
        counted !== null ? `${t.current}/${t.total}` : "",
      );
    }
  }

  /** What the job's status means for the visitor: why it waits, why it failed, what is next. */
  private async showOutcome(jobId: string, status: JobStatus, recipe: string): Promise<void> {
    const note = byId("job-note");
    const downloads = byId("job-downloads");
    const modelReady = status === "succeeded" && this.reconId !== null && recipe !== EXPORT_RECIPE;
    downloads.replaceChildren(
      ...(modelReady ? modelDownloadButtons(this.reconId!, this.features(), byId("live-download-status"), this.onStatusChange) : []),
    );
    downloads.hidden = !modelReady;
    say(byId("live-download-status"), "");
    if (status === "failed") {
      const job = await getJob(jobId).catch(() => null);
      if (jobId !== this.jobId) return;
      const failedTask = job?.tasks.find((t) => t.status === "failed");
      const why = job?.error_message ?? failedTask?.error_message ?? "no reason was recorded";
      const where = failedTask ? ` in its ${failedTask.kind} task` : "";
      say(
        note,
        `The job failed${where}: ${why}${job?.error_class ? ` (${job.error_class})` : ""}. Resume it from the job list to retry.`,
        "error",
      );
      return;
    }
    const text: Record<JobStatus, string> = {
      pending:
        "Waiting for a computer to take the first task. With “This tab computes” on (at the top), this tab does it; otherwise another runner must be online.",
      running: "",
      succeeded: "Finished. Click a camera to see its photo, or download the model.",
      failed: "",
      cancelled: "The job was cancelled. Resume it from the job list to continue where it stopped.",
      cancelled_dirty: "The job was cancelled while a task was running. Resume it from the job list to continue.",
    };
    say(note, text[status], status === "succeeded" ? "ok" : "info");
  }

  private phase(phase: string): PhaseRow {
    let row = this.phases.get(phase);
    if (!row) {
      const label = PHASE_LABEL[phase as Phase] ?? phase.replaceAll("_", " ");
      const bar = h("progress", { max: 1, value: 0, "aria-label": `${label} progress` });
      const text = h("span", { class: "phase-text" });
      const el = h("li", { "data-state": "pending" }, h("span", { class: "phase-name" }, label), bar, text);
      row = { el, bar, text };
      this.phases.set(phase, row);
      this.timeline.append(el);
    }
    return row;
  }

  /** Every running phase the task reported is over (the mapper moves from the initial pair to registration, 6). */
  private endPhasesOf(taskId: string): void {
    for (const [phase, task] of this.phaseTask) {
      const row = this.phases.get(phase);
      if (task === taskId && row?.el.dataset.state === "running") this.setPhase(row, "done", 1, "done");
    }
  }

  private setPhase(row: PhaseRow, state: string, fraction: number | null, text: string): void {
    row.el.dataset.state = state;
    if (fraction !== null) row.bar.value = state === "done" ? 1 : fraction;
    row.text.textContent = text || state;
  }

  private logLine(level: string, message: string): void {
    const li = h("li", { "data-level": level.toLowerCase() }, h("span", { class: "level" }, level), " ", message);
    this.log.append(li);
    while (this.log.childElementCount > MAX_LOG_LINES) this.log.firstElementChild?.remove();
    li.scrollIntoView?.({ block: "nearest" });
  }

  /** Re-reads the aggregate progress at most once a second (the server computes it, 4.8). */
  private refreshSoon(): void {
    if (this.refreshTimer !== undefined || !this.jobId) return;
    const jobId = this.jobId;
    this.refreshTimer = window.setTimeout(() => {
      this.refreshTimer = undefined;
      if (jobId === this.jobId)
        getProgress(jobId).then(
          (p) => this.showProgress(p),
          () => {},
        );
    }, PROGRESS_REFRESH_MS);
  }

  private onEvent(s: StreamEvent): void {
    if (!s.known) {
      this.logLine("EVENT", `${s.kind}: ${JSON.stringify(s.raw).slice(0, 300)}`);
      return;
    }
    const e = s.event;
    switch (e.kind) {
      case "phase_started":
        this.setPhase(this.phase(e.phase), "running", 0, "");
        break;
      case "phase_progress": {
        const frac = e.total ? e.current / e.total : null;
        const stage = this.clock.observe(e);
        const rate = stage.rate !== null ? ` · ${stage.rate.toFixed(1)}/s` : "";
        const eta = stage.eta_seconds !== null && stage.current < (stage.total ?? 0) ? ` · ${formatEta(stage.eta_seconds)} left` : "";
        if (e.task_id) {
          if (this.phaseTask.get(e.phase) !== e.task_id) this.endPhasesOf(e.task_id);
          this.phaseTask.set(e.phase, e.task_id);
        }
        this.setPhase(this.phase(e.phase), "running", frac, `${e.current}${e.total ? `/${e.total}` : ""}${rate}${eta}`);
        this.refreshSoon();
        break;
      }
      case "phase_completed":
        this.setPhase(this.phase(e.phase), "done", 1, "done");
        this.refreshSoon();
        break;
      case "metric":
        this.logLine("METRIC", `${e.key} = ${e.value}`);
        break;
      case "log_line":
        this.logLine(e.level, e.message);
        break;
      case "warning":
        this.logLine("WARNING", e.message);
        break;
      case "error":
        this.logLine("ERROR", `${e.error_class}: ${e.message}`);
        break;
      case "snapshot_available":
        this.logLine("INFO", `snapshot ${e.snapshot_seq} sealed`);
        if (this.reconId) void this.viewer.load(this.reconId, e.snapshot_seq);
        break;
      case "job_status":
        this.logLine(e.status === "failed" ? "ERROR" : "INFO", `job ${e.status}${e.error_class ? ` (${e.error_class})` : ""}`);
        this.refreshSoon();
        this.onStatusChange();
        break;
    }
  }

  private onStreamState(state: "live" | "reconnecting" | "ended" | "failed", detail?: string): void {
    const text = {
      live: "",
      reconnecting: `Connection lost, reconnecting (resuming after the last event)…${detail ? ` ${detail}` : ""}`,
      // The job's note says how it ended.
      ended: "",
      failed: `The event stream is unavailable: ${detail ?? ""}`,
    }[state];
    say(this.streamStatus, text, state === "failed" ? "error" : "info");
  }
}

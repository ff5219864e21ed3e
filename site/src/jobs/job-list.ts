/**
 * @module Step 4, jobs (4.8): the tenant's jobs with status, view, cancel and resume (3.1), and
 * the model's downloads when a reconstruction job has succeeded (downloads.ts: an export job
 * each, offered only while the server advertises its `export.*` capability, 1.2); a finished
 * export job offers its file again.
 */
import type { Job } from "../../../protocol/schemas/job";
import { TERMINAL_STATUSES } from "../../../protocol/events";
import { exportCapability } from "../../../protocol/exports";
import { type CapabilitiesOut, cancelJob, jobArtifacts, listJobs, resumeJob } from "../api/resources";
import { byId, h, say, sayError } from "../ui/dom";
import { EXPORT_RECIPE, MODEL_DOWNLOADS, downloadJobArtifact, downloadLabel, modelDownloadButtons } from "./downloads";

const SHOWN_JOBS = 50;

export class JobList {
  private readonly body = byId("jobs-table").querySelector("tbody")!;
  private readonly status = byId("jobs-status");
  private capabilities: Record<string, boolean> = {};

  constructor(private readonly onView: (job: Job) => void) {
    byId("jobs-refresh").addEventListener("click", () => void this.refresh());
  }

  setCapabilities(caps: CapabilitiesOut): void {
    this.capabilities = caps.features;
    const missing = MODEL_DOWNLOADS.map((d) => exportCapability(d.format)).filter((c) => !caps.features[c]);
    byId("downloads-note").textContent =
      missing.length > 0
        ? `Downloads are unavailable until this server offers ${missing.join(" and ")}.`
        : "Downloads appear on succeeded jobs.";
  }

  async refresh(): Promise<void> {
    say(this.status, "Loading jobs…");
    try {
      const jobs = await listJobs();
      const focus = this.focusedAction();
      this.body.replaceChildren(...jobs.slice(0, SHOWN_JOBS).map((j) => this.row(j)));
      focus?.();
      byId("jobs-table").hidden = jobs.length === 0;
      byId("jobs-empty").hidden = jobs.length > 0;
      say(this.status, jobs.length > SHOWN_JOBS ? `The newest ${SHOWN_JOBS} of ${jobs.length} jobs.` : "");
    } catch (e) {
      sayError(this.status, e, "Could not list jobs: ");
    }
  }

  /**
   * Where the keyboard focus is among the rows' buttons, as a way to put it back once the rows are
   * redrawn: on the same button, or the row's first one when that button is gone (Cancel -> Resume).
   */
  private focusedAction(): (() => void) | null {
    const focused = document.activeElement;
    const jobId = focused instanceof HTMLButtonElement && this.body.contains(focused) ? focused.closest("tr")?.dataset.job : undefined;
    if (!jobId) return null;
    const label = focused!.textContent;
    return () => {
      const buttons = [...this.body.querySelectorAll<HTMLButtonElement>(`tr[data-job="${jobId}"] button:not(:disabled)`)];
      (buttons.find((b) => b.textContent === label) ?? buttons[0])?.focus();
    };
  }

  private act(label: string, what: () => Promise<unknown>): Promise<void> {
    return what().then(
      () => this.refresh(),
      (e) => sayError(this.status, e, `${label} failed: `),
    );
  }

  private row(job: Job): HTMLTableRowElement {
    const terminal = TERMINAL_STATUSES.has(job.status);
    const actions = h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "secondary", onclick: () => this.onView(job) }, "View"),
      ...(terminal
        ? []
        : [
            h(
              "button",
              {
                type: "button",
                class: "secondary",
                disabled: job.cancel_requested,
                onclick: () => void this.act("Cancel", () => cancelJob(job.job_id)),
              },
              job.cancel_requested ? "Cancelling…" : "Cancel",
            ),
          ]),
      ...(job.status === "failed" || job.status.startsWith("cancelled")
        ? [
            h(
              "button",
              {
                type: "button",
                class: "secondary",
                onclick: () => void this.act("Resume", () => resumeJob(job.job_id).then(() => this.onView(job))),
              },
              "Resume",
            ),
          ]
        : []),
      ...(job.status === "succeeded" && job.recon_id && job.recipe !== EXPORT_RECIPE
        ? modelDownloadButtons(job.recon_id, this.capabilities, byId("download-status"), () => void this.refresh())
        : []),
      ...(job.status === "succeeded" && job.recipe === EXPORT_RECIPE ? [this.exportedButton(job)] : []),
    );
    // Each row's buttons say "View", "Cancel"…: a screen reader also reads which job they act on.
    const jobCell = `job-${job.job_id}`;
    for (const b of actions.querySelectorAll("button")) b.setAttribute("aria-describedby", jobCell);
    const error = job.error_message ? h("div", { class: "error-text" }, `${job.error_class ?? "error"}: ${job.error_message}`) : "";
    return h(
      "tr",
      { "data-job": job.job_id },
      h("td", { id: jobCell }, h("code", {}, job.job_id), h("div", { class: "muted" }, job.recipe)),
      h("td", {}, h("span", { class: "badge", "data-status": job.status }, job.status), error),
      h("td", {}, h("time", { datetime: job.created_at }, new Date(job.created_at).toLocaleString())),
      h("td", { class: "actions-cell" }, actions),
    );
  }

  /** An export job's file again, named by its format once the job's artifact is known. */
  private exportedButton(job: Job): HTMLButtonElement {
    const button = h(
      "button",
      { type: "button", class: "secondary", onclick: () => void this.act("Download", () => downloadJobArtifact(job.job_id)) },
      "Download",
    );
    jobArtifacts(job.job_id).then(
      ([artifact]) => {
        if (artifact) button.textContent = `Download ${downloadLabel(artifact.artifact_format) ?? artifact.name}`;
      },
      () => {}, // the generic label stays; a click reports any failure
    );
    return button;
  }
}

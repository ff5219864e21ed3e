/**
 * @module Step 4, jobs (4.8): the tenant's jobs with status, view, cancel and resume (3.1), and
 * the model's downloads when a job has succeeded: the exported files are the job's artifacts
 * (4.8, 4.10), offered only while the server advertises the export capability (1.2).
 */
import type { Job } from "../../../protocol/schemas/job";
import { TERMINAL_STATUSES } from "../../../protocol/events";
import { authedObjectUrl } from "../api/client";
import { type CapabilitiesOut, cancelJob, jobArtifacts, listJobs, resumeJob } from "../api/resources";
import { byId, h, say, sayError } from "../ui/dom";

/** The downloads a visitor asks for, by the export capability that produces them. */
const DOWNLOADS = [
  { label: "COLMAP text", capability: "export.colmap_text", format: /colmap.*text|txt/i },
  { label: "PLY", capability: "export.ply", format: /ply/i },
] as const;

export class JobList {
  private readonly body = byId("jobs-table").querySelector("tbody")!;
  private readonly status = byId("jobs-status");
  private capabilities: Record<string, boolean> = {};

  constructor(private readonly onView: (job: Job) => void) {
    byId("jobs-refresh").addEventListener("click", () => void this.refresh());
  }

  setCapabilities(caps: CapabilitiesOut): void {
    this.capabilities = caps.features;
    const missing = DOWNLOADS.filter((d) => !caps.features[d.capability]).map((d) => d.capability);
    byId("downloads-note").textContent =
      missing.length > 0 ? `Downloads are unavailable until this server offers ${missing.join(" and ")}.` : "Downloads appear on succeeded jobs.";
  }

  async refresh(): Promise<void> {
    say(this.status, "Loading jobs…");
    try {
      const page = await listJobs();
      this.body.replaceChildren(...page.items.map((j) => this.row(j)));
      byId("jobs-table").hidden = page.items.length === 0;
      byId("jobs-empty").hidden = page.items.length > 0;
      say(this.status, "");
    } catch (e) {
      sayError(this.status, e, "Could not list jobs: ");
    }
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
      "td",
      { class: "actions" },
      h("button", { type: "button", class: "secondary", onclick: () => this.onView(job) }, "View"),
      ...(terminal ? [] : [h("button", { type: "button", class: "secondary", disabled: job.cancel_requested, onclick: () => void this.act("Cancel", () => cancelJob(job.job_id)) }, job.cancel_requested ? "Cancelling…" : "Cancel")]),
      ...(job.status === "failed" || job.status.startsWith("cancelled")
        ? [h("button", { type: "button", class: "secondary", onclick: () => void this.act("Resume", () => resumeJob(job.job_id)) }, "Resume")]
        : []),
      ...(job.status === "succeeded" ? DOWNLOADS.map((d) => this.downloadButton(job, d)) : []),
    );
    const error = job.error_message ? h("div", { class: "error-text" }, `${job.error_class ?? "error"}: ${job.error_message}`) : "";
    return h(
      "tr",
      {},
      h("td", {}, h("code", {}, job.job_id), h("div", { class: "muted" }, job.recipe)),
      h("td", {}, h("span", { class: "badge", "data-status": job.status }, job.status), error),
      h("td", {}, h("time", { datetime: job.created_at }, new Date(job.created_at).toLocaleString())),
      actions,
    );
  }

  private downloadButton(job: Job, d: (typeof DOWNLOADS)[number]): HTMLButtonElement {
    const offered = this.capabilities[d.capability] === true;
    return h(
      "button",
      {
        type: "button",
        disabled: !offered,
        title: offered ? `Download the model as ${d.label}` : `Unavailable: the server does not offer ${d.capability} yet`,
        onclick: () => void this.act(`Download ${d.label}`, () => this.download(job, d)),
      },
      `Download ${d.label}`,
    );
  }

  private async download(job: Job, d: (typeof DOWNLOADS)[number]): Promise<void> {
    const { items } = await jobArtifacts(job.job_id);
    const artifact = items.find((a) => d.format.test(a.artifact_format) || d.format.test(a.kind));
    if (!artifact) throw new Error(`this job has no ${d.label} artifact`);
    const a = h("a", { href: await authedObjectUrl(`/v1/artifacts/${artifact.artifact_id}/content?download=true`), download: artifact.name });
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
  }
}

/**
 * @module Downloading a reconstruction's model (spec 4.10, issue 7): each download is an export
 * job (`POST /v1/reconstructions/{rid}/export`, 202 and the job), followed through its event
 * stream (4.8, 6) to its end, whose artifact is then saved. A one-file format (PLY) arrives as
 * that file; a several-file one (COLMAP text: cameras.txt, images.txt, points3D.txt) as the one
 * tar archive the server builds of them (`/content` without `path`), named by the server.
 */
import { EXPORT_ARTIFACT_TYPES, type ExportFormat, exportCapability } from "../../../protocol/exports";
import { TERMINAL_STATUSES } from "../../../protocol/events";
import { request } from "../api/client";
import { getJob, jobArtifacts, startExport } from "../api/resources";
import { h, say, sayError } from "../ui/dom";
import { JobEventStream } from "./event-stream";

/** The model downloads a visitor is offered, each while the server advertises `export.<format>` (1.2). */
export const MODEL_DOWNLOADS = [
  { label: "COLMAP text", format: "colmap_text" },
  { label: "PLY", format: "ply" },
] as const satisfies ReadonlyArray<{ label: string; format: ExportFormat }>;

/** The recipe of export jobs (the task kind and phase are `export` too, 2.9 and 6). */
export const EXPORT_RECIPE = "export";

/**
 * One button per model download of reconstruction `reconId`, disabled (and saying why) while the
 * server does not offer its format; progress and the outcome go to `status`, then `after` runs.
 */
export function modelDownloadButtons(
  reconId: string,
  features: Record<string, boolean>,
  status: HTMLElement,
  after: () => void,
): HTMLButtonElement[] {
  return MODEL_DOWNLOADS.map((d) => {
    const capability = exportCapability(d.format);
    const offered = features[capability] === true;
    const button = h(
      "button",
      {
        type: "button",
        disabled: !offered,
        title: offered ? `Export the model as ${d.label} and download it` : `Unavailable: the server does not offer ${capability} yet`,
      },
      `Download ${d.label}`,
    );
    button.addEventListener("click", () => {
      button.disabled = true;
      void downloadModel(reconId, d.format, (text) => say(status, `${d.label}: ${text}`))
        .then(
          () => say(status, `${d.label}: downloaded.`, "ok"),
          (e) => sayError(status, e, `Download ${d.label} failed: `),
        )
        .finally(() => {
          button.disabled = false;
          after();
        });
    });
    return button;
  });
}

/** What a visitor calls an exported artifact's format ("PLY"), if it is one of the model downloads. */
export const downloadLabel = (artifactFormat: string): string | undefined =>
  MODEL_DOWNLOADS.find((d) => EXPORT_ARTIFACT_TYPES[d.format].artifact_format === artifactFormat)?.label;

/** Exports reconstruction `reconId`'s newest snapshot to `format` and saves the result. */
export async function downloadModel(reconId: string, format: ExportFormat, onStatus: (text: string) => void): Promise<void> {
  onStatus("Starting the export…");
  const accepted = await startExport(reconId, { format });
  await untilSucceeded(accepted.job_id, onStatus);
  onStatus("Downloading…");
  await downloadJobArtifact(accepted.job_id, format);
}

/** Follows a job's events until its terminal status: resolves on success, rejects with the reason otherwise. */
function untilSucceeded(jobId: string, onStatus: (text: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    new JobEventStream(jobId, 0, {
      onEvent: (e) => {
        if (!e.known) return;
        const event = e.event;
        if (event.kind === "phase_progress") onStatus(`Exporting… ${event.current}${event.total ? `/${event.total}` : ""}`);
        if (event.kind !== "job_status") return;
        if (event.status === "succeeded") resolve();
        else if (TERMINAL_STATUSES.has(event.status)) {
          getJob(jobId).then(
            (job) => reject(new Error(`the export ${event.status}: ${job.error_message ?? job.error_class ?? "no reason was recorded"}`)),
            reject,
          );
        } else
          onStatus(event.status === "pending" ? "Waiting for a computer to run the export (“This tab computes” does it)…" : "Exporting…");
      },
      onState: (state, detail) => {
        if (state === "failed") reject(new Error(`the export's progress cannot be followed: ${detail ?? "unknown error"}`));
      },
    });
  });
}

/** Saves the artifact a job produced (of `format`'s artifact format when given) as the server names it. */
export async function downloadJobArtifact(jobId: string, format?: ExportFormat): Promise<void> {
  const wanted = format ? EXPORT_ARTIFACT_TYPES[format].artifact_format : undefined;
  const artifact = (await jobArtifacts(jobId)).find((a) => wanted === undefined || a.artifact_format === wanted);
  if (!artifact) throw new Error(`job ${jobId} produced no ${format ? `${format} artifact` : "artifact"} to download`);
  const res = await request(`/v1/artifacts/${artifact.artifact_id}/content?download=true`);
  const named = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") ?? "")?.[1];
  save(await res.blob(), named ?? artifact.name);
}

function save(blob: Blob, name: string): void {
  const a = h("a", { href: URL.createObjectURL(blob), download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
}

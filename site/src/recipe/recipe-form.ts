/**
 * @module Step 2, the recipe: the main knobs of an incremental pipeline (spec 2.12, 4.7) with
 * the spec's defaults, validated by the protocol's PipelineRequest before it is sent; the
 * camera knobs are the dataset's (2.4) and are written to it before the start. Knobs the server
 * does not advertise are still offered, marked, so a 501 can explain itself (1.2).
 */
import { CAMERA_MODEL_NAMES } from "../../../protocol/camera-models";
import { MATCHER_TYPES, PipelineRequest } from "../../../protocol/schemas/specs";
import type { JobAccepted } from "../../../protocol/schemas/job";
import { ProblemError } from "../api/client";
import { type CameraModel, type CapabilitiesOut, setCameraSettings, startPipeline } from "../api/resources";
import { byId, h, say } from "../ui/dom";
import type { UploadedSet } from "../upload/photo-panel";

/** Two views are the least that can triangulate anything. */
const MIN_PHOTOS = 2;

export type IntrinsicsChoice = "single_camera" | "per_image";

export class RecipeForm {
  private readonly form = byId<HTMLFormElement>("recipe-form");
  private readonly status = byId("recipe-status");
  private readonly startButton = byId<HTMLButtonElement>("start-button");
  private set: UploadedSet | null = null;
  private capabilities: Record<string, boolean> = {};

  constructor(private readonly onStarted: (accepted: JobAccepted, set: UploadedSet) => void) {
    byId<HTMLSelectElement>("camera-model").append(
      ...CAMERA_MODEL_NAMES.filter((m) => m !== "SPHERICAL").map((m) => h("option", { value: m, selected: m === "SIMPLE_RADIAL" }, m)),
    );
    const strategy = byId<HTMLSelectElement>("pairs-strategy");
    strategy.addEventListener("change", () => this.showOverlap());
    this.showOverlap();
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.start();
    });
  }

  setCapabilities(caps: CapabilitiesOut): void {
    this.capabilities = caps.features;
    const matcher = byId<HTMLSelectElement>("matcher-type");
    matcher.replaceChildren(
      ...MATCHER_TYPES.map((m) => {
        const on = caps.features[`matchers.${m}`] === true;
        return h("option", { value: m, selected: m === "nn-mutual" }, on ? m : `${m} (not offered by this server)`);
      }),
    );
    matcher.onchange = () => this.showCapabilities();
    this.showCapabilities();
  }

  /** Whether the server offers what the recipe as chosen needs (1.2). */
  private showCapabilities(): void {
    const needed = [
      "pipelines.incremental",
      "features.extract.sift",
      "matches.verify",
      `matchers.${byId<HTMLSelectElement>("matcher-type").value}`,
    ];
    const missing = needed.filter((c) => !this.capabilities[c]);
    byId("recipe-capabilities").textContent =
      missing.length === 0
        ? "This server can run this recipe."
        : `This server does not offer ${missing.join(", ")}, so starting will be refused (501).`;
  }

  setDataset(set: UploadedSet): void {
    this.set = set;
    const enough = set.images.length >= MIN_PHOTOS;
    this.startButton.disabled = !enough;
    byId("start-hint").textContent = enough
      ? `${set.images.length} photos ready.`
      : `${set.images.length} photo ready: a reconstruction needs at least ${MIN_PHOTOS} overlapping photos (10 or more work best). Add more and upload them.`;
  }

  cameraSettings(): { camera_model: CameraModel; intrinsics_mode: IntrinsicsChoice } {
    const data = new FormData(this.form);
    // The select offers the spec's camera models; the server checks the name all the same.
    return {
      camera_model: String(data.get("camera_model")) as CameraModel,
      intrinsics_mode: data.get("intrinsics_mode") === "per_image" ? "per_image" : "single_camera",
    };
  }

  private showOverlap(): void {
    const sequential = byId<HTMLSelectElement>("pairs-strategy").value === "sequential";
    byId("pairs-overlap").hidden = !sequential;
    byId("overlap-label").hidden = !sequential;
  }

  /** The request body from the form, or the validation messages (field path: message). */
  private body(datasetId: string): { ok: true; value: PipelineRequest } | { ok: false; errors: string[] } {
    const data = new FormData(this.form);
    const int = (name: string) => (String(data.get(name) ?? "").trim() === "" ? NaN : Number(data.get(name)));
    const strategy = String(data.get("strategy"));
    const parsed = PipelineRequest.safeParse({
      dataset_id: datasetId,
      spec: { kind: "incremental", snapshot_frames_freq: int("snapshot_frames_freq") },
      features: { type: "sift", max_num_features: int("max_num_features") },
      pairs: { strategy, ...(strategy === "sequential" ? { overlap: int("overlap") } : {}) },
      matcher: { type: String(data.get("matcher_type")) },
    });
    if (parsed.success) return { ok: true, value: parsed.data };
    return { ok: false, errors: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`) };
  }

  private async start(): Promise<void> {
    const set = this.set;
    if (!set) return;
    const body = this.body(set.dataset.dataset_id);
    if (!body.ok) {
      this.showProblem("Check the recipe", body.errors);
      return;
    }
    this.startButton.disabled = true;
    this.status.setAttribute("role", "status");
    say(this.status, "Starting…");
    try {
      // The camera knobs live on the dataset (2.4); the pipeline reads them from there.
      await setCameraSettings(set.project.project_id, set.dataset.dataset_id, this.cameraSettings());
      const accepted = await startPipeline(set.project.project_id, body.value);
      say(this.status, `Started job ${accepted.job_id}.`, "ok");
      this.onStarted(accepted, set);
    } catch (e) {
      if (!(e instanceof ProblemError)) throw e;
      const p = e.problem;
      const extra = [
        ...(p.capability
          ? [
              `Missing capability: ${p.capability}${this.capabilities[p.capability] === false ? " (the server lists it as unavailable)" : ""}.`,
            ]
          : []),
        ...(p.errors ?? []).map((x) => `${x.path}: ${x.message}`),
      ];
      this.showProblem(`${p.title}${p.status ? ` (${p.status})` : ""}${p.detail ? `: ${p.detail}` : ""}`, extra);
    } finally {
      this.startButton.disabled = set.images.length < MIN_PHOTOS;
    }
  }

  private showProblem(title: string, lines: string[]): void {
    this.status.replaceChildren(h("strong", {}, title), ...(lines.length ? [h("ul", {}, ...lines.map((l) => h("li", {}, l)))] : []));
    this.status.dataset.kind = "error";
    this.status.hidden = false;
    // Read out at once; progress messages in the same place stay polite.
    this.status.setAttribute("role", "alert");
  }
}

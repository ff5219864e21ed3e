/**
 * @module Step 1, photos: drop zone and pickers, a thumbnail grid with per-file state and
 * progress, an overall progress bar, then upload (uploader.ts) and registration of the photos
 * into a new project and dataset (4.2, 4.4, 4.5 batchCreate).
 */
import type { Dataset } from "../../../protocol/schemas/dataset";
import type { Image } from "../../../protocol/schemas/image";
import { MAX_BATCH_IMAGES } from "../../../protocol/schemas/image";
import type { Project } from "../../../protocol/schemas/project";
import { describeError } from "../api/client";
import { type CameraModel, batchCreateImages, createDataset, createProject } from "../api/resources";
import { byId, formatBytes, h, say, sayError } from "../ui/dom";
import { type PickedFile, filesFromDrop, filesFromInput, photosOnly } from "./files";
import { thumbnailUrl } from "./thumbnails";
import { PARALLEL_UPLOADS, atMost } from "../../../client/index";
import { type UploadProgress, uploadFile } from "./uploader";

type TileState = "checking" | "ready" | "unreadable" | "hashing" | "uploading" | "finalizing" | "uploaded" | "registered" | "failed";

interface PhotoTile {
  picked: PickedFile;
  /** The thumbnail's object URL, once made. */
  thumbnail?: string;
  state: TileState;
  blobSha?: string;
  /** Set when the server already held the bytes, so none were sent. */
  skipped?: boolean;
  image?: Image;
  /** Bytes done toward hashing plus sending (each counts the file size once). */
  work: number;
  el: HTMLLIElement;
  status: HTMLSpanElement;
  bar: HTMLProgressElement;
}

export interface UploadedSet {
  project: Project;
  dataset: Dataset;
  images: Image[];
  /** The local file of each registered image name, to show photos without another download. */
  localUrls: Map<string, string>;
}

const STATE_TEXT: Record<TileState, string> = {
  checking: "checking…",
  ready: "ready",
  unreadable: "unreadable",
  hashing: "hashing…",
  uploading: "uploading…",
  finalizing: "finalizing…",
  uploaded: "uploaded",
  registered: "registered",
  failed: "failed",
};

export class PhotoPanel {
  private tiles: PhotoTile[] = [];
  private names = new Set<string>();
  private set: UploadedSet | null = null;
  private busy = false;
  private readonly grid = byId<HTMLUListElement>("photo-grid");
  private readonly status = byId("photo-status");
  private readonly overall = byId<HTMLProgressElement>("upload-overall");
  private readonly uploadButton = byId<HTMLButtonElement>("upload-button");

  constructor(
    private readonly datasetDefaults: () => { camera_model: CameraModel; intrinsics_mode: "single_camera" | "per_image" },
    private readonly onRegistered: (set: UploadedSet) => void,
  ) {
    const drop = byId("drop-zone");
    const add = (picked: PickedFile[]) => this.add(picked);
    for (const id of ["file-input", "folder-input"]) {
      const input = byId<HTMLInputElement>(id);
      input.addEventListener("change", () => {
        add(filesFromInput([...(input.files ?? [])]));
        input.value = "";
      });
    }
    drop.addEventListener("dragover", (e) => {
      e.preventDefault();
      drop.classList.add("over");
    });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => {
      e.preventDefault();
      drop.classList.remove("over");
      if (e.dataTransfer)
        void filesFromDrop(e.dataTransfer).then(add, (err) => sayError(this.status, err, "Could not read the dropped items: "));
    });
    this.uploadButton.addEventListener("click", () => void this.uploadAll());
    byId("clear-photos").addEventListener("click", () => this.clear());
    this.render();
  }

  private add(picked: PickedFile[]): void {
    const photos = photosOnly(picked, this.names);
    const ignored = picked.length - photos.length;
    const added = photos.map((p) => this.tile(p));
    this.tiles.push(...added);
    this.grid.append(...added.map((t) => t.el));
    say(this.status, ignored > 0 ? `${ignored} file(s) ignored: only JPEG and PNG photos can be reconstructed.` : "");
    this.render();
  }

  /** A grid tile; making its thumbnail is the readability check (a corrupt file fails it). */
  private tile(picked: PickedFile): PhotoTile {
    const img = h("img", { alt: picked.name });
    const status = h("span", { class: "tile-status" });
    const bar = h("progress", { max: 1, value: 0, "aria-label": `${picked.name} progress` });
    const el = h("li", { class: "tile" }, img, h("span", { class: "tile-name", title: picked.name }, picked.name), status, bar);
    const tile: PhotoTile = { picked, state: "checking", work: 0, el, status, bar };
    thumbnailUrl(picked.file).then(
      (url) => {
        tile.thumbnail = url;
        img.src = url;
        this.setState(tile, tile.state === "checking" ? "ready" : tile.state);
      },
      () => {
        this.setState(
          tile,
          "unreadable",
          "this file is not a photo the browser can decode (damaged or not JPEG/PNG); it will not be uploaded",
        );
        const names = this.tiles.filter((t) => t.state === "unreadable").map((t) => t.picked.name);
        say(
          this.status,
          `Cannot use ${names.join(", ")}: not a photo the browser can decode (damaged, or not really JPEG/PNG). It will be skipped.`,
          "error",
        );
      },
    );
    return tile;
  }

  private setState(tile: PhotoTile, state: TileState, message?: string): void {
    tile.state = state;
    tile.el.dataset.state = state;
    tile.status.textContent = message ? `${STATE_TEXT[state]}: ${message}` : STATE_TEXT[state];
    this.render();
  }

  private render(): void {
    const ready = this.tiles.filter((t) => t.state === "ready" || t.state === "failed" || t.state === "uploaded");
    const checking = this.tiles.some((t) => t.state === "checking");
    byId("photo-empty").hidden = this.tiles.length > 0;
    this.uploadButton.disabled = this.busy || checking || ready.length === 0;
    this.uploadButton.textContent = ready.length > 0 ? `Upload ${ready.length} photo${ready.length === 1 ? "" : "s"}` : "Upload photos";
    byId<HTMLButtonElement>("clear-photos").disabled = this.busy || this.tiles.length === 0;
    const total = this.tiles.reduce((s, t) => s + (t.state === "unreadable" ? 0 : 2 * t.picked.file.size), 0);
    const done = this.tiles.reduce((s, t) => s + (t.state === "unreadable" ? 0 : t.work), 0);
    this.overall.max = Math.max(1, total);
    this.overall.value = done;
    byId("upload-overall-text").textContent = total > 0 ? `${Math.round((100 * done) / total)}% of ${formatBytes(total / 2)}` : "";
  }

  private clear(): void {
    for (const t of this.tiles) if (t.thumbnail) URL.revokeObjectURL(t.thumbnail);
    this.tiles = [];
    this.grid.replaceChildren();
    this.names.clear();
    this.set = null;
    say(this.status, "");
    this.render();
  }

  private progress(tile: PhotoTile, p: UploadProgress): void {
    if (tile.state !== p.phase) this.setState(tile, p.phase);
    const size = tile.picked.file.size;
    tile.work = p.phase === "hashing" ? p.done : size + p.done;
    tile.bar.value = size === 0 ? 1 : tile.work / (2 * size);
    this.render();
  }

  private async uploadOne(tile: PhotoTile): Promise<void> {
    try {
      const result = await uploadFile(tile.picked.file, (p) => this.progress(tile, p));
      tile.blobSha = result.blobSha;
      tile.skipped = result.skipped;
      tile.work = 2 * tile.picked.file.size;
      tile.bar.value = 1;
      this.setState(tile, "uploaded", result.skipped ? "already on the server, no bytes sent" : undefined);
    } catch (e) {
      const unreadable = e instanceof DOMException && e.name === "NotReadableError";
      this.setState(tile, "failed", unreadable ? "the browser could not read this file" : describeError(e));
    }
  }

  /** Uploads every pending photo (a few at a time), then registers them in the dataset. */
  private async uploadAll(): Promise<void> {
    this.busy = true;
    this.render();
    say(this.status, "Uploading…");
    try {
      const queue = this.tiles.filter((t) => t.state === "ready" || t.state === "failed");
      await atMost(PARALLEL_UPLOADS, queue, (t) => this.uploadOne(t));
      await this.register();
    } catch (e) {
      sayError(this.status, e, "Registration failed: ");
    } finally {
      this.busy = false;
      this.render();
    }
  }

  private async register(): Promise<void> {
    const toRegister = this.tiles.filter((t) => t.state === "uploaded" && t.blobSha);
    const failed = this.tiles.filter((t) => t.state === "failed").length;
    if (toRegister.length === 0) {
      say(
        this.status,
        failed > 0 ? `${failed} upload(s) failed; press Upload to retry.` : "Nothing to register.",
        failed > 0 ? "error" : "info",
      );
      return;
    }
    say(this.status, `Registering ${toRegister.length} photo(s)…`);
    if (!this.set) {
      const project = await createProject(`Photos ${new Date().toISOString().slice(0, 16).replace("T", " ")}`);
      const dataset = await createDataset(project.project_id, {
        name: "photos",
        source: { kind: "upload", entries: [] },
        ...this.datasetDefaults(),
      });
      this.set = { project, dataset, images: [], localUrls: new Map() };
    }
    const set = this.set;
    for (let i = 0; i < toRegister.length; i += MAX_BATCH_IMAGES) {
      const batch = toRegister.slice(i, i + MAX_BATCH_IMAGES);
      const { images } = await batchCreateImages(
        set.dataset.dataset_id,
        batch.map((t) => ({ name: t.picked.name, blob_sha: t.blobSha! })),
      );
      images.forEach((image, k) => {
        const tile = batch[k]!;
        tile.image = image;
        set.images.push(image);
        set.localUrls.set(image.name, URL.createObjectURL(tile.picked.file));
        const notes = [image.width ? `${image.width}×${image.height}` : "", tile.skipped ? "already on the server, no bytes sent" : ""];
        this.setState(tile, "registered", notes.filter(Boolean).join(", ") || undefined);
      });
    }
    const unreadable = this.tiles.filter((t) => t.state === "unreadable").length;
    const notes = [
      failed > 0 ? `${failed} failed (press Upload to retry)` : "",
      unreadable > 0 ? `${unreadable} unreadable, skipped` : "",
    ].filter(Boolean);
    say(
      this.status,
      `${set.images.length} photo(s) registered in dataset “${set.dataset.name}”.${notes.length ? ` ${notes.join("; ")}.` : ""}`,
      failed ? "error" : "ok",
    );
    this.onRegistered(set);
  }
}

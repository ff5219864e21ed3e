/**
 * @module The chosen camera's photo with its observations (images.json points2D, spec 2.14):
 * keypoints in a 3D track drawn green, the others grey. Cameras are chosen in the 3D view or in
 * the list (the keyboard route to the same thing).
 */
import { describeError } from "../api/client";
import { byId, h } from "../ui/dom";
import type { ViewedCamera } from "./viewer";

/** Where a photo's pixels come from: a local file or the API (`/v1/images/{id}/bytes`). */
export type PhotoSource = (rid: string, name: string) => Promise<string | null>;

export class CameraPanel {
  private readonly select = byId<HTMLSelectElement>("camera-select");
  private readonly canvas = byId<HTMLCanvasElement>("camera-photo");
  private readonly caption = byId("camera-caption");
  private cameras: ViewedCamera[] = [];
  private rid = "";
  private shown = -1;

  constructor(
    private readonly photoSource: PhotoSource,
    private readonly onSelect: (index: number) => void,
  ) {
    this.select.addEventListener("change", () => this.show(this.select.value === "" ? -1 : Number(this.select.value)));
  }

  setCameras(cameras: ViewedCamera[], rid: string): void {
    const keep = this.cameras[this.shown]?.image.name;
    this.cameras = cameras;
    this.rid = rid;
    this.select.replaceChildren(
      h("option", { value: "" }, cameras.length ? `${cameras.length} cameras: choose one` : "No cameras yet"),
      ...cameras.map((c, i) => h("option", { value: i }, c.image.name)),
    );
    this.select.disabled = cameras.length === 0;
    const again = keep === undefined ? -1 : cameras.findIndex((c) => c.image.name === keep);
    if (again >= 0) void this.show(again);
    else this.shown = -1;
  }

  async show(index: number): Promise<void> {
    this.shown = index;
    this.select.value = index < 0 ? "" : String(index);
    this.onSelect(index);
    const figure = byId("camera-detail");
    const cam = this.cameras[index];
    figure.hidden = !cam;
    if (!cam) return;
    const { width, height } = cam.intrinsics;
    const tracked = cam.image.points2D.filter((p) => p.point3d_id !== null).length;
    const text = `${cam.image.name}: ${tracked} of ${cam.image.points2D.length} keypoints observe 3D points (green).`;
    this.canvas.width = width;
    this.canvas.height = height;
    const ctx = this.canvas.getContext("2d")!;
    ctx.fillStyle = "#222";
    ctx.fillRect(0, 0, width, height);
    let note = "";
    try {
      const url = await this.photoSource(this.rid, cam.image.name);
      if (url) {
        const img = h("img", { src: url });
        await img.decode();
        if (this.shown !== index) return;
        ctx.drawImage(img, 0, 0, width, height);
      } else {
        note = " The photo itself is not available here.";
      }
    } catch (e) {
      note = ` The photo could not be loaded (${describeError(e)}).`;
    }
    // Observations drawn over the others, large enough to see on a small panel.
    const r = Math.max(2, width / 150);
    const untracked = cam.image.points2D.filter((p) => p.point3d_id === null);
    const observed = cam.image.points2D.filter((p) => p.point3d_id !== null);
    for (const [points, style, radius] of [
      [untracked, "rgba(200,200,200,0.35)", r / 2],
      [observed, "#39ff6a", r],
    ] as const) {
      ctx.fillStyle = style;
      for (const p of points) {
        ctx.beginPath();
        // COLMAP pixel centres are at +0.5 (2.14 follows COLMAP's image coordinates).
        ctx.arc(p.xy[0] - 0.5, p.xy[1] - 0.5, radius, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
    this.canvas.setAttribute("aria-label", text);
    this.caption.textContent = text + note;
  }
}

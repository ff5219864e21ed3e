/**
 * @module The 3D view (three.js): the newest snapshot's points (coloured by their RGB, growing as
 * pieces arrive) and one frustum per registered camera, with OrbitControls (drag to orbit,
 * scroll or pinch to zoom, right-drag to pan, arrow keys when focused). A click picks the
 * camera whose centre is nearest on screen; a list offers the same choice by keyboard. Renders
 * on demand, so an idle view costs nothing.
 */
import {
  BufferAttribute,
  BufferGeometry,
  Color,
  Float32BufferAttribute,
  LineBasicMaterial,
  LineSegments,
  PerspectiveCamera,
  Points,
  PointsMaterial,
  Scene,
  Vector2,
  Vector3,
  WebGLRenderer,
} from "three";
import { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";
import type { PointCloud } from "../../../protocol/wire/points";
import type { SnapshotImage } from "../../../protocol/schemas/snapshot";
import type { z } from "zod";
import { describeError } from "../api/client";
import { say } from "../ui/dom";
import { type Intrinsics, type WorldPose, frustumCorners, intrinsics, worldPose } from "./poses";
import { type SnapshotGeometry, loadGeometry, loadPoints } from "./snapshot-loader";

export type ViewedImage = z.infer<typeof SnapshotImage>;
export interface ViewedCamera {
  image: ViewedImage;
  intrinsics: Intrinsics;
  pose: WorldPose;
}

const FRUSTUM_COLOR = new Color("#ff7a00");
const SELECTED_COLOR = new Color("#00d5ff");
const BACKGROUND = new Color("#10141c");
const PICK_RADIUS_PX = 24;

export class Viewer {
  private readonly renderer: WebGLRenderer | null = null;
  private readonly scene = new Scene();
  private readonly camera = new PerspectiveCamera(60, 1, 0.01, 1e6);
  private readonly controls: OrbitControls | null = null;
  private points: Points | null = null;
  private frustums: LineSegments | null = null;
  private cameras: ViewedCamera[] = [];
  private selected = -1;
  private loading: AbortController | null = null;
  /** What the view was last framed on for this reconstruction: nothing, cameras, or points. */
  private framed: "none" | "cameras" | "points" = "none";
  /** Radius of the framed model (90% of its points, or of the cameras before any point). */
  private radius = 1;
  private shown: { rid: string; seq: number } | null = null;
  private frame = 0;

  constructor(
    private readonly host: HTMLElement,
    private readonly status: HTMLElement,
    private readonly onCameras: (cameras: ViewedCamera[], rid: string, seq: number) => void,
    private readonly onPick: (index: number) => void,
  ) {
    this.scene.background = BACKGROUND;
    try {
      this.renderer = new WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    } catch (e) {
      say(status, `The 3D view needs WebGL, which this browser could not start (${describeError(e)}).`, "error");
      return;
    }
    this.renderer.setPixelRatio(Math.min(2, window.devicePixelRatio));
    host.append(this.renderer.domElement);
    this.renderer.domElement.tabIndex = 0;
    this.renderer.domElement.setAttribute("aria-label", "3D view; arrow keys pan, drag to orbit");
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.enableDamping = true;
    this.controls.listenToKeyEvents(this.renderer.domElement);
    this.controls.addEventListener("change", () => this.requestRender());
    new ResizeObserver(() => this.resize()).observe(host);
    this.renderer.domElement.addEventListener("pointerdown", (e) => this.pointerDown(e));
    this.resize();
  }

  /** Shows snapshot `seq` of reconstruction `rid`, replacing any load in progress. */
  async load(rid: string, seq: number): Promise<void> {
    if (!this.renderer) return;
    if (this.shown && this.shown.rid === rid && this.shown.seq >= seq) return;
    this.loading?.abort();
    const abort = new AbortController();
    this.loading = abort;
    if (this.shown?.rid !== rid) this.framed = "none";
    say(this.status, `Loading snapshot ${seq}…`);
    try {
      const geometry = await loadGeometry(rid, seq, abort.signal);
      if (abort.signal.aborted) return;
      this.shown = { rid, seq };
      this.setCameras(geometry);
      this.onCameras(this.cameras, rid, seq);
      let loaded = 0;
      let total = 0;
      await loadPoints(
        rid,
        seq,
        {
          begin: (n) => {
            total = n;
            this.beginPoints(n);
          },
          add: (p) => {
            if (abort.signal.aborted) return;
            this.addPoints(p, loaded);
            loaded += p.ids.length;
            say(this.status, `Snapshot ${seq}: ${loaded.toLocaleString()} of ${total.toLocaleString()} points, ${this.cameras.length} cameras${loaded < total ? "…" : "."}`);
          },
        },
        abort.signal,
      );
      if (total === 0) say(this.status, `Snapshot ${seq}: no points yet, ${this.cameras.length} cameras.`);
      this.host.dataset.snapshot = String(seq);
    } catch (e) {
      if (!abort.signal.aborted) say(this.status, `Could not load snapshot ${seq}: ${describeError(e)}`, "error");
    }
  }

  private setCameras(g: SnapshotGeometry): void {
    const byId = new Map(g.cameras.cameras.map((c) => [c.camera_id, intrinsics(c)]));
    this.cameras = g.images.images.flatMap((image) => {
      const k = byId.get(image.camera_id);
      return k ? [{ image, intrinsics: k, pose: worldPose(image.cam_from_world) }] : [];
    });
    this.selected = -1;
    if (this.framed === "none") {
      this.fit();
      this.framed = "cameras";
    }
    this.drawFrustums();
  }

  private drawFrustums(): void {
    if (this.frustums) {
      this.scene.remove(this.frustums);
      this.frustums.geometry.dispose();
    }
    // A fraction of the framed model's radius, so models of any scale look alike.
    const depth = 0.08 * this.radius;
    const pos: number[] = [];
    const col: number[] = [];
    this.cameras.forEach((cam, i) => {
      const [a, b, c, d] = frustumCorners(cam.pose, cam.intrinsics, depth) as [Vector3, Vector3, Vector3, Vector3];
      const o = cam.pose.center;
      const color = i === this.selected ? SELECTED_COLOR : FRUSTUM_COLOR;
      for (const [p, q] of [[o, a], [o, b], [o, c], [o, d], [a, b], [b, c], [c, d], [d, a]] as const) {
        pos.push(p.x, p.y, p.z, q.x, q.y, q.z);
        col.push(color.r, color.g, color.b, color.r, color.g, color.b);
      }
    });
    const geometry = new BufferGeometry();
    geometry.setAttribute("position", new Float32BufferAttribute(pos, 3));
    geometry.setAttribute("color", new Float32BufferAttribute(col, 3));
    this.frustums = new LineSegments(geometry, new LineBasicMaterial({ vertexColors: true }));
    this.scene.add(this.frustums);
    this.requestRender();
  }

  private beginPoints(total: number): void {
    if (this.points) {
      this.scene.remove(this.points);
      this.points.geometry.dispose();
    }
    const geometry = new BufferGeometry();
    geometry.setAttribute("position", new BufferAttribute(new Float32Array(3 * total), 3));
    geometry.setAttribute("color", new BufferAttribute(new Uint8Array(3 * total), 3, true));
    geometry.setDrawRange(0, 0);
    this.points = new Points(geometry, new PointsMaterial({ size: 2, sizeAttenuation: false, vertexColors: true }));
    this.scene.add(this.points);
  }

  private addPoints(p: PointCloud, at: number): void {
    if (!this.points) return;
    const g = this.points.geometry;
    const position = g.getAttribute("position") as BufferAttribute;
    const color = g.getAttribute("color") as BufferAttribute;
    (position.array as Float32Array).set(p.xyz, 3 * at);
    (color.array as Uint8Array).set(p.rgb, 3 * at);
    position.needsUpdate = true;
    color.needsUpdate = true;
    g.setDrawRange(0, at + p.ids.length);
    g.computeBoundingSphere();
    if (this.framed !== "points") {
      this.fit(p.xyz);
      this.framed = "points";
      this.drawFrustums();
    }
    this.requestRender();
  }

  /**
   * Frames the model: "up" is the cameras' mean up (their -y axis), since a reconstruction's
   * gauge has no preferred world up; the view looks along the cameras' mean viewing direction at
   * the points' robust centre (per-axis median), from far enough to hold 90% of them and half
   * the cameras. Without
   * points yet, the cameras' centroid and spread stand in.
   */
  private fit(xyz?: Float32Array): void {
    if (this.cameras.length === 0 || !this.controls) return;
    const centers = this.cameras.map((c) => c.pose.center);
    const up = this.cameras.reduce((s, c) => s.add(new Vector3(0, -1, 0).applyQuaternion(c.pose.rotation)), new Vector3()).normalize();
    const forward = this.cameras.reduce((s, c) => s.add(new Vector3(0, 0, 1).applyQuaternion(c.pose.rotation)), new Vector3()).normalize();
    const sample = xyz && xyz.length >= 3 ? everyNth(xyz, Math.ceil(xyz.length / 3 / 5000)) : centers;
    const median = (k: "x" | "y" | "z") => sample.map((v) => v[k]).sort((a, b) => a - b)[Math.floor(sample.length / 2)]!;
    const target = new Vector3(median("x"), median("y"), median("z"));
    const distances = sample.map((v) => v.distanceTo(target)).sort((a, b) => a - b);
    this.radius = Math.max(1e-3, distances[Math.floor(0.9 * (distances.length - 1))]!);
    // Back far enough that most cameras (the nearer half at least) are in front of the eye too.
    const cameraDistances = centers.map((c) => c.distanceTo(target)).sort((a, b) => a - b);
    const distance = Math.max(this.radius / Math.tan(((this.camera.fov / 2) * Math.PI) / 180), 1.1 * cameraDistances[Math.floor(cameraDistances.length / 2)]!);
    this.camera.up.copy(up.lengthSq() > 0 ? up : new Vector3(0, 1, 0));
    this.camera.position.copy(target).addScaledVector(forward, -distance).addScaledVector(this.camera.up, 0.3 * distance);
    this.camera.near = distance / 1000;
    this.camera.far = distance * 1000;
    this.camera.updateProjectionMatrix();
    this.controls.target.copy(target);
    this.controls.update();
  }

  /** Selects camera `index` (or none with -1) and redraws its frustum highlighted. */
  select(index: number): void {
    this.selected = index;
    this.drawFrustums();
  }

  private pointerDown(down: PointerEvent): void {
    const el = this.renderer!.domElement;
    el.addEventListener(
      "pointerup",
      (up) => {
        // A drag orbits; only a click (little movement) picks.
        if (Math.hypot(up.clientX - down.clientX, up.clientY - down.clientY) > 5) return;
        const rect = el.getBoundingClientRect();
        const click = new Vector2(up.clientX - rect.left, up.clientY - rect.top);
        let best = -1;
        let bestDist = PICK_RADIUS_PX;
        this.cameras.forEach((c, i) => {
          const ndc = c.pose.center.clone().project(this.camera);
          if (ndc.z > 1) return;
          const px = new Vector2(((ndc.x + 1) / 2) * rect.width, ((1 - ndc.y) / 2) * rect.height);
          const d = px.distanceTo(click);
          if (d < bestDist) [best, bestDist] = [i, d];
        });
        if (best >= 0) this.onPick(best);
      },
      { once: true },
    );
  }

  private resize(): void {
    if (!this.renderer) return;
    const { clientWidth: w, clientHeight: h } = this.host;
    if (w === 0 || h === 0) return;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.requestRender();
  }

  private requestRender(): void {
    if (this.frame || !this.renderer) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      // Damping keeps moving after the pointer stops; update() reports whether it did.
      if (this.controls?.update()) this.requestRender();
      this.renderer!.render(this.scene, this.camera);
    });
  }
}

/** Every `step`-th point of an xyz array, as vectors. */
function everyNth(xyz: Float32Array, step: number): Vector3[] {
  const out: Vector3[] = [];
  for (let i = 0; i + 2 < xyz.length; i += 3 * step) out.push(new Vector3(xyz[i], xyz[i + 1], xyz[i + 2]));
  return out;
}

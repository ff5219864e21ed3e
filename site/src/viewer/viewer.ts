/**
 * @module The 3D view (three.js): the newest snapshot's points (coloured by their RGB, growing as
 * pieces arrive) and one frustum per registered camera, with OrbitControls (drag to orbit,
 * scroll or pinch to zoom, right-drag to pan, arrow keys when focused). A click on a frustum picks
 * its camera (the nearest drawn edge); a list offers the same choice by keyboard. Renders
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
/** Frustum depth as a fraction of the framed model's radius. */
const FRUSTUM_DEPTH = 0.08;
/** The share of the view's half-angle a framed model fills. */
const FIT_MARGIN = 0.85;
/** The farthest a fit backs off to show cameras, in multiples of the points' own distance. */
const MAX_FIT_STRETCH = 2;
/** A click this close to a frustum's drawn edges picks its camera. */
const PICK_RADIUS_PX = 12;

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
  /** Each new snapshot is framed whole until the visitor moves the view (per reconstruction). */
  private autoFrame = true;
  /** Radius of the framed model (90% of its points, or of the cameras before any point). */
  private radius = 1;
  private shown: { rid: string; seq: number } | null = null;
  /** The snapshot shown or being loaded. */
  private wanted: { rid: string; seq: number } | null = null;
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
    this.renderer.domElement.setAttribute("role", "img");
    this.renderer.domElement.setAttribute(
      "aria-label",
      "3D view; arrow keys pan, drag to orbit; the camera list beside it opens a camera's photo",
    );
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.enableDamping = true;
    this.controls.listenToKeyEvents(this.renderer.domElement);
    this.controls.addEventListener("change", () => this.requestRender());
    this.controls.addEventListener("start", () => (this.autoFrame = false));
    this.renderer.domElement.addEventListener("keydown", () => (this.autoFrame = false));
    new ResizeObserver(() => this.resize()).observe(host);
    this.renderer.domElement.addEventListener("pointerdown", (e) => this.pointerDown(e));
    this.resize();
  }

  /** Shows snapshot `seq` of reconstruction `rid`, replacing any load in progress. */
  async load(rid: string, seq: number): Promise<void> {
    if (!this.renderer) return;
    // A replayed event log announces older snapshots while a newer one loads: keep the newer.
    if (this.wanted && this.wanted.rid === rid && this.wanted.seq >= seq) return;
    this.loading?.abort();
    const abort = new AbortController();
    this.loading = abort;
    this.wanted = { rid, seq };
    if (this.shown?.rid !== rid) this.autoFrame = true;
    say(this.status, `Loading snapshot ${seq}…`);
    try {
      const geometry = await loadGeometry(rid, seq, abort.signal);
      if (abort.signal.aborted) return;
      this.shown = { rid, seq };
      this.host.dataset.snapshot = String(seq);
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
            say(
              this.status,
              `Snapshot ${seq}: ${loaded.toLocaleString()} of ${total.toLocaleString()} points, ${this.cameras.length} cameras${loaded < total ? "…" : "."}`,
            );
          },
        },
        abort.signal,
      );
      if (total === 0) say(this.status, `Snapshot ${seq}: no points yet, ${this.cameras.length} cameras.`);
    } catch (e) {
      if (abort.signal.aborted) return;
      this.wanted = this.shown;
      say(this.status, `Could not load snapshot ${seq}: ${describeError(e)}`, "error");
    }
  }

  private setCameras(g: SnapshotGeometry): void {
    const byId = new Map(g.cameras.cameras.map((c) => [c.camera_id, intrinsics(c)]));
    this.cameras = g.images.images.flatMap((image) => {
      const k = byId.get(image.camera_id);
      return k ? [{ image, intrinsics: k, pose: worldPose(image.cam_from_world) }] : [];
    });
    this.selected = -1;
    // Before the first points, the cameras alone are framed; afterwards the first points of each snapshot are.
    if (this.autoFrame && !this.points) this.fit();
    this.drawFrustums();
  }

  private drawFrustums(): void {
    if (this.frustums) {
      this.scene.remove(this.frustums);
      this.frustums.geometry.dispose();
    }
    const pos: number[] = [];
    const col: number[] = [];
    this.cameras.forEach((cam, i) => {
      const color = i === this.selected ? SELECTED_COLOR : FRUSTUM_COLOR;
      for (const [p, q] of this.frustumEdges(cam)) {
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
    this.points = new Points(geometry, new PointsMaterial({ size: total < 200_000 ? 3 : 2, sizeAttenuation: false, vertexColors: true }));
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
    if (this.autoFrame && at === 0) {
      this.fit(p.xyz);
      this.drawFrustums();
    }
    this.requestRender();
  }

  /**
   * Frames the model: "up" is the cameras' mean up (their -y axis), since a reconstruction's
   * gauge has no preferred world up; the view looks along the cameras' mean viewing direction at
   * the points' robust centre (per-axis median), from far enough to hold 90% of the points and
   * the cameras that fit within twice that distance (photos taken from far away would shrink the
   * model to a dot; they stay behind the eye). Without points yet, the cameras' centroid stands in.
   */
  private fit(xyz?: Float32Array): void {
    if (this.cameras.length === 0 || !this.controls) return;
    const centers = this.cameras.map((c) => c.pose.center);
    const mean = (axis: Vector3) =>
      this.cameras.reduce((s, c) => s.add(axis.clone().applyQuaternion(c.pose.rotation)), new Vector3()).normalize();
    const forward = mean(new Vector3(0, 0, 1));
    const up = mean(new Vector3(0, -1, 0));
    up.addScaledVector(forward, -up.dot(forward));
    if (up.lengthSq() < 1e-9) up.set(0, 1, 0);
    up.normalize();
    const right = new Vector3().crossVectors(forward, up);
    const sample = xyz && xyz.length >= 3 ? everyNth(xyz, Math.ceil(xyz.length / 3 / 5000)) : centers;
    const median = (k: "x" | "y" | "z") => sample.map((v) => v[k]).sort((a, b) => a - b)[Math.floor(sample.length / 2)]!;
    const target = new Vector3(median("x"), median("y"), median("z"));
    const distances = sample.map((v) => v.distanceTo(target)).sort((a, b) => a - b);
    this.radius = Math.max(1e-3, distances[Math.floor(0.9 * (distances.length - 1))]!);
    const tanV = FIT_MARGIN * Math.tan(((this.camera.fov / 2) * Math.PI) / 180);
    const tanH = tanV * this.camera.aspect;
    const forPoints = this.radius / Math.min(tanV, tanH);
    // A camera at depth z past the target and offsets x, y across the view is inside it from d >= |x|/tanH - z (and |y|/tanV - z).
    const forCameras = centers.map((c) => {
      const v = c.clone().sub(target);
      const z = v.dot(forward);
      return Math.max(Math.abs(v.dot(right)) / tanH - z, Math.abs(v.dot(up)) / tanV - z, this.radius * 0.2 - z);
    });
    const reachable = forCameras.filter((d) => d <= MAX_FIT_STRETCH * forPoints);
    const distance = Math.max(forPoints, ...reachable);
    this.camera.up.copy(up);
    this.camera.position
      .copy(target)
      .addScaledVector(forward, -distance)
      .addScaledVector(up, 0.15 * distance);
    this.camera.near = distance / 1000;
    this.camera.far = distance * 1000;
    this.camera.updateProjectionMatrix();
    this.controls.target.copy(target);
    this.controls.update();
  }

  /** A camera's frustum as 8 edges: apex to each image corner, and the image rectangle. */
  private frustumEdges(cam: ViewedCamera): [Vector3, Vector3][] {
    // A fraction of the framed model's radius, so models of any scale look alike.
    const [a, b, c, d] = frustumCorners(cam.pose, cam.intrinsics, FRUSTUM_DEPTH * this.radius) as [Vector3, Vector3, Vector3, Vector3];
    const o = cam.pose.center;
    return [
      [o, a],
      [o, b],
      [o, c],
      [o, d],
      [a, b],
      [b, c],
      [c, d],
      [d, a],
    ];
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
        const onScreen = (v: Vector3): Vector2 | null => {
          const ndc = v.clone().project(this.camera);
          return ndc.z > 1 ? null : new Vector2(((ndc.x + 1) / 2) * rect.width, ((1 - ndc.y) / 2) * rect.height);
        };
        let best = -1;
        let bestDist = PICK_RADIUS_PX;
        this.cameras.forEach((cam, i) => {
          for (const [p, q] of this.frustumEdges(cam)) {
            const [a, b] = [onScreen(p), onScreen(q)];
            const d = a && b ? distanceToSegment(click, a, b) : Infinity;
            if (d < bestDist) [best, bestDist] = [i, d];
          }
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

/** Screen distance from `p` to the segment `a`-`b`. */
function distanceToSegment(p: Vector2, a: Vector2, b: Vector2): number {
  const ab = b.clone().sub(a);
  const t = ab.lengthSq() === 0 ? 0 : Math.min(1, Math.max(0, p.clone().sub(a).dot(ab) / ab.lengthSq()));
  return a.clone().addScaledVector(ab, t).distanceTo(p);
}

/** Every `step`-th point of an xyz array, as vectors. */
function everyNth(xyz: Float32Array, step: number): Vector3[] {
  const out: Vector3[] = [];
  for (let i = 0; i + 2 < xyz.length; i += 3 * step) out.push(new Vector3(xyz[i], xyz[i + 1], xyz[i + 2]));
  return out;
}

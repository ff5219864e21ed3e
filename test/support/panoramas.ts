/** @module Synthetic equirectangular panoramas for the projection and spherical-pipeline suites. */
import sharp from "sharp";
import { type Http, uploadBytes } from "./http";

export interface RawImage {
  rgba: Uint8Array;
  width: number;
  height: number;
}

/** A 512 x 256 panorama: colour by viewing direction (SPHERICAL geometry) plus stripes; `seed` varies it. */
export function stripedPanorama(seed: number): RawImage {
  const [width, height] = [512, 256];
  const rgba = new Uint8Array(4 * width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const lon = ((x + 0.5) / width - 0.5) * 2 * Math.PI;
      const lat = ((y + 0.5) / height - 0.5) * Math.PI;
      const stripes = Math.sin(7 * lon + seed) * Math.cos(5 * lat) > 0 ? 80 : 0;
      rgba.set(
        [
          (1 + Math.cos(lat) * Math.sin(lon)) * 80 + stripes,
          (1 + Math.sin(lat)) * 110,
          (1 + Math.cos(lat) * Math.cos(lon)) * 60 + seed * 10,
          255,
        ],
        4 * (y * width + x),
      );
    }
  }
  return { rgba, width, height };
}

export async function encodePng(image: RawImage): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp(image.rgba, { raw: { width: image.width, height: image.height, channels: 4 } })
      .png()
      .toBuffer(),
  );
}

// ---- a textured room rendered as equirectangular panoramas along a known path ----

type Vec3 = [number, number, number];

/** An axis-aligned box; `inside`: the camera is within it (the room), else it is a solid block (a pillar). */
interface Box {
  min: Vec3;
  max: Vec3;
  inside: boolean;
  seed: number;
}

/** The room: 16 x 6 x 16 m (y down: the floor is at y = 3), with three pillars for parallax. */
const ROOM: Box[] = [
  { min: [-8, -3, -8], max: [8, 3, 8], inside: true, seed: 1 },
  { min: [-3.5, -3, 2.5], max: [-2.5, 3, 3.5], inside: false, seed: 2 },
  { min: [2, -3, -3.6], max: [3, 3, -2.6], inside: false, seed: 3 },
  { min: [0.5, 0.5, 4], max: [2.5, 3, 5], inside: false, seed: 4 },
];

function hash(a: number, b: number, c: number): number {
  let h = Math.imul(a, 374761393) ^ Math.imul(b, 668265263) ^ Math.imul(c, 2147483647);
  h = Math.imul(h ^ (h >>> 13), 1274126177);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

/**
 * Intensity of a surface point (s, t in metres on a face): a random Gaussian blob per 0.3 m cell
 * (radius 4-15 cm, signed amplitude) over a mid-grey, distinct per face; features SIFT finds from
 * every viewpoint, since the texture lives on the surfaces.
 */
function texture(s: number, t: number, face: number): number {
  const cell = 0.3;
  const [ci, cj] = [Math.floor(s / cell), Math.floor(t / cell)];
  let v = 0.5;
  for (let di = -1; di <= 1; di++) {
    for (let dj = -1; dj <= 1; dj++) {
      const [i, j] = [ci + di, cj + dj];
      const cx = (i + hash(i, j, face)) * cell;
      const cy = (j + hash(j, i, face + 7)) * cell;
      const r = 0.04 + 0.11 * hash(i, j, face + 13);
      const a = (hash(i, j, face + 29) - 0.5) * 0.9;
      const d2 = (s - cx) ** 2 + (t - cy) ** 2;
      v += a * Math.exp(-d2 / (2 * r * r));
    }
  }
  return Math.min(1, Math.max(0, v));
}

/** The intensity the ray from `o` along `d` sees first. */
function trace(o: Vec3, d: Vec3): number {
  let best = Infinity;
  let value = 0.5;
  for (const box of ROOM) {
    // Slab intersection; the room is seen from inside (exit), pillars from outside (entry).
    let tNear = -Infinity;
    let tFar = Infinity;
    let nearAxis = 0;
    let farAxis = 0;
    for (let a = 0; a < 3; a++) {
      const inv = 1 / d[a]!;
      let t0 = (box.min[a]! - o[a]!) * inv;
      let t1 = (box.max[a]! - o[a]!) * inv;
      if (t0 > t1) [t0, t1] = [t1, t0];
      if (t0 > tNear) [tNear, nearAxis] = [t0, a];
      if (t1 < tFar) [tFar, farAxis] = [t1, a];
    }
    if (tNear > tFar) continue;
    const [t, axis] = box.inside ? [tFar, farAxis] : [tNear, nearAxis];
    if (!(t > 1e-6) || t >= best) continue;
    best = t;
    const p: Vec3 = [o[0] + t * d[0], o[1] + t * d[1], o[2] + t * d[2]];
    const [u, w] = [0, 1, 2].filter((k) => k !== axis) as [number, number];
    const side = p[axis]! > (box.min[axis]! + box.max[axis]!) / 2 ? 1 : 0;
    value = texture(p[u]!, p[w]!, box.seed * 10 + axis * 2 + side);
  }
  return value;
}

/** A known panorama pose: centre in the room and yaw (degrees, turned right about the down axis). */
export interface PanoramaPose {
  name: string;
  center: Vec3;
  yawDeg: number;
}

/** cam_from_world (rig_from_world) of a pose: R = R_y(yaw)^T, t = -R c. */
export function camFromWorld(pose: PanoramaPose): { rotation: [number, number, number, number]; translation: Vec3 } {
  const half = (pose.yawDeg * Math.PI) / 180 / 2;
  // R_y(yaw) as a quaternion is (cos, 0, sin, 0); its inverse (cos, 0, -sin, 0).
  const q: [number, number, number, number] = [Math.cos(half), 0, -Math.sin(half), 0];
  const [c, s] = [Math.cos(2 * half), Math.sin(2 * half)];
  // R = R_y(yaw)^T = [[c, 0, -s], [0, 1, 0], [s, 0, c]].
  const [x, y, z] = pose.center;
  return { rotation: q, translation: [-(c * x - s * z), -y, -(s * x + c * z)] };
}

/** The path: `count` panoramas 0.5 m apart along x, wandering in z and turning 12 degrees each. */
export function roomPath(count: number): PanoramaPose[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `pano_${String(i).padStart(2, "0")}.jpg`,
    center: [-2 + 0.5 * i, 0.2 * Math.sin(i), 0.4 * Math.cos(0.7 * i)],
    yawDeg: 12 * i - 30,
  }));
}

/** The room seen from `pose` as an equirectangular panorama (SPHERICAL), 2 x 2 supersampled. */
export function renderRoomPanorama(pose: PanoramaPose, width: number): RawImage {
  const height = width / 2;
  const rgba = new Uint8Array(4 * width * height);
  const a = (pose.yawDeg * Math.PI) / 180;
  const [c, s] = [Math.cos(a), Math.sin(a)];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let sum = 0;
      for (const [sx, sy] of [
        [0.25, 0.25],
        [0.75, 0.25],
        [0.25, 0.75],
        [0.75, 0.75],
      ] as const) {
        const lon = ((x + sx) / width - 0.5) * 2 * Math.PI;
        const lat = ((y + sy) / height - 0.5) * Math.PI;
        const [u, v, w] = [Math.cos(lat) * Math.sin(lon), Math.sin(lat), Math.cos(lat) * Math.cos(lon)];
        // world = R_y(yaw) cam.
        sum += trace(pose.center, [c * u + s * w, v, -s * u + c * w]);
      }
      const g = Math.round((sum / 4) * 255);
      rgba.set([g, g, g, 255], 4 * (y * width + x));
    }
  }
  return { rgba, width, height };
}

export async function encodeJpeg(image: RawImage, quality = 95): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp(image.rgba, { raw: { width: image.width, height: image.height, channels: 4 } })
      .jpeg({ quality })
      .toBuffer(),
  );
}

/** Uploads encoded panoramas (file name, bytes) as a spherical dataset (SPHERICAL camera) of project `pid`; answers its id. */
export async function uploadPanoramaDataset(http: Http, pid: string, name: string, files: [string, Uint8Array][]): Promise<string> {
  const entries = [];
  for (const [file, bytes] of files) entries.push({ name: file, blob_sha: await uploadBytes(http, bytes) });
  const created = await http("POST", `/v1/projects/${pid}/datasets`, {
    name,
    camera_model: "SPHERICAL",
    is_spherical: true,
    source: { kind: "upload", entries },
  });
  if (created.status !== 201) throw new Error(`dataset ${name}: ${created.status} ${JSON.stringify(created.json)}`);
  return created.json.dataset_id;
}

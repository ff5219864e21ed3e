/**
 * @module The observations sidecar (spec 4.9): which 3D points an image sees and which images see
 * a point, computed from a sealed snapshot's images.json (points2D index = kp_idx, 2.14). An
 * image observation's `error` is its reprojection error in pixels when cameras.json and
 * points.bin allow it (a camera model projected here, a point present), else null.
 */
import type { CamerasFile, ImagesFile, Rigid3 } from "../../protocol";
import { CAMERA_MODELS } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { notFound } from "../errors";
import { type SnapshotAddress, readJson, sealedFile } from "./snapshots";
import { tenantStore } from "./stores";

type Camera = CamerasFile["cameras"][number];
type Vec3 = [number, number, number];

/** images.json of the snapshot; its absence is the sidecar's absence (404). */
async function imagesOf(env: Env, a: SnapshotAddress): Promise<ImagesFile> {
  return readJson<ImagesFile>(env, await sealedFile(env, a, "images.json"));
}

/** A file the snapshot may lack (then null), where a missing reconstruction or snapshot was already ruled out. */
async function optional(env: Env, a: SnapshotAddress, name: string) {
  return tenantStore(env, a.tenantId).snapshotFile(a.reconId, a.seq, a.idx, name);
}

export async function imageObservations(env: Env, a: SnapshotAddress, imageId: number) {
  const images = await imagesOf(env, a);
  const image = images.images.find((i) => i.image_id === imageId);
  if (!image) throw notFound(`image ${imageId} in snapshot ${a.seq}`);
  const [camerasFile, pointsFile] = await Promise.all([optional(env, a, "cameras.json"), optional(env, a, "points.bin")]);
  const camera = camerasFile ? (await readJson<CamerasFile>(env, camerasFile)).cameras.find((c) => c.camera_id === image.camera_id) : undefined;
  const xyzOf = pointsFile && camera ? await pointLookup(env, pointsFile.r2_key) : null;
  const observations = image.points2D.flatMap((p, kp) => {
    if (p.point3d_id === null) return [];
    const xyz = xyzOf?.(p.point3d_id) ?? null;
    const projected = xyz && camera ? project(camera, image.cam_from_world, xyz) : null;
    const error = projected ? Math.hypot(projected[0] - p.xy[0], projected[1] - p.xy[1]) : null;
    return [{ point3d_id: p.point3d_id, x: p.xy[0], y: p.xy[1], kp_idx: kp, error: Number.isFinite(error) ? error : null }];
  });
  return { image_id: imageId, count: observations.length, observations };
}

export async function pointVisibility(env: Env, a: SnapshotAddress, pointId: number) {
  const images = await imagesOf(env, a);
  const observations = images.images.flatMap((image) =>
    image.points2D.flatMap((p, kp) => (p.point3d_id === pointId ? [{ image_id: image.image_id, x: p.xy[0], y: p.xy[1], kp_idx: kp }] : [])),
  );
  return { point3d_id: pointId, count: observations.length, observations };
}

/** point3d_id -> xyz by binary search over the sorted ids of points.bin (2.14 rule 1). */
async function pointLookup(env: Env, key: string): Promise<(id: number) => Vec3 | null> {
  const obj = await env.BLOBS.get(key);
  if (!obj) return () => null;
  const cloud = decodePoints(new Uint8Array(await obj.arrayBuffer()));
  return (id) => {
    const want = BigInt(id);
    let lo = 0;
    let hi = cloud.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = cloud.ids[mid]!;
      if (at === want) return [cloud.xyz[3 * mid]!, cloud.xyz[3 * mid + 1]!, cloud.xyz[3 * mid + 2]!];
      if (at < want) lo = mid + 1;
      else hi = mid - 1;
    }
    return null;
  };
}

/** Hamilton quaternion (w, x, y, z) rotation of v. */
function rotate(q: Rigid3["rotation"], v: Vec3): Vec3 {
  const n = Math.hypot(q.w, q.x, q.y, q.z) || 1;
  const [w, x, y, z] = [q.w / n, q.x / n, q.y / n, q.z / n];
  // v + 2w (u x v) + 2 u x (u x v), with u = (x, y, z).
  const c1: Vec3 = [y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0]];
  const c2: Vec3 = [y * c1[2] - z * c1[1], z * c1[0] - x * c1[2], x * c1[1] - y * c1[0]];
  return [v[0] + 2 * (w * c1[0] + c2[0]), v[1] + 2 * (w * c1[1] + c2[1]), v[2] + 2 * (w * c1[2] + c2[2])];
}

/**
 * World point to pixel through the camera (COLMAP's models, protocol/camera-models.ts), for the
 * pinhole-family models; null for a point behind the camera or a model not projected here.
 */
export function project(camera: Camera, camFromWorld: Rigid3, world: Vec3): [number, number] | null {
  const r = rotate(camFromWorld.rotation, world);
  const p: Vec3 = [r[0] + camFromWorld.translation[0], r[1] + camFromWorld.translation[1], r[2] + camFromWorld.translation[2]];
  const layout = CAMERA_MODELS.find((m) => m.name === camera.model);
  if (!(p[2] > 0) || !layout || camera.params.length !== layout.params.length) return null;
  const [u, v] = [p[0] / p[2], p[1] / p[2]];
  const k = camera.params;
  const r2 = u * u + v * v;
  const radial = (k1: number, k2 = 0) => [u * (1 + k1 * r2 + k2 * r2 * r2), v * (1 + k1 * r2 + k2 * r2 * r2)] as const;
  const pixel = (fx: number, fy: number, cx: number, cy: number, du: number, dv: number): [number, number] => [fx * du + cx, fy * dv + cy];
  switch (camera.model) {
    case "SIMPLE_PINHOLE":
      return pixel(k[0]!, k[0]!, k[1]!, k[2]!, u, v);
    case "PINHOLE":
      return pixel(k[0]!, k[1]!, k[2]!, k[3]!, u, v);
    case "SIMPLE_RADIAL":
      return pixel(k[0]!, k[0]!, k[1]!, k[2]!, ...radial(k[3]!));
    case "RADIAL":
      return pixel(k[0]!, k[0]!, k[1]!, k[2]!, ...radial(k[3]!, k[4]!));
    case "OPENCV": {
      const [k1, k2, p1, p2] = [k[4]!, k[5]!, k[6]!, k[7]!];
      const [du, dv] = radial(k1, k2);
      return pixel(k[0]!, k[1]!, k[2]!, k[3]!, du + 2 * p1 * u * v + p2 * (r2 + 2 * u * u), dv + p1 * (r2 + 2 * v * v) + 2 * p2 * u * v);
    }
    default:
      return null;
  }
}

/**
 * @module The observations sidecar (spec 4.9): which 3D points an image sees and which images see
 * a point, computed from a sealed snapshot's images.json (points2D index = kp_idx, 2.14). An
 * image observation's `error` is its reprojection error in pixels when cameras.json and
 * points.bin allow it (a camera model projected here, a point present), else null.
 */
import { type CamerasFile, type ImagesFile, projectWorld } from "../../protocol";
import { decodePoints } from "../../protocol/wire/points";
import { notFound } from "../errors";
import { type SnapshotAddress, readJson, sealedFile } from "./snapshots";
import { tenantStore } from "./stores";

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
  const camera = camerasFile
    ? (await readJson<CamerasFile>(env, camerasFile)).cameras.find((c) => c.camera_id === image.camera_id)
    : undefined;
  const xyzOf = pointsFile && camera ? await pointLookup(env, pointsFile.r2_key) : null;
  const observations = image.points2D.flatMap((p, kp) => {
    if (p.point3d_id === null) return [];
    const xyz = xyzOf?.(p.point3d_id) ?? null;
    const projected = xyz && camera ? projectWorld(camera, image.cam_from_world, xyz) : null;
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
  // Every point of a model is seen by at least two images: one seen by none is not in the snapshot.
  if (observations.length === 0) throw notFound(`point ${pointId} in snapshot ${a.seq}`);
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

/**
 * @module Test fixture only: a sealed-snapshot file set (spec 2.14: cameras.json, images.json,
 * points.bin) made from a shared set's COLMAP reference model, so the site's 3D view can be
 * exercised before the pipeline produces snapshots. Never shipped as a result.
 */
import { readColmapTextModel } from "../../engine-wasm/ts/colmap-text";
import { CamerasFile, ImagesFile } from "../../protocol/schemas/snapshot";
import { encodePoints } from "../../protocol/wire/points";

export interface SnapshotFixture {
  files: Record<string, Uint8Array>;
  cameraCount: number;
  pointCount: number;
}

export async function snapshotFromReference(referenceDir: string): Promise<SnapshotFixture> {
  const model = await readColmapTextModel(referenceDir);
  const cameras = CamerasFile.parse({
    cameras: [...model.cameras.values()].map((c) => ({
      camera_id: c.cameraId,
      model: c.model,
      width: c.width,
      height: c.height,
      params: c.params,
      has_prior_focal_length: false,
    })),
  });
  const images = ImagesFile.parse({
    images: [...model.images.values()].map((im) => ({
      image_id: im.imageId,
      name: im.name,
      camera_id: im.cameraId,
      cam_from_world: { rotation: { w: im.qvec[0], x: im.qvec[1], y: im.qvec[2], z: im.qvec[3] }, translation: im.tvec },
      points2D: Array.from(im.point3DIds, (id, k) => ({ xy: [im.xys[2 * k]!, im.xys[2 * k + 1]!], point3d_id: id < 0 ? null : id })),
    })),
  });
  const points = [...model.points3D.values()].sort((a, b) => a.point3DId - b.point3DId);
  const bin = encodePoints({
    xyz: Float32Array.from(points.flatMap((p) => p.xyz)),
    rgb: Uint8Array.from(points.flatMap((p) => p.rgb)),
    trackLength: Uint16Array.from(points.map((p) => p.track.length)),
    ids: BigUint64Array.from(points.map((p) => BigInt(p.point3DId))),
  });
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  return {
    files: { "cameras.json": json(cameras), "images.json": json(images), "points.bin": bin },
    cameraCount: cameras.cameras.length,
    pointCount: points.length,
  };
}

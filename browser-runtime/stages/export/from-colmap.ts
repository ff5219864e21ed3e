/**
 * @module A COLMAP model (as engine-wasm/ts/colmap-text.ts parses it) turned into the files of a
 * sealed snapshot (spec 2.14): cameras.json, images.json, points.bin and summary.json. Used by the
 * export tests on the shared reference models and by benchmarks that start from a COLMAP result.
 *
 * What a snapshot cannot carry is lost on purpose, as it would be for our own reconstructions:
 * positions become float32 (points.bin), per-point errors are dropped (exports recompute them),
 * and tracks survive only through images' points2D (a track element whose keypoint does not name
 * the point back is dropped). Keypoint coordinates keep COLMAP's convention (pixel centre +0.5).
 */
import type { CamerasFile, ImagesFile, SummaryFile } from "../../../protocol/schemas/snapshot";
import { encodePoints } from "../../../protocol/wire/points";
import { parseColmapTextModel, readColmapTextModel, type ColmapModel } from "../../../engine-wasm/ts/colmap-text";

export interface SnapshotFiles {
  cameras: CamerasFile;
  images: ImagesFile;
  points: Uint8Array;
  summary: SummaryFile;
}

export function snapshotFromColmapModel(model: ColmapModel): SnapshotFiles {
  const cameras: CamerasFile = {
    cameras: [...model.cameras.values()]
      .sort((a, b) => a.cameraId - b.cameraId)
      .map((c) => ({
        camera_id: c.cameraId,
        model: c.model,
        width: c.width,
        height: c.height,
        params: [...c.params],
        has_prior_focal_length: false,
      })),
  };
  const images: ImagesFile = {
    images: [...model.images.values()]
      .sort((a, b) => a.imageId - b.imageId)
      .map((image) => ({
        image_id: image.imageId,
        name: image.name,
        camera_id: image.cameraId,
        cam_from_world: {
          rotation: { w: image.qvec[0], x: image.qvec[1], y: image.qvec[2], z: image.qvec[3] },
          translation: [...image.tvec],
        },
        points2D: Array.from(image.point3DIds, (id, k) => ({
          xy: [image.xys[2 * k]!, image.xys[2 * k + 1]!] as [number, number],
          point3d_id: id >= 0 ? id : null,
        })),
      })),
  };
  const trackLength = new Map<number, number>();
  for (const image of images.images)
    for (const p of image.points2D) if (p.point3d_id !== null) trackLength.set(p.point3d_id, (trackLength.get(p.point3d_id) ?? 0) + 1);
  const points = [...model.points3D.values()].sort((a, b) => a.point3DId - b.point3DId);
  const n = points.length;
  const cloud = { xyz: new Float32Array(3 * n), rgb: new Uint8Array(3 * n), trackLength: new Uint16Array(n), ids: new BigUint64Array(n) };
  points.forEach((p, i) => {
    cloud.xyz.set(p.xyz, 3 * i);
    cloud.rgb.set(p.rgb, 3 * i);
    cloud.trackLength[i] = Math.min(trackLength.get(p.point3DId) ?? 0, 0xffff);
    cloud.ids[i] = BigInt(p.point3DId);
  });
  const errors = points.map((p) => p.error).filter((e) => e >= 0);
  const summary: SummaryFile = {
    models: [{ idx: 0, num_reg_images: images.images.length, num_points3D: n }],
    phase: "imported",
    mean_reproj_err: errors.length === 0 ? 0 : errors.reduce((a, b) => a + b, 0) / errors.length,
  };
  return { cameras, images, points: encodePoints(cloud), summary };
}

export function snapshotFromColmapText(texts: { cameras: string; images: string; points3D: string }): SnapshotFiles {
  return snapshotFromColmapModel(parseColmapTextModel(texts));
}

/** Node only: a COLMAP text model directory (cameras.txt, images.txt, points3D.txt). */
export async function readSnapshotFromColmapDir(dir: string): Promise<SnapshotFiles> {
  return snapshotFromColmapModel(await readColmapTextModel(dir));
}

/**
 * @module A mapped model as the spec's snapshot files (2.14): cameras.json, images.json
 * (Hamilton quaternions; points2D indexed by keypoint, each with its point3d_id or null),
 * points.bin and a decimated points_preview.bin (`application/x-sfm-points-v1`), and the model's
 * summary. Image ids are 1-based dataset positions (protocol/wire/verified-matches.ts), camera
 * ids 1-based camera indices, point ids 1-based point indices (ascending, as points.bin needs).
 */
import { type MappedModel, point3DIdsOfImage } from "../../engine-wasm/ts/mapping";
import type { CamerasFile, ImagesFile } from "../../protocol";
import { meanReprojectionError } from "../../protocol/camera-projection";
import { type PointCloud, encodePoints } from "../../protocol/wire/points";
import { imageIdAt } from "../../protocol/wire/verified-matches";

export interface SnapshotImageInput {
  name: string;
  camera: number;
  /** x, y per keypoint (pixels, COLMAP convention). */
  keypoints: Float64Array;
  /** r, g, b per keypoint, when colours are extracted. */
  colors?: Uint8Array;
}

export interface ModelFiles {
  cameras: CamerasFile;
  images: ImagesFile;
  points: Uint8Array;
  preview: Uint8Array;
  summary: { num_reg_images: number; num_points3D: number; mean_reproj_err: number; mean_track_length: number };
}

/** At most this many points in points_preview.bin. */
export const PREVIEW_POINTS = 20_000;

/** points_preview.bin of a cloud: every k-th point, at most PREVIEW_POINTS. */
export function previewPoints(cloud: PointCloud): Uint8Array {
  const n = cloud.ids.length;
  const step = Math.max(1, Math.ceil(n / PREVIEW_POINTS));
  const keep = Array.from({ length: Math.ceil(n / step) }, (_, i) => i * step);
  return encodePoints({
    xyz: Float32Array.from(keep.flatMap((p) => [cloud.xyz[3 * p]!, cloud.xyz[3 * p + 1]!, cloud.xyz[3 * p + 2]!])),
    rgb: Uint8Array.from(keep.flatMap((p) => [cloud.rgb[3 * p]!, cloud.rgb[3 * p + 1]!, cloud.rgb[3 * p + 2]!])),
    trackLength: Uint16Array.from(keep.map((p) => cloud.trackLength[p]!)),
    ids: BigUint64Array.from(keep.map((p) => cloud.ids[p]!)),
  });
}

export function modelFiles(model: MappedModel, images: readonly SnapshotImageInput[]): ModelFiles {
  const used = [...new Set(model.images.map((m) => images[m.image]!.camera))].sort((a, b) => a - b);
  const cameras: CamerasFile = {
    cameras: used.map((c) => {
      const cam = model.cameras[c]!;
      return {
        camera_id: c + 1,
        model: cam.model,
        width: cam.width,
        height: cam.height,
        params: cam.params,
        has_prior_focal_length: !!cam.hasPriorFocalLength,
      };
    }),
  };
  const imagesFile: ImagesFile = {
    images: model.images.map((m) => {
      const input = images[m.image]!;
      const ids = point3DIdsOfImage(model, m.image, input.keypoints.length / 2);
      const [w, x, y, z] = m.qvec;
      return {
        image_id: imageIdAt(m.image),
        name: input.name,
        camera_id: input.camera + 1,
        cam_from_world: { rotation: { w, x, y, z }, translation: m.tvec },
        points2D: Array.from(ids, (id, k) => ({
          xy: [input.keypoints[2 * k]!, input.keypoints[2 * k + 1]!] as [number, number],
          point3d_id: id < 0 ? null : id + 1,
        })),
      };
    }),
  };

  const n = model.points.length / 3;
  const rgb = new Uint8Array(3 * n).fill(128);
  const trackLength = new Uint16Array(n);
  let totalObs = 0;
  for (let p = 0, k = 0; p < n; p++) {
    const length = model.tracks[k]!;
    trackLength[p] = Math.min(length, 0xffff);
    totalObs += length;
    const sum = [0, 0, 0];
    let colored = 0;
    for (let e = 0; e < length; e++) {
      const colors = images[model.tracks[k + 1 + 2 * e]!]!.colors;
      const kp = model.tracks[k + 2 + 2 * e]!;
      if (!colors) continue;
      for (let c = 0; c < 3; c++) sum[c]! += colors[3 * kp + c]!;
      colored++;
    }
    if (colored > 0) for (let c = 0; c < 3; c++) rgb[3 * p + c] = Math.round(sum[c]! / colored);
    k += 1 + 2 * length;
  }
  const xyz = Float32Array.from(model.points);
  const ids = BigUint64Array.from({ length: n }, (_, p) => BigInt(p + 1));
  const points = encodePoints({ xyz, rgb, trackLength, ids });
  const preview = previewPoints({ xyz, rgb, trackLength, ids });
  return {
    cameras,
    images: imagesFile,
    points,
    preview,
    summary: {
      num_reg_images: model.images.length,
      num_points3D: n,
      mean_reproj_err: model.meanReprojectionError,
      mean_track_length: n ? totalObs / n : 0,
    },
  };
}

/**
 * A model read back from snapshot files (cameras, images, points) as the files a seal takes: its
 * points encoded and previewed, its summary counted from the files, the mean reprojection error
 * measured as the merge measures it (over observations).
 */
export function snapshotModelFiles(model: { cameras: CamerasFile; images: ImagesFile; points: PointCloud }): ModelFiles {
  const { xyz, ids, trackLength } = model.points;
  const at = new Map<number, [number, number, number]>();
  ids.forEach((id, i) => at.set(Number(id), [xyz[3 * i]!, xyz[3 * i + 1]!, xyz[3 * i + 2]!]));
  const observations = trackLength.reduce((a, t) => a + t, 0);
  return {
    cameras: model.cameras,
    images: model.images,
    points: encodePoints(model.points),
    preview: previewPoints(model.points),
    summary: {
      num_reg_images: model.images.images.length,
      num_points3D: ids.length,
      mean_reproj_err: meanReprojectionError(model, (id) => at.get(id)) ?? 0,
      mean_track_length: ids.length ? observations / ids.length : 0,
    },
  };
}

/**
 * A snapshot model of one dataset back in the mapper's terms (the inverse of modelFiles): images and cameras by
 * their dataset index (`indexOf` an image name; camera id c + 1 is input camera c), each point's track from the
 * images' points2D, the points in id order. `cameras`: the mapping input's cameras, whose parameters the model's
 * cameras replace. What the engine continues a model from (IncrementalMapping.extend).
 */
export function mappedModelOf(
  model: { cameras: CamerasFile; images: ImagesFile; points: PointCloud },
  cameras: readonly MappedModel["cameras"][number][],
  indexOf: (name: string) => number | undefined,
): Pick<MappedModel, "cameras" | "images" | "points" | "tracks"> {
  const params = new Map(model.cameras.cameras.map((c) => [c.camera_id, c.params]));
  const pointIndex = new Map(Array.from(model.points.ids, (id, i) => [Number(id), i]));
  const tracks: number[][] = Array.from(model.points.ids, () => []);
  const images = model.images.images.map((im) => {
    const image = indexOf(im.name);
    if (image === undefined) throw new Error(`the model's image '${im.name}' is not in the mapping input`);
    im.points2D.forEach((kp, k) => {
      const p = kp.point3d_id === null ? undefined : pointIndex.get(kp.point3d_id);
      if (p !== undefined) tracks[p]!.push(image, k);
    });
    const { w, x, y, z } = im.cam_from_world.rotation;
    return {
      image,
      qvec: [w, x, y, z] as MappedModel["images"][number]["qvec"],
      tvec: [...im.cam_from_world.translation] as MappedModel["images"][number]["tvec"],
    };
  });
  return {
    cameras: cameras.map((c, i) => ({ ...c, params: [...(params.get(i + 1) ?? c.params)] })),
    images,
    points: Float64Array.from(model.points.xyz),
    tracks: Int32Array.from(tracks.flatMap((t) => [t.length / 2, ...t])),
  };
}

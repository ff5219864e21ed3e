/**
 * @module The one view of a sealed snapshot (spec 2.10, 2.14) that every export writer reads.
 *
 * A snapshot stores tracks only implicitly: images.json points2D[kp_idx].point3d_id names the 3D
 * point a keypoint observes, and points.bin holds each point's position, colour and track length.
 * Here the tracks are rebuilt (image_id ascending, then kp_idx ascending), checked against
 * points.bin, and each point's reprojection error is computed through its cameras' models, as
 * COLMAP defines a Point3D's error (mean pixel distance over its track).
 */
import type { CamerasFile, ImagesFile } from "../../../protocol/schemas/snapshot";
import { decodePoints, type PointCloud } from "../../../protocol/wire/points";
import { projectToImage } from "../../../protocol/camera-projection";
import { worldToCamera, type Vec3 } from "./geometry";

export type SnapshotCamera = CamerasFile["cameras"][number];
export type SnapshotImage = ImagesFile["images"][number];

/** What an export reads: the parsed snapshot JSON files and the points.bin bytes (or decoded). */
export interface SnapshotInput {
  cameras: CamerasFile;
  images: ImagesFile;
  points: Uint8Array | PointCloud;
}

export interface TrackElement {
  imageId: number;
  point2DIdx: number;
}

export interface ExportPoint {
  id: number;
  /** As stored in points.bin (float32 values). */
  xyz: Vec3;
  rgb: [number, number, number];
  track: TrackElement[];
  /** Mean reprojection error in pixels over the track; -1 when no element projects (COLMAP's "no error"). */
  error: number;
}

export interface ExportModel {
  /** Ascending camera_id. */
  cameras: SnapshotCamera[];
  cameraById: Map<number, SnapshotCamera>;
  /** Ascending image_id: every image in images.json is registered. */
  images: SnapshotImage[];
  imageById: Map<number, SnapshotImage>;
  /** Ascending point3d_id, as points.bin. */
  points: ExportPoint[];
  numObservations: number;
  meanTrackLength: number;
  meanObservationsPerImage: number;
  /** Mean of the points' errors, as `colmap model_analyzer` reports it. */
  meanReprojectionError: number;
}

export class ExportError extends Error {
  constructor(
    readonly code: "inconsistent_snapshot" | "unsupported_camera_model" | "unsupported_image_name" | "missing_image" | "too_many_files",
    message: string,
  ) {
    super(message);
    this.name = "ExportError";
  }
}

export function buildExportModel(input: SnapshotInput): ExportModel {
  const cloud = input.points instanceof Uint8Array ? decodePoints(input.points) : input.points;
  const cameras = [...input.cameras.cameras].sort((a, b) => a.camera_id - b.camera_id);
  const cameraById = new Map(cameras.map((c) => [c.camera_id, c]));
  const images = [...input.images.images].sort((a, b) => a.image_id - b.image_id);
  const imageById = new Map(images.map((i) => [i.image_id, i]));
  if (cameraById.size !== cameras.length) throw new ExportError("inconsistent_snapshot", "cameras.json repeats a camera_id");
  if (imageById.size !== images.length) throw new ExportError("inconsistent_snapshot", "images.json repeats an image_id");

  const n = cloud.ids.length;
  const indexById = new Map<number, number>();
  const points: ExportPoint[] = [];
  for (let i = 0; i < n; i++) {
    const id = Number(cloud.ids[i]!);
    indexById.set(id, i);
    points.push({
      id,
      xyz: [cloud.xyz[3 * i]!, cloud.xyz[3 * i + 1]!, cloud.xyz[3 * i + 2]!],
      rgb: [cloud.rgb[3 * i]!, cloud.rgb[3 * i + 1]!, cloud.rgb[3 * i + 2]!],
      track: [],
      error: -1,
    });
  }

  let numObservations = 0;
  for (const image of images) {
    if (!cameraById.has(image.camera_id)) {
      throw new ExportError(
        "inconsistent_snapshot",
        `image ${image.image_id} refers to camera ${image.camera_id}, absent from cameras.json`,
      );
    }
    image.points2D.forEach((p, kpIdx) => {
      if (p.point3d_id === null) return;
      const index = indexById.get(p.point3d_id);
      if (index === undefined) {
        throw new ExportError(
          "inconsistent_snapshot",
          `image ${image.image_id} keypoint ${kpIdx} observes point ${p.point3d_id}, absent from points.bin`,
        );
      }
      points[index]!.track.push({ imageId: image.image_id, point2DIdx: kpIdx });
      numObservations += 1;
    });
  }
  for (let i = 0; i < n; i++) {
    const stored = cloud.trackLength[i]!;
    const rebuilt = points[i]!.track.length;
    // track_len is uint16 on the wire: longer tracks saturate.
    if (stored !== Math.min(rebuilt, 0xffff)) {
      throw new ExportError(
        "inconsistent_snapshot",
        `point ${points[i]!.id}: points.bin says track_len ${stored}, images.json observes it ${rebuilt} times`,
      );
    }
  }

  let errorSum = 0;
  let errorCount = 0;
  for (const point of points) {
    point.error = pointError(point, imageById, cameraById);
    if (point.error !== -1) {
      errorSum += point.error;
      errorCount += 1;
    }
  }
  return {
    cameras,
    cameraById,
    images,
    imageById,
    points,
    numObservations,
    meanTrackLength: n === 0 ? 0 : numObservations / n,
    meanObservationsPerImage: images.length === 0 ? 0 : numObservations / images.length,
    meanReprojectionError: errorCount === 0 ? 0 : errorSum / errorCount,
  };
}

function pointError(point: ExportPoint, imageById: Map<number, SnapshotImage>, cameraById: Map<number, SnapshotCamera>): number {
  let sum = 0;
  let count = 0;
  for (const el of point.track) {
    const image = imageById.get(el.imageId)!;
    const camera = cameraById.get(image.camera_id)!;
    if (camera.model === "SPHERICAL") continue;
    const projected = projectToImage(camera, worldToCamera(image.cam_from_world, point.xyz));
    if (!projected) continue;
    const [x, y] = image.points2D[el.point2DIdx]!.xy;
    sum += Math.hypot(projected[0] - x, projected[1] - y);
    count += 1;
  }
  return count === 0 ? -1 : sum / count;
}

/** Throws unless every camera is a model COLMAP's files can hold. */
export function requireColmapCameras(model: ExportModel, format: string, allowed?: readonly string[]): void {
  const bad = model.cameras.filter((c) => (allowed ? !allowed.includes(c.model) : c.model === "SPHERICAL"));
  if (bad.length > 0) {
    const list = bad.map((c) => `${c.camera_id} (${c.model})`).join(", ");
    const what = allowed ? `supports only ${allowed.join(", ")}` : "cannot hold SPHERICAL cameras";
    throw new ExportError("unsupported_camera_model", `${format} ${what}; cameras ${list}`);
  }
}

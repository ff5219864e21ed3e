/**
 * @module Sealed snapshot files (spec 2.10, 2.14) and the geometry shapes they use (2.13).
 * Rotations are Hamilton quaternions, scalar first; the runner converts from any internal
 * convention before upload, and the worker validates every file against these before sealing.
 */
import { z } from "zod";

export const Rotation = z.object({ w: z.number(), x: z.number(), y: z.number(), z: z.number() }).meta({ id: "Rotation" });
const Vec3 = z.tuple([z.number(), z.number(), z.number()]);
export const Rigid3 = z.object({ rotation: Rotation, translation: Vec3 }).meta({ id: "Rigid3" });
export type Rigid3 = z.infer<typeof Rigid3>;
export const Sim3 = z.object({ rotation: Rotation, translation: Vec3, scale: z.number().positive() }).meta({ id: "Sim3" });

export const SnapshotCamera = z.object({
  camera_id: z.number().int().nonnegative(),
  model: z.string(),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  params: z.array(z.number()),
  has_prior_focal_length: z.boolean(),
});
export const CamerasFile = z.object({ cameras: z.array(SnapshotCamera) }).meta({ id: "CamerasFile" });
export type CamerasFile = z.infer<typeof CamerasFile>;

export const SnapshotImage = z.object({
  image_id: z.number().int().nonnegative(),
  name: z.string(),
  camera_id: z.number().int().nonnegative(),
  cam_from_world: Rigid3,
  /** Index = keypoint index (kp_idx); null point3d_id = in no track. */
  points2D: z.array(z.object({ xy: z.tuple([z.number(), z.number()]), point3d_id: z.number().int().nonnegative().nullable() })),
});
export const ImagesFile = z.object({ images: z.array(SnapshotImage) }).meta({ id: "ImagesFile" });
export type ImagesFile = z.infer<typeof ImagesFile>;

export const RigsFile = z
  .object({
    rigs: z.array(
      z.object({ rig_id: z.number().int(), ref_sensor_id: z.number().int(), sensor_from_rig: z.record(z.string(), Rigid3) }),
    ),
  })
  .meta({ id: "RigsFile" });
export const FramesFile = z
  .object({
    frames: z.array(
      z.object({
        frame_id: z.number().int(),
        rig_id: z.number().int(),
        rig_from_world: Rigid3,
        data_ids: z.record(z.string(), z.number().int()),
      }),
    ),
  })
  .meta({ id: "FramesFile" });

export const SummaryFile = z
  .looseObject({
    models: z.array(z.looseObject({ idx: z.number().int(), num_reg_images: z.number().int(), num_points3D: z.number().int() })),
    phase: z.string(),
    mean_reproj_err: z.number(),
  })
  .meta({ id: "SummaryFile" });
export type SummaryFile = z.infer<typeof SummaryFile>;

export const TWO_VIEW_TYPES = [
  "undefined",
  "degenerate",
  "calibrated",
  "uncalibrated",
  "planar",
  "panoramic",
  "planar_or_panoramic",
  "watermark",
  "multiple",
] as const;
const Matrix3 = z.array(z.number()).length(9).nullable();
export const TwoViewGeometriesFile = z
  .object({
    pairs: z.array(
      z.object({
        image_id1: z.number().int(),
        image_id2: z.number().int(),
        type: z.enum(TWO_VIEW_TYPES),
        num_inliers: z.number().int().nonnegative(),
        F: Matrix3,
        E: Matrix3,
        H: Matrix3,
        inlier_matches: z.array(z.tuple([z.number().int(), z.number().int()])),
      }),
    ),
  })
  .meta({ id: "TwoViewGeometriesFile" });
export type TwoViewGeometriesFile = z.infer<typeof TwoViewGeometriesFile>;

/** File names a snapshot may hold (4.9 rule 1). */
export const SNAPSHOT_FILES = [
  "cameras.json",
  "images.json",
  "rigs.json",
  "frames.json",
  "pose_graph.json",
  "summary.json",
  "points.bin",
  "points_preview.bin",
  "tiles/index.json",
  "dense/index.json",
  "dense/fused.bin",
] as const;
export type SnapshotFileName = (typeof SNAPSHOT_FILES)[number];

/**
 * @module Sealed snapshot files (spec 2.10, 2.14) and the geometry shapes they use (2.13).
 * Rotations are Hamilton quaternions, scalar first; the runner converts from any internal
 * convention before upload, and the worker validates every file against these before sealing.
 */
import { z } from "zod";
import { POINT_DESCRIPTORS_FILE } from "../wire/point-descriptors";
import { Sha256 } from "./common";

export const Rotation = z.object({ w: z.number(), x: z.number(), y: z.number(), z: z.number() }).meta({ id: "Rotation" });
const Vec3 = z.tuple([z.number(), z.number(), z.number()]);
export const Rigid3 = z.object({ rotation: Rotation, translation: Vec3 }).meta({ id: "Rigid3" });
export type Rigid3 = z.infer<typeof Rigid3>;

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
    rigs: z.array(z.object({ rig_id: z.number().int(), ref_sensor_id: z.number().int(), sensor_from_rig: z.record(z.string(), Rigid3) })),
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

/** Spec 2.14 two-view geometry types, in COLMAP's numbering (the engine's bindings pass indices). */
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
export type TwoViewType = (typeof TWO_VIEW_TYPES)[number];
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
        /**
         * Our extension: the relative pose the verification recovered (translation of unit length,
         * zero for panoramic pairs; null when none), which the mapper's view-graph filter reads.
         */
        "x-cam2_from_cam1": Rigid3.nullable().optional(),
      }),
    ),
  })
  .meta({ id: "TwoViewGeometriesFile" });
export type TwoViewGeometriesFile = z.infer<typeof TwoViewGeometriesFile>;

/** What a map task seals (the runner's files; `x-point_descriptors.bin` our extension, for localization); tiles are the server's, generated from points.bin; dense files a dense stage's. */
export const SEALABLE_FILES = [
  "cameras.json",
  "images.json",
  "rigs.json",
  "frames.json",
  "pose_graph.json",
  "summary.json",
  "points.bin",
  "points_preview.bin",
  POINT_DESCRIPTORS_FILE,
] as const;

/** File names a snapshot may hold (4.9 rule 1). */
export const SNAPSHOT_FILES = [...SEALABLE_FILES, "tiles/index.json", "dense/index.json", "dense/fused.bin"] as const;
export type SnapshotFileName = (typeof SNAPSHOT_FILES)[number];

/** `pose_graph.json` (2.14, after pose-graph optimisation): nodes are image poses without points2D. */
export const PoseGraphFile = z
  .object({
    pose_graph: z.object({
      nodes: z.array(SnapshotImage.omit({ points2D: true })),
      edges: z.array(z.object({ image_id1: z.number().int(), image_id2: z.number().int(), cam2_from_cam1: Rigid3, weight: z.number() })),
    }),
  })
  .meta({ id: "PoseGraphFile" });

/** Files kept per reconstruction, not per snapshot (2.14): written by verification and by every match run. */
export const RECONSTRUCTION_FILES = ["two_view_geometries.json", "correspondence_graph.json"] as const;
export type ReconstructionFileName = (typeof RECONSTRUCTION_FILES)[number];

const BlobRef = { blob_sha: Sha256, byte_size: z.number().int().min(0) };
export const SealedFile = z.object({ name: z.enum(SEALABLE_FILES), ...BlobRef });
/** A model's counts (2.8 SubModel.summary); other members are kept as given. */
export const ModelSummary = z.looseObject({ num_reg_images: z.number().int().min(0), num_points3D: z.number().int().min(0) });

/**
 * The seal request of a map task (runner protocol, reference-only): the snapshot's files, already
 * uploaded as blobs under the lease, at the root (the largest model, or every model's union as the
 * runner chooses) and per disconnected component (2.8), with the summaries the SubModels and the
 * `snapshot_available` event carry.
 */
export const SnapshotSeal = z
  .object({
    files: z.array(SealedFile).max(SEALABLE_FILES.length),
    submodels: z
      .array(
        z.object({ idx: z.number().int().min(0).max(9999), files: z.array(SealedFile).max(SEALABLE_FILES.length), summary: ModelSummary }),
      )
      .max(1000)
      .default([]),
    summary: ModelSummary,
  })
  .meta({ id: "SnapshotSeal" });
export type SnapshotSeal = z.infer<typeof SnapshotSeal>;

export const SnapshotSealed = z
  .object({
    recon_id: z.string(),
    snapshot_seq: z.number().int().min(1),
    created: z.boolean().describe("false when the same lease already sealed exactly these files (a retried request)"),
    _links: z.record(z.string(), z.object({ href: z.string() })),
  })
  .meta({ id: "SnapshotSealed" });

export const ReconstructionFilePut = z.object(BlobRef).meta({ id: "ReconstructionFilePut" });

/** `tiles/index.json` (4.9 octree tiles). */
export const TileIndexFile = z
  .object({
    bbox_min: Vec3,
    bbox_max: Vec3,
    max_level: z.number().int().min(0),
    tile_count: z.number().int().min(0),
    tiles: z.array(
      z.object({
        level: z.number().int(),
        x: z.number().int(),
        y: z.number().int(),
        z: z.number().int(),
        count: z.number().int(),
        byte_size: z.number().int(),
      }),
    ),
  })
  .meta({ id: "TileIndexFile" });
export type TileIndexFile = z.infer<typeof TileIndexFile>;

export const ImageObservations = z
  .object({
    image_id: z.number().int(),
    count: z.number().int(),
    observations: z.array(
      z.object({ point3d_id: z.number().int(), x: z.number(), y: z.number(), kp_idx: z.number().int(), error: z.number().nullable() }),
    ),
  })
  .meta({ id: "ImageObservations" });
export const PointVisibility = z
  .object({
    point3d_id: z.number().int(),
    count: z.number().int(),
    observations: z.array(
      z.object({ image_id: z.union([z.number().int(), z.string()]), x: z.number(), y: z.number(), kp_idx: z.number().int() }),
    ),
  })
  .meta({ id: "PointVisibility" });

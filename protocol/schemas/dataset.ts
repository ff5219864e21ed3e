/** @module ImageSource and Dataset resources (spec 2.3, 2.4, 4.4). */
import { z } from "zod";
import { CAMERA_MODEL_NAMES } from "../camera-models";
import { Id, Links, Sha256, Timestamp } from "./common";

/**
 * A name inside a dataset: a relative path without traversal (`..`), leading `/`, backslashes or
 * control characters (which would also make the manifest's `name<TAB>sha<LF>` lines ambiguous).
 */
// eslint-disable-next-line no-control-regex -- control characters are what an image name must not hold
const BACKSLASH_OR_CONTROL = /[\\\u0000-\u001f\u007f]/;

export const ImageName = z
  .string()
  .min(1)
  .max(1024)
  .refine((s) => !s.startsWith("/") && !BACKSLASH_OR_CONTROL.test(s) && !s.split("/").some((p) => p === ".." || p === "." || p === ""), {
    message: "must be a relative path without '.', '..' or empty segments, backslashes or control characters",
  });

export const ImageSource = z
  .discriminatedUnion(
    "kind",
    [
      z.object({
        kind: z.literal("upload"),
        entries: z
          .array(z.object({ name: ImageName, blob_sha: Sha256 }))
          .max(100_000)
          .default([]),
      }),
      z.object({ kind: z.literal("local"), root: z.string().min(1).max(4096), recursive: z.boolean().default(false) }),
      z.object({ kind: z.literal("s3"), bucket: z.string().min(3).max(63), prefix: z.string().max(1024).default("") }),
    ],
    {
      error: (issue) =>
        issue.input === undefined ? "required: where the images come from ({kind: 'upload', entries: []} for uploaded photos)" : undefined,
    },
  )
  .meta({ id: "ImageSource" });
export type ImageSource = z.infer<typeof ImageSource>;

export const CameraModelName = z.enum(CAMERA_MODEL_NAMES);
export const IntrinsicsMode = z.enum(["single_camera", "per_image", "per_folder"]);

const DatasetName = z.string().trim().min(1).max(256);

export const Dataset = z
  .object({
    dataset_id: Id,
    tenant_id: z.string(),
    project_id: Id,
    source_id: Id,
    source: ImageSource,
    name: z.string(),
    camera_model: CameraModelName,
    intrinsics_mode: IntrinsicsMode,
    is_spherical: z.boolean(),
    respect_exif_orientation: z.boolean(),
    rig_config_json: z.record(z.string(), z.unknown()).nullable(),
    active_maskset_id: z.string().nullable(),
    manifest_hash: Sha256,
    created_at: Timestamp,
    _links: Links,
  })
  .meta({ id: "Dataset" });
export type Dataset = z.infer<typeof Dataset>;

export const DatasetCreate = z
  .object({
    name: DatasetName,
    /** Required: there is no sensible default for where a dataset's images come from. */
    source: ImageSource,
    camera_model: CameraModelName.default("SIMPLE_RADIAL"),
    intrinsics_mode: IntrinsicsMode.default("single_camera"),
    is_spherical: z.boolean().default(false),
    rig_config: z.record(z.string(), z.unknown()).nullable().default(null),
    respect_exif_orientation: z.boolean().default(true),
  })
  .meta({ id: "DatasetCreate" });
export type DatasetCreate = z.infer<typeof DatasetCreate>;

/** The source is immutable (2.3): to change it, create a new dataset. */
export const DatasetPatch = z
  .object({
    name: DatasetName.optional(),
    camera_model: CameraModelName.optional(),
    intrinsics_mode: IntrinsicsMode.optional(),
    is_spherical: z.boolean().optional(),
    rig_config: z.record(z.string(), z.unknown()).nullable().optional(),
    respect_exif_orientation: z.boolean().optional(),
    active_maskset_id: z.string().max(128).nullable().optional(),
  })
  .meta({ id: "DatasetPatch" });
export type DatasetPatch = z.infer<typeof DatasetPatch>;

/**
 * What a task that registers a dataset sends through its lease (our runner-protocol extension:
 * projections 4.14 rule 4, frames from video and Kapture imports 4.2): the dataset's settings and
 * its images, each a blob uploaded under the job. The service names it from the task's params.
 */
export const DerivedDatasetRegister = DatasetCreate.omit({ name: true, source: true })
  .extend({
    images: z
      .array(z.object({ name: ImageName, blob_sha: Sha256 }))
      .min(1)
      .max(100_000),
  })
  .meta({ id: "DerivedDatasetRegister" });
export type DerivedDatasetRegister = z.infer<typeof DerivedDatasetRegister>;

export const DerivedDatasetRegistered = z
  .object({
    dataset: Dataset,
    reused: z.boolean().describe("true when this task had registered it already (a retry reuses it, 4.14 rule 4)"),
  })
  .meta({ id: "DerivedDatasetRegistered" });

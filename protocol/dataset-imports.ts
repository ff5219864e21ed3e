/**
 * @module Datasets made from a file the caller uploaded (spec 4.2): frames of a video
 * (`:from_video`) and a Kapture archive (`:import_kapture`). The Worker has no local files, so
 * the spec's `video_path` and `archive_path` name a finalized upload as `blob:<sha256>`.
 */
import { z } from "zod";
import { DerivedDataset } from "./projection";

const BLOB_PATH = /^blob:([0-9a-f]{64})$/;

/** `blob:<sha256>`: the `blob_sha` of a finalized upload of the caller's tenant (4.3). */
export const BlobPath = z
  .string()
  .regex(
    BLOB_PATH,
    "must name a finalized upload as 'blob:<sha256>' (its blob_sha, 64 lower-case hex characters): this service has no local files",
  )
  .meta({ description: "`blob:<sha256>`: the `blob_sha` of a finalized upload (4.3); the service has no local file system" });

/** The sha a checked BlobPath names. */
export const blobPathSha = (path: string) => BLOB_PATH.exec(path)![1]!;

export const KaptureImportRequest = z
  .object({ archive_path: BlobPath.describe("the uploaded Kapture archive (an uncompressed tar or a zip), as `blob:<sha256>`") })
  .meta({ id: "KaptureImportRequest" });
export type KaptureImportRequest = z.infer<typeof KaptureImportRequest>;

export const KaptureSensor = z.object({
  sensor_id: z.string(),
  name: z.string(),
  model: z.string().describe("the COLMAP camera model"),
  width: z.number().int(),
  height: z.number().int(),
  params: z.array(z.number()).describe("the model's parameters, as COLMAP orders them"),
  num_records: z.number().int(),
});

/** The task result of `:import_kapture` (4.2), plus the dataset it created (`x-derived_dataset`). */
export const KaptureImportResult = z
  .object({
    sensors: z.array(KaptureSensor).describe("the camera sensors of sensors/sensors.txt that the records use"),
    records: z.number().int().describe("the camera records imported, one image each"),
    image_root: z.string().describe("where the images lay in the archive (`<root>sensors/records_data`)"),
    "x-num_pose_priors": z.number().int().describe("images given a pose prior from trajectories.txt (and rigs.txt)"),
    "x-derived_dataset": DerivedDataset,
    "x-rig_config_skipped": z
      .array(z.string())
      .describe(
        "rigs (rigs.txt) and cameras left out of the dataset's rig_config: their images share a folder with another camera's, which a rig config (image prefixes) cannot tell apart",
      ),
  })
  .meta({ id: "KaptureImportResult" });
export type KaptureImportResult = z.infer<typeof KaptureImportResult>;

/** Frames sampled per second of video unless the request says otherwise. */
export const DEFAULT_VIDEO_FPS = 2;
export const DEFAULT_MAX_FRAMES = 300;
/** One job registers at most this many frames (one dataset registration). */
export const MAX_VIDEO_FRAMES = 5000;

export const VideoFramesRequest = z
  .object({
    video_path: BlobPath.describe(
      "the uploaded video (MP4 with H.264, HEVC, VP9 or AV1, as the runner's WebCodecs decodes), as `blob:<sha256>`",
    ),
    fps: z.number().positive().max(120).default(DEFAULT_VIDEO_FPS).describe("frames sampled per second of video"),
    max_frames: z.number().int().positive().max(MAX_VIDEO_FRAMES).default(DEFAULT_MAX_FRAMES),
    "x-skip_blurred": z
      .boolean()
      .default(false)
      .describe(
        "our extension: a sampled frame much blurrier than the frames kept before it (variance of the Laplacian) gives way to the next frame",
      ),
  })
  .meta({ id: "VideoFramesRequest" });
export type VideoFramesRequest = z.infer<typeof VideoFramesRequest>;

/** The params of a `frame_extract` task (extension kind): the request, the video's blob and the dataset to register. */
export type VideoFramesTaskParams = {
  frame_extract: { video_sha: string; fps: number; max_frames: number; skip_blurred: boolean };
  derived_dataset: { name: string };
};

/** The task result of `:from_video` (4.2), plus the dataset it registered. */
export const VideoFramesResult = z
  .object({
    output_dir: z.string().describe("the folder of the frames in the dataset (`frames`): frames/frame_000001.jpg, ..."),
    num_frames: z.number().int(),
    fps: z.number().describe("the sampling rate used"),
    "x-skipped_blurred": z.number().int().describe("sampled frames skipped as blurred"),
    "x-derived_dataset": DerivedDataset,
  })
  .meta({ id: "VideoFramesResult" });
export type VideoFramesResult = z.infer<typeof VideoFramesResult>;

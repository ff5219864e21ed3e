/**
 * @module Datasets made from an uploaded file (spec 4.2): `:import_kapture` (services/kapture-import.ts)
 * and `:from_video` (services/video-frames.ts).
 */
import { z } from "@hono/zod-openapi";
import { Id, JobAccepted, KaptureImportRequest, KaptureImportResult, VideoFramesRequest, VideoFramesResult } from "../../protocol";
import { problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { importKapture } from "../services/kapture-import";
import { submitVideoFrames } from "../services/video-frames";

export const datasetImports = newRouter();

/** The request and answers of a route of this file: a body of `body` on a project; 202 with a job whose task's result is `result`. */
function shapes<B extends z.ZodType>(body: B, result: { name: string; keys: string[] }, done: string) {
  return {
    request: { params: z.object({ pid: Id }), body: { content: { "application/json": { schema: body } }, required: true } },
    responses: {
      202: {
        content: { "application/json": { schema: JobAccepted } },
        description: `${done}: the task's result is ${result.name} (${result.keys.join(", ")})`,
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 422, 501),
    },
  };
}

datasetImports.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/projects/{pid}/datasets:import_kapture",
    tags: ["datasets"],
    summary: "A Kapture archive imported as a dataset",
    description: [
      "`archive_path` names an uploaded Kapture archive as `blob:<sha256>` (the blob_sha of a finalized upload; this service has no local files):",
      "an uncompressed tar or a zip holding a kapture 1.1 tree (sensors/sensors.txt, sensors/records_camera.txt, optionally sensors/trajectories.txt",
      "and sensors/rigs.txt, the images under sensors/records_data/) at its top or under one folder. Each camera record becomes an image of a new",
      "dataset of the project (named after that folder, or `kapture-<sha prefix>`); the cameras' COLMAP model sets the dataset's `camera_model`",
      "(one camera: `single_camera`; one per folder: `per_folder`; else `per_image`); each record with a pose in trajectories.txt (of its camera,",
      "or of a rig holding it) gets it as its pose prior (4.12, with the record's timestamp). The rigs and every camera's model and params become",
      "the dataset's `rig_config` (COLMAP's rig config, cameras named by their images' folder), kept there: the mapper does not read them",
      "yet (it estimates every camera). Everything is checked first: a malformed archive or",
      "listing is a 422 naming each file and line, and nothing is imported. The job answered is born succeeded; its task's result is",
      "KaptureImportResult (`{sensors, records, image_root}` and `x-derived_dataset`). Capability `import.kapture`.",
    ].join("\n"),
    ...shapes(KaptureImportRequest, { name: "KaptureImportResult", keys: Object.keys(KaptureImportResult.shape) }, "accepted, done"),
  }),
  async (c) => {
    const accepted = await importKapture(c.env, c.var.tenantId, c.req.valid("param").pid, c.req.valid("json"));
    return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
  },
);

datasetImports.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/projects/{pid}/datasets:from_video",
    tags: ["datasets"],
    summary: "Frames of a video as a dataset",
    description: [
      "`video_path` names an uploaded video as `blob:<sha256>` (the blob_sha of a finalized upload; this service has no local files): an MP4",
      "whose video track the runner's WebCodecs decodes (Debian's Chromium, which `npm start` runs, decodes H.264 and VP9 but not HEVC; a codec",
      "the runner cannot decode fails the job with a message naming it). Frame times follow the track's edit list, as players show them.",
      "A job of one `frame_extract` task, computed by a browser runner (WebCodecs); the Node runner has no video decoder and is never leased it.",
      "Frames are sampled every 1/`fps` seconds of presentation time (default 2), at most `max_frames` (default 300), encoded as JPEG and registered",
      "as a new dataset of the project (`frames/frame_000001.jpg`, ...; named `video-<sha prefix>`); with `x-skip_blurred` a frame much blurrier",
      "than those kept before it gives way to the next. The task's result is VideoFramesResult (`{output_dir, num_frames, fps}` and",
      "`x-derived_dataset`). 422 when the blob is unknown or not an MP4. Capability `video.frame_extract`.",
    ].join("\n"),
    ...shapes(VideoFramesRequest, { name: "VideoFramesResult", keys: Object.keys(VideoFramesResult.shape) }, "accepted"),
  }),
  async (c) => {
    const accepted = await submitVideoFrames(c.env, c.var.tenantId, c.req.valid("param").pid, c.req.valid("json"));
    return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
  },
);

/**
 * @module `POST /v1/projects/{pid}/datasets:from_video` (spec 4.2, capability `video.frame_extract`):
 * the uploaded video (`video_path` = `blob:<sha256>`) becomes a job of one `frame_extract` task
 * (an extension kind) that a runner with WebCodecs computes (browser-runtime/runner/executors/
 * frame-extract.ts; the Node runner has no video decoder, so it never registers for the kind and is
 * never leased one). The runner registers the sampled frames as a derived dataset through its lease
 * (services/derived-datasets.ts), named `video-<sha prefix>` (`-<task_id>` when taken).
 * Checked first: the project (404), the blob (422) and that it is an MP4 (ISO BMFF `ftyp`, 422).
 */
import type { JobAccepted, VideoFramesRequest, VideoFramesTaskParams } from "../../protocol";
import { notFound, validation } from "../errors";
import { blobAtPath } from "./blob-paths";
import { requireCapability } from "./capabilities";
import { submitJob } from "./jobs";
import { tenantStore } from "./stores";

export async function submitVideoFrames(env: Env, tenantId: string, projectId: string, body: VideoFramesRequest): Promise<JobAccepted> {
  requireCapability(env, "video.frame_extract");
  if (!(await tenantStore(env, tenantId).getProject(projectId))) throw notFound("project");
  const blob = await blobAtPath(env, tenantId, body.video_path, "video_path");
  const head = await env.BLOBS.get(blob.r2_key, { range: { offset: 0, length: Math.min(12, blob.size) } });
  const box = head ? new TextDecoder().decode((await head.arrayBuffer()).slice(4, 8)) : "";
  if (box !== "ftyp")
    throw validation("video_path is not an MP4 video", [
      { path: "video_path", message: "the blob is not an MP4 (ISO base media) file: no 'ftyp' box at its start", code: "not_a_video" },
    ]);
  const params: VideoFramesTaskParams = {
    frame_extract: { video_sha: blob.sha, fps: body.fps, max_frames: body.max_frames, skip_blurred: body["x-skip_blurred"] },
    derived_dataset: { name: `video-${blob.sha.slice(0, 12)}` },
  };
  return submitJob(env, {
    tenantId,
    projectId,
    dataset: null,
    recipe: "from_video",
    // The task registers a dataset: this job's own, never another job's cached result (3.2.1).
    stages: [{ kind: "frame_extract", params, own_outputs: true }],
    input_artifacts: {},
    input_blobs: [{ blob_sha: blob.sha, byte_size: blob.size }],
    recon: null,
  });
}

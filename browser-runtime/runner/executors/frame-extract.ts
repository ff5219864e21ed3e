/**
 * @module Executor of `frame_extract` tasks (`POST /v1/projects/{pid}/datasets:from_video`, spec
 * 4.2): reads the video blob, samples its frames at `fps` up to `max_frames` (optionally skipping
 * blurred ones: stages/video-frames.ts) as the host's WebCodecs decoder delivers them, uploads each
 * as a JPEG under the lease, registers them as the derived dataset (a retry reuses it) and
 * completes with `{output_dir, num_frames, fps}`.
 */
import type { DerivedDataset, TaskOutputs, VideoFramesResult, VideoFramesTaskParams } from "../../../protocol";
import { FrameSampler, frameName } from "../../stages/video-frames";
import type { TaskContext } from "../task-context";

const JPEG_QUALITY = 92;

export async function frameExtract(ctx: TaskContext): Promise<TaskOutputs> {
  const { frame_extract: p } = ctx.params as VideoFramesTaskParams;
  const video = await ctx.read(p.video_sha);
  const sampler = new FrameSampler(p);
  const images: { name: string; blob_sha: string }[] = [];
  let expected: number | null = null;
  const info = await ctx.videoFrames(
    video,
    (t) => sampler.wants(t),
    async (frame, t) => {
      if (sampler.offer(frame, t)) {
        const name = frameName(images.length + 1);
        const file = await ctx.write(name, await ctx.encode(frame, "jpeg", JPEG_QUALITY), "image/jpeg");
        images.push({ name, blob_sha: file.blob_sha });
        ctx.progress(images.length, expected);
      }
      await ctx.cancelPoint();
      return !sampler.full;
    },
    (facts) => (expected = Math.min(p.max_frames, Math.max(1, Math.ceil(facts.duration_seconds * p.fps)))),
  );
  if (images.length === 0)
    throw new Error(`no frame could be sampled from the video (${info.codec}, ${info.duration_seconds.toFixed(2)} s)`);
  ctx.log(
    "INFO",
    `${images.length} frames of a ${info.duration_seconds.toFixed(1)} s ${info.codec} video (${info.width}x${info.height}) at ${p.fps} fps` +
      (p.skip_blurred ? `, ${sampler.skippedBlurred} skipped as blurred` : ""),
  );
  const registered = await ctx.registerDataset({
    camera_model: "SIMPLE_RADIAL",
    intrinsics_mode: "single_camera",
    is_spherical: false,
    rig_config: null,
    respect_exif_orientation: false,
    images,
  });
  const derived: DerivedDataset = {
    dataset_id: registered.dataset.dataset_id,
    project_id: registered.dataset.project_id,
    name: registered.dataset.name,
    reused: registered.reused,
  };
  const result: VideoFramesResult = {
    output_dir: "frames",
    num_frames: images.length,
    fps: p.fps,
    "x-skipped_blurred": sampler.skippedBlurred,
    "x-derived_dataset": derived,
  };
  return { artifacts: [], result };
}

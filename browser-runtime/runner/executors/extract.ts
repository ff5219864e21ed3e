/**
 * @module Executor of `extract` tasks (spec 2.12 FeaturesSpec): every image of the dataset
 * snapshot -> SIFT -> one `features.local.v1` artifact holding a file per image.
 */
import { type TaskOutputs, FeaturesSpec } from "../../../protocol";
import { FEATURES_MEDIA_TYPE } from "../../../protocol/wire/features";
import { extractFeatures } from "../../stages/extract";
import type { OutputFile, TaskContext } from "../task-context";
import { coreArtifact, featuresPath } from "./artifact";

export async function extract(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = FeaturesSpec.parse(ctx.params.features ?? {});
  const { dataset } = ctx.lease.inputs;
  const engine = await ctx.engine();
  const files: OutputFile[] = [];
  let keypoints = 0;
  ctx.progress(0, dataset.images.length);
  for (const [i, image] of dataset.images.entries()) {
    await ctx.cancelPoint();
    const bytes = await ctx.read(image.content_sha);
    const decoded = await ctx.decode(bytes, { respectExifOrientation: dataset.respect_exif_orientation });
    const result = extractFeatures(engine, decoded, { spec });
    keypoints += result.features.keypoints.length / 4;
    files.push(await ctx.write(featuresPath(image.name), result.bytes, FEATURES_MEDIA_TYPE));
    ctx.progress(i + 1, dataset.images.length);
  }
  ctx.metric("num_keypoints", keypoints);
  return {
    artifacts: [
      coreArtifact("features.local.v1", "SIFT features", files, {
        num_images: files.length,
        num_keypoints: keypoints,
        mean_keypoints_per_image: files.length ? Math.round(keypoints / files.length) : 0,
      }),
    ],
    result: null,
  };
}

/**
 * @module Executor of `extract` tasks (spec 2.12 FeaturesSpec): every image of the dataset
 * snapshot -> SIFT (WGSL or WASM, whichever the runner measured faster on its device) -> one
 * `features.local.v1` artifact holding a file per image.
 */
import { type TaskOutputs, FeaturesSpec } from "../../../protocol";
import { FEATURES_MEDIA_TYPE } from "../../../protocol/wire/features";
import { siftArtifact, siftOptionsFromSpec, toGray8 } from "../../stages/extract";
import type { OutputFile, TaskContext } from "../task-context";
import { coreArtifact, datasetOf, featuresPath } from "./artifact";

export async function extract(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = FeaturesSpec.parse(ctx.params.features ?? {});
  const dataset = datasetOf(ctx.lease);
  const sift = await ctx.sift();
  const options = siftOptionsFromSpec(spec);
  const files: OutputFile[] = [];
  let keypoints = 0;
  ctx.progress(0, dataset.images.length);
  for (const [i, image] of dataset.images.entries()) {
    await ctx.cancelPoint();
    const bytes = await ctx.read(image.content_sha);
    const decoded = await ctx.decode(bytes, { respectExifOrientation: dataset.respect_exif_orientation });
    const features = await sift.extract(toGray8(decoded), decoded.width, decoded.height, options);
    const result = siftArtifact(decoded, options, features);
    keypoints += result.features.keypoints.length / 4;
    files.push(await ctx.write(featuresPath(image.name), result.bytes, FEATURES_MEDIA_TYPE));
    ctx.progress(i + 1, dataset.images.length);
  }
  ctx.metric("num_keypoints", keypoints);
  ctx.log("INFO", `SIFT on ${sift.features === "webgpu" ? `WebGPU (${sift.adapter})` : "WASM"}`);
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

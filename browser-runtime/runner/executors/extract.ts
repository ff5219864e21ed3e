/**
 * @module Executor of `extract` tasks (spec 2.12 FeaturesSpec): every image of the dataset
 * snapshot -> SIFT (WGSL or WASM, whichever the runner measured faster on its device) -> one
 * `features.local.v1` artifact holding a file per image. On WASM the images are computed on the
 * runner's engine pool, as many at once as its cores and memory allow (items.ts); each image is
 * read, decoded and written by this thread meanwhile.
 */
import { type TaskOutputs, FeaturesSpec } from "../../../protocol";
import { FEATURES_MEDIA_TYPE } from "../../../protocol/wire/features";
import { siftArtifact, siftOptionsFromSpec, siftPeakBytes, toGray8 } from "../../stages/extract";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf, featuresPath } from "./artifact";
import { eachItem } from "./items";

export async function extract(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = FeaturesSpec.parse(ctx.params.features ?? {});
  const dataset = datasetOf(ctx.lease);
  const sift = await ctx.sift();
  const options = siftOptionsFromSpec(spec);
  const peak = Math.max(0, ...dataset.images.map((im) => siftPeakBytes(im.width, im.height, options)));
  const lanes = sift.features === "wasm" ? ctx.engines.lanes(peak) : 1;
  const extracted = await eachItem(ctx, dataset.images, { lanes }, async (image) => {
    const bytes = await ctx.read(image.content_sha);
    const decoded = await ctx.decode(bytes, { respectExifOrientation: dataset.respect_exif_orientation });
    const features = await sift.extract(toGray8(decoded), decoded.width, decoded.height, options);
    const result = siftArtifact(decoded, options, features);
    return { file: await ctx.write(featuresPath(image.name), result.bytes, FEATURES_MEDIA_TYPE), keypoints: result.features.keypoints.length / 4 };
  });
  const files = extracted.map((e) => e.file);
  const keypoints = extracted.reduce((sum, e) => sum + e.keypoints, 0);
  ctx.metric("num_keypoints", keypoints);
  ctx.log("INFO", `SIFT on ${sift.features === "webgpu" ? `WebGPU (${sift.adapter})` : `WASM, ${lanes} engine${lanes > 1 ? "s" : ""} at once`}`);
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

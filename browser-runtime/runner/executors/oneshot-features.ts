/**
 * @module Executor of `oneshot_features` tasks (spec 4.15 `POST /v1/oneshot/features`): the image
 * of the request (a blob of its one-shot job) decoded and its SIFT features extracted with the
 * extract stage's defaults, on this runner's faster path; the features go back as one
 * `features.local.v1` file, which the service answers the request with and then deletes.
 */
import { type OneshotFeaturesTaskParams, type TaskOutputs } from "../../../protocol";
import { FEATURES_MEDIA_TYPE } from "../../../protocol/wire/features";
import { siftArtifact, siftOptionsFromSpec, toGray8 } from "../../stages/extract";
import type { TaskContext } from "../task-context";
import { coreArtifact, featuresPath } from "./artifact";

export async function oneshotFeatures(ctx: TaskContext): Promise<TaskOutputs> {
  const { oneshot_features: params } = ctx.params as OneshotFeaturesTaskParams;
  const decoded = await ctx.decode(await ctx.read(params.query.blob_sha), { respectExifOrientation: true });
  const options = siftOptionsFromSpec({});
  const sift = await ctx.sift();
  const features = await sift.extract(toGray8(decoded), decoded.width, decoded.height, options);
  const result = siftArtifact(decoded, options, features);
  const file = await ctx.write(featuresPath("query"), result.bytes, FEATURES_MEDIA_TYPE);
  const numKeypoints = features.keypoints.length / 4;
  ctx.metric("num_keypoints", numKeypoints);
  return {
    artifacts: [coreArtifact("features.local.v1", "one-shot SIFT features", [file], { num_images: 1, num_keypoints: numKeypoints })],
    result: { width: decoded.width, height: decoded.height, num_keypoints: numKeypoints },
  };
}

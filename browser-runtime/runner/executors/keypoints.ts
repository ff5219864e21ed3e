/** @module Reading the features of a task's dataset images: keypoint positions and image sizes. */
import { decodeFeatures } from "../../../protocol/wire/features";
import type { TaskContext } from "../task-context";
import { datasetOf, featuresPath, inputFiles } from "./artifact";

export interface ImageKeypoints {
  /** x, y per keypoint (pixels, COLMAP convention). */
  xy: Float64Array;
  width: number;
  height: number;
}

/** Keypoints of every dataset image, in dataset order, from the `features` input (an input artifact or the upstream `extract` task). */
export async function datasetKeypoints(ctx: TaskContext): Promise<ImageKeypoints[]> {
  const keypoints = await imageKeypoints(
    ctx,
    datasetOf(ctx.lease).images.map((im) => im.name),
  );
  return datasetOf(ctx.lease).images.map((im) => keypoints.get(im.name)!);
}

/** Keypoints of the named images, by name. */
export async function imageKeypoints(ctx: TaskContext, names: Iterable<string>): Promise<Map<string, ImageKeypoints>> {
  const files = inputFiles(ctx.lease, "features");
  const out = new Map<string, ImageKeypoints>();
  for (const name of names) {
    const file = files.get(featuresPath(name));
    if (!file) throw new Error(`no features for image '${name}' in the features input`);
    const f = decodeFeatures(await ctx.read(file.blob_sha));
    const n = f.keypoints.length / 4;
    const xy = new Float64Array(2 * n);
    for (let k = 0; k < n; k++) {
      xy[2 * k] = f.keypoints[4 * k]!;
      xy[2 * k + 1] = f.keypoints[4 * k + 1]!;
    }
    out.set(name, { xy, width: f.imageWidth, height: f.imageHeight });
  }
  return out;
}

/** @module Reading the features of a task's dataset: keypoint positions and image sizes. */
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
  const files = inputFiles(ctx.lease, "features");
  const out: ImageKeypoints[] = [];
  for (const image of datasetOf(ctx.lease).images) {
    const file = files.get(featuresPath(image.name));
    if (!file) throw new Error(`no features for image '${image.name}' in the features input`);
    const f = decodeFeatures(await ctx.read(file.blob_sha));
    const n = f.keypoints.length / 4;
    const xy = new Float64Array(2 * n);
    for (let k = 0; k < n; k++) {
      xy[2 * k] = f.keypoints[4 * k]!;
      xy[2 * k + 1] = f.keypoints[4 * k + 1]!;
    }
    out.push({ xy, width: f.imageWidth, height: f.imageHeight });
  }
  return out;
}

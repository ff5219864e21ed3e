/**
 * @module A snapshot's per-point descriptors on a runner (4.13 localize): computed from the
 * features the mapper read when a map task seals a snapshot (`x-point_descriptors.bin` beside its
 * points.bin), and read back by localization, which computes them from the features only for a
 * snapshot sealed without them.
 */
import type { ImagesFile } from "../../../protocol";
import { decodeFeatures } from "../../../protocol/wire/features";
import { POINT_DESCRIPTORS_FILE, POINT_DESCRIPTORS_MEDIA_TYPE, encodePointDescriptors } from "../../../protocol/wire/point-descriptors";
import type { PointCloud } from "../../../protocol/wire/points";
import { type PointIndex, pointDescriptorsOf, pointIndex } from "../../stages/localize";
import type { OutputFile, TaskContext } from "../task-context";
import { featuresPath } from "./artifact";

/** The point index of a model from the features of its images (`features`: the features artifact's files by path). */
export function pointIndexFromFeatures(
  ctx: TaskContext,
  images: ImagesFile,
  points: Pick<PointCloud, "xyz" | "ids">,
  features: ReadonlyMap<string, { blob_sha: string }>,
): Promise<PointIndex> {
  return pointIndex(images, points, async (name) => {
    const f = features.get(featuresPath(name));
    return f ? decodeFeatures(await ctx.read(f.blob_sha)) : null;
  });
}

/** `x-point_descriptors.bin` of a model about to be sealed, written under the task. */
export async function pointDescriptorsFile(
  ctx: TaskContext,
  images: ImagesFile,
  points: Pick<PointCloud, "xyz" | "ids">,
  features: ReadonlyMap<string, { blob_sha: string }>,
): Promise<OutputFile> {
  const index = await pointIndexFromFeatures(ctx, images, points, features);
  return ctx.write(POINT_DESCRIPTORS_FILE, encodePointDescriptors(pointDescriptorsOf(index)), POINT_DESCRIPTORS_MEDIA_TYPE);
}

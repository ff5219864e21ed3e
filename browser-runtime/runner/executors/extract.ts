/**
 * @module Executor of `extract` shards (spec 2.12 FeaturesSpec): each image of the shard -> SIFT
 * (WGSL or WASM, whichever the runner measured faster on its device, or the provider the task is
 * routed to, spec 4.16) -> a `features.local.v1`
 * artifact with the image's one file; the service assembles the task's one artifact from them.
 * On WASM the images are computed on the runner's engine pool, as many at once as its cores and
 * memory allow (items.ts); each image is read, decoded and written by this thread meanwhile.
 * A lane waits on neither the service nor the decoder: the next images are read and decoded while
 * it computes (`lanes + 1` ahead: with one lane the engine runs in this thread, so the bytes of the
 * image after next are asked for before it computes and decoded on the decoder's threads while it
 * does), and each image's features are uploaded while the next one computes (issue 17: a lane idled
 * 6-15% of a stage on these round trips, `npm run bench -- scale --cpu`).
 */
import { type TaskOutputs, FeaturesSpec } from "../../../protocol";
import { FEATURES_MEDIA_TYPE } from "../../../protocol/wire/features";
import { siftArtifact, siftOptionsFromSpec, siftPeakBytes, toGray8 } from "../../stages/extract";
import { packRgba } from "../../../engine-wasm/ts/projection";
import { projectorFor } from "../../gpu/projection-gpu";
import { siftFor, stagesFor } from "../../gpu/select";
import { panoramaSift } from "../../stages/panorama-features";
import type { OutputFile, TaskContext } from "../task-context";
import { coreArtifact, datasetOf } from "./artifact";
import { shardOf } from "./shard";
import { Ahead, eachItem, quiet, yieldToIo } from "./items";

export async function extract(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = FeaturesSpec.parse(ctx.params.features ?? {});
  // The spherical pipeline (2.12 `panorama: true`) finds a panorama's features on its cubemap faces.
  const cubemap = (ctx.params.cubemap as { face_size: number } | undefined) ?? null;
  const dataset = datasetOf(ctx.lease);
  const byName = new Map(dataset.images.map((im) => [im.name, im]));
  const items = shardOf(ctx.lease).items;
  const images = items.map((it) => {
    const image = byName.get(it.images[0]!);
    if (!image) throw new Error(`the shard names an image outside the dataset: ${it.images[0]}`);
    return image;
  });
  // use_gpu: false (2.12) keeps the task on the WASM path, whatever this device's calibration chose.
  const sift = siftFor(stagesFor(await ctx.sift(), spec.use_gpu), spec.provider);
  const projector = cubemap ? projectorFor(await ctx.projector(), spec.use_gpu) : null;
  const options = siftOptionsFromSpec(spec);
  const peak = Math.max(
    0,
    ...images.map((im) =>
      cubemap ? siftPeakBytes(cubemap.face_size, cubemap.face_size, options) : siftPeakBytes(im.width, im.height, options),
    ),
  );
  const lanes = sift.features === "wasm" ? ctx.engines.lanes(peak) : 1;
  const ahead = new Ahead(lanes + 1, images.length, async (i) =>
    ctx.decode(await ctx.read(images[i]!.content_sha), { respectExifOrientation: dataset.respect_exif_orientation }),
  );
  const uploads: Promise<OutputFile>[] = [];
  let files: OutputFile[];
  let extracted: { keypoints: number }[];
  try {
    extracted = await eachItem(ctx, images, { lanes }, async (_image, i) => {
      const decoded = await ahead.take(i);
      // The reads just asked for go out before a computation in this thread holds it.
      await yieldToIo();
      const features =
        cubemap && projector
          ? await panoramaSift(
              packRgba(decoded.data, decoded.width, decoded.height, decoded.channels),
              cubemap.face_size,
              projector,
              sift.extract,
              options,
            )
          : await sift.extract(toGray8(decoded), decoded.width, decoded.height, options);
      const result = siftArtifact(decoded, options, features);
      uploads[i] = quiet(ctx.write(items[i]!.path, result.bytes, FEATURES_MEDIA_TYPE));
      return { keypoints: result.features.keypoints.length / 4 };
    });
    files = await Promise.all(uploads);
  } finally {
    // Nothing this task started outlives it: a failure or stop waits for the reads and uploads under way.
    await Promise.allSettled([...ahead.pending(), ...uploads]);
  }
  ctx.metric(
    "num_keypoints",
    extracted.reduce((sum, e) => sum + e.keypoints, 0),
  );
  ctx.log(
    "INFO",
    `SIFT of ${images.length} images on ${sift.features === "webgpu" ? `WebGPU (${sift.adapter})` : `WASM, ${lanes} engine${lanes > 1 ? "s" : ""} at once`}${cubemap ? `, on each panorama's six ${cubemap.face_size}-pixel cube faces` : ""}`,
  );
  return {
    artifacts: extracted.map((e, i) =>
      coreArtifact("features.local.v1", "SIFT features", [files[i]!], { num_images: 1, num_keypoints: e.keypoints }),
    ),
    result: null,
  };
}

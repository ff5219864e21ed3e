/**
 * @module Executor of `relocalize` tasks (spec 4.13 localize, 2.13): the query image (a blob the
 * job may read) is decoded and its SIFT features extracted on this runner's faster path, then
 * localized against the snapshot of the job's input artifact `snapshot`, whose points have their
 * descriptors in the snapshot's `x-point_descriptors.bin` (point-descriptors.ts); a snapshot
 * sealed without that file gets them from the `features` input the mapper read. The task's
 * `outputs_ref.result` is the LocalizationResult; a query that cannot be localized is a
 * succeeded task with `success: false` and the reason in its diagnostics.
 */
import { type LocalizationResult, type RelocalizeTaskParams, ImagesFile, type TaskOutputs } from "../../../protocol";
import { DescriptorKind } from "../../../protocol/wire/features";
import { POINT_DESCRIPTORS_FILE, decodePointDescriptors } from "../../../protocol/wire/point-descriptors";
import { decodePoints } from "../../../protocol/wire/points";
import { initialCamera } from "../../stages/cameras";
import { siftOptionsFromSpec, toGray8 } from "../../stages/extract";
import { indexFromDescriptors, localize } from "../../stages/localize";
import { type TaskContext, TaskValidationError } from "../task-context";
import { inputFiles } from "./artifact";
import { pointIndexFromFeatures } from "./point-descriptors";

/** The camera model of a query when the reconstruction's dataset names none a photo can have (spherical). */
const FALLBACK_MODEL = "SIMPLE_RADIAL";

export async function relocalize(ctx: TaskContext): Promise<TaskOutputs> {
  const { relocalize: params } = ctx.params as RelocalizeTaskParams;
  const snapshot = ctx.lease.inputs.artifacts.snapshot;
  if (!snapshot) throw new Error("the lease carries no 'snapshot' input");
  const dataset = ctx.lease.inputs.dataset;
  const text = new TextDecoder();
  const fileOf = (name: string) => snapshot.files.find((x) => x.path === name);
  const file = (name: string) => {
    const f = fileOf(name);
    if (!f) throw new TaskValidationError(`snapshot ${params.seq} has no ${name}`);
    return ctx.read(f.blob_sha);
  };
  const points = decodePoints(await file("points.bin"));
  const index = fileOf(POINT_DESCRIPTORS_FILE)
    ? indexFromDescriptors(decodePointDescriptors(await file(POINT_DESCRIPTORS_FILE)), points)
    : await pointIndexFromFeatures(
        ctx,
        ImagesFile.parse(JSON.parse(text.decode(await file("images.json")))),
        points,
        inputFiles(ctx.lease, "features"),
      );
  ctx.progress(1, 3);
  await ctx.cancelPoint();

  const decoded = await ctx.decode(await ctx.read(params.query.blob_sha), {
    respectExifOrientation: dataset?.respect_exif_orientation ?? true,
  });
  // The query's descriptors are normalised as the snapshot's were, so they compare.
  const options = siftOptionsFromSpec({
    max_num_features: params.sift.max_num_features,
    backend_options: {
      peak_threshold: params.sift.peak_threshold,
      edge_threshold: params.sift.edge_threshold,
      normalization: index.descriptorKind === DescriptorKind.siftL2 ? "L2" : "L1_ROOT",
    },
  });
  if (params.sift.first_octave !== undefined) options.firstOctave = params.sift.first_octave;
  const sift = await ctx.sift();
  const query = await sift.extract(toGray8(decoded), decoded.width, decoded.height, options);
  ctx.progress(2, 3);
  await ctx.cancelPoint();

  const model = dataset && !dataset.is_spherical ? dataset.camera_model : FALLBACK_MODEL;
  const camera = initialCamera(model, decoded.width, decoded.height, params.query.focal_length_35mm);
  const result: LocalizationResult = await localize(await ctx.engine(), {
    query,
    camera,
    index,
    match: (a, b, o) => sift.match(a, b, o),
    queryPath: `blobs/${params.query.blob_sha}`,
    sparseDir: `/v1/reconstructions/${params.recon_id}/snapshots/${params.seq}`,
  });
  if (index.skippedImages.length > 0) result.diagnostics.images_without_features = index.skippedImages.slice(0, 100);
  if (index.numSkippedImages > 0) result.diagnostics.num_images_without_features = index.numSkippedImages;
  result.diagnostics.point_descriptors = fileOf(POINT_DESCRIPTORS_FILE) ? "sealed" : "computed from the features";
  ctx.progress(3, 3);
  ctx.metric("num_inliers", result.num_inliers);
  ctx.log(
    result.success ? "INFO" : "WARNING",
    result.success
      ? `localized against snapshot ${params.seq}: ${result.num_inliers} inliers of ${String(result.diagnostics.num_matches)} matches to ${index.ids.length} points`
      : `not localized against snapshot ${params.seq}: ${String(result.diagnostics.reason)}`,
  );
  return { artifacts: [], result };
}

/**
 * @module Executor of `projection` tasks (spec 4.14): renders the dataset's images with the
 * projector this runner measured faster (WGSL or wasm), uploads each as it is made, registers the
 * derived dataset through the lease when the request asked for one (rule 4: a retry reuses it),
 * and completes with one `projection.images.v1` artifact (the images under `images/` and
 * `projection_manifest.json`) and the result `{output_path, num_files, manifest_path, derived_dataset}`.
 */
import type { DerivedDataset, ProjectionResult, ProjectionTaskParams, TaskOutputs } from "../../../protocol";
import { projectImages, projectionManifest } from "../../stages/projection";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf } from "./artifact";

const MANIFEST = "projection_manifest.json";

export async function projection(ctx: TaskContext): Promise<TaskOutputs> {
  const params = ctx.params as ProjectionTaskParams;
  const request = params.projection;
  const dataset = datasetOf(ctx.lease);
  const projector = await ctx.projector();
  const run = await projectImages(request, dataset, projector, {
    read: (sha) => ctx.read(sha),
    decode: (bytes) => ctx.decode(bytes, { respectExifOrientation: dataset.respect_exif_orientation }),
    encode: (image, format, quality) => ctx.encode(image, format, quality),
    write: (path, bytes, mediaType) => ctx.write(path, bytes, mediaType),
    progress: (current, total) => ctx.progress(current, total),
    cancelPoint: () => ctx.cancelPoint(),
  });
  ctx.log(
    "INFO",
    `${run.outputs.length} images by ${request.projection} (${request.sampling}) on ${projector.path === "webgpu" ? "WebGPU" : "WASM"}`,
  );
  await ctx.cancelPoint();
  let derived: DerivedDataset | null = null;
  if (params.derived_dataset) {
    const registered = await ctx.registerDataset({
      ...run.dataset,
      images: run.outputs.map((o) => ({ name: o.name, blob_sha: o.blob_sha })),
    });
    derived = {
      dataset_id: registered.dataset.dataset_id,
      project_id: registered.dataset.project_id,
      name: registered.dataset.name,
      reused: registered.reused,
    };
    if (registered.reused) ctx.log("INFO", `reused dataset ${derived.dataset_id}, which an earlier attempt of this task registered`);
  }
  const manifest = projectionManifest(request, dataset, run, derived);
  const manifestFile = await ctx.write(MANIFEST, new TextEncoder().encode(JSON.stringify(manifest, null, 1)), "application/json");
  const files = [
    ...run.outputs.map((o) => ({
      path: `images/${o.name}`,
      blob_sha: o.blob_sha,
      byte_size: o.byte_size,
      media_type: request.output.format === "png" ? "image/png" : "image/jpeg",
    })),
    manifestFile,
  ];
  const result: ProjectionResult = {
    output_path: "images",
    num_files: run.outputs.length,
    manifest_path: MANIFEST,
    derived_dataset: derived,
  };
  return {
    artifacts: [
      coreArtifact("projection.images.v1", request.projection, files, {
        num_images: run.outputs.length,
        num_sources: dataset.images.length,
        projection: request.projection,
        sampling: request.sampling,
        path: projector.path,
      }),
    ],
    result,
  };
}

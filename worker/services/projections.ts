/**
 * @module Projection jobs on datasets (spec 4.14): a request is checked before anything is
 * created (the capability, 501; the dataset's images and kind, 422) and becomes a job with one
 * `projection` task (an extension task kind, 9.2) that a runner computes: it renders the images
 * with the WGSL kernels or their wasm twin, uploads them with `projection_manifest.json` as one
 * `projection.images.v1` artifact and, with `output.create_dataset`, registers them as a derived
 * dataset through its lease (rule 4, services/derived-datasets.ts).
 */
import {
  type JobAccepted,
  MAX_PROJECTED_IMAGES,
  type ProjectionJobRequest,
  type ProjectionTaskParams,
  type PipelineSpec,
  type ToCubemapRequest,
  type ToCubemapTaskParams,
  cubemapGroups,
  defaultFaceSize,
  projectionCapability,
} from "../../protocol";
import { notFound, validation } from "../errors";
import { producerDataset } from "./exports";
import { reconstructionOf, snapshotInputs } from "./snapshots";
import type { DatasetRow, ImageRow } from "../storage/tenant-rows";
import { requireCapability } from "./capabilities";
import { frozenDataset, submitJob } from "./jobs";
import { tenantStore } from "./stores";

/** What the derived dataset is called unless the request names it. */
const NAME_SUFFIX: Record<ProjectionJobRequest["projection"], string> = {
  equirectangular_to_cubemap: "cubemap",
  cubemap_to_equirectangular: "equirectangular",
  equirectangular_to_perspective: "perspective",
};

/** 422 `not_spherical` (4.14 rule 1, 7): equirectangular sources must be panoramas. */
export function requireSpherical(row: DatasetRow, what: string): void {
  if (row.is_spherical) return;
  throw validation(`${what} needs a spherical dataset (is_spherical=true, equirectangular panoramas); dataset ${row.dataset_id} is not`, [
    { path: "dataset_id", message: "the dataset is not spherical", code: "not_spherical" },
  ]);
}

/** How many images the projection writes, checked against what its source holds. */
function plannedOutputs(row: DatasetRow, images: ImageRow[], request: ProjectionJobRequest): number {
  switch (request.projection) {
    case "equirectangular_to_cubemap":
      requireSpherical(row, "an equirectangular -> cubemap projection");
      return images.length * request.faces.length;
    case "equirectangular_to_perspective":
      requireSpherical(row, "an equirectangular -> perspective projection");
      return images.length * request.views.length;
    case "cubemap_to_equirectangular": {
      const { groups, incomplete } = cubemapGroups(images);
      const errors = incomplete.map((g) => ({
        path: "dataset_id",
        message: `cubemap '${g.name}' lacks ${g.missing.join(", ")}`,
        code: "incomplete_cubemap",
      }));
      for (const [name, group] of groups) {
        const sizes = new Set(Object.values(group).map((i) => (i!.width !== null && i!.width === i!.height ? i!.width : -1)));
        if (sizes.has(-1) || sizes.size > 1)
          errors.push({
            path: "dataset_id",
            message: `the faces of cubemap '${name}' are not squares of one size`,
            code: "invalid_cubemap",
          });
      }
      if (groups.size === 0)
        errors.push({
          path: "dataset_id",
          message: "no image is named '<face>/<name>' with face front, right, back, left, up or down (what :render_cubemap writes)",
          code: "no_cubemap",
        });
      if (errors.length > 0) throw validation("the dataset does not hold complete cubemaps", errors);
      return groups.size;
    }
  }
}

/**
 * What the stages of a `spherical` pipeline (2.12) add to their params: with `panorama: true`
 * (default) the cube faces the extractor renders and the bundle adjustment measures on, a quarter
 * of the widest panorama each. The dataset must be spherical (422 `not_spherical`).
 */
export async function sphericalStageParams(
  env: Env,
  tenantId: string,
  row: DatasetRow,
  spec: Extract<PipelineSpec, { kind: "spherical" }>,
) {
  requireCapability(env, "pipelines.spherical");
  requireSpherical(row, "the spherical pipeline");
  if (!spec.panorama) return {};
  const images = await tenantStore(env, tenantId).allImages(row.dataset_id);
  return { cubemap: { face_size: defaultFaceSize(images.map((i) => i.width)) } };
}

export async function submitProjection(
  env: Env,
  tenantId: string,
  datasetId: string,
  recipe: string,
  request: ProjectionJobRequest,
): Promise<JobAccepted> {
  const tenant = tenantStore(env, tenantId);
  const row = await tenant.getDataset(datasetId);
  if (!row) throw notFound("dataset");
  requireCapability(env, projectionCapability(request.projection));
  const images = await tenant.allImages(datasetId);
  if (images.length === 0) {
    throw validation("the dataset has no registered images: register images before submitting a stage (7)", [
      { path: "dataset_id", message: "no registered images", code: "empty_dataset" },
    ]);
  }
  const outputs = plannedOutputs(row, images, request);
  if (outputs > MAX_PROJECTED_IMAGES) {
    throw validation(
      `this projection would write ${outputs} images; one job writes at most ${MAX_PROJECTED_IMAGES} (one artifact): split the dataset`,
      [{ path: "dataset_id", message: `${outputs} output images`, code: "too_many_outputs" }],
    );
  }
  const name = request.output.dataset_name ?? `${row.name} (${NAME_SUFFIX[request.projection]})`;
  const params: ProjectionTaskParams = {
    projection: { ...request, source_dataset_id: datasetId },
    derived_dataset: request.output.create_dataset ? { name } : null,
  };
  return submitJob(env, {
    tenantId,
    projectId: row.project_id,
    dataset: frozenDataset(row, images),
    recipe,
    // A task that registers a dataset is this job's own: never answered from another job's cache (3.2.1).
    stages: [{ kind: "projection", params, own_outputs: request.output.create_dataset }],
    input_artifacts: {},
    recon: null,
  });
}

/**
 * `POST /v1/reconstructions/{rid}:to_cubemap` (4.13): the latest sealed snapshot (or `seq`) of a
 * reconstruction of a spherical dataset, sealed again with each panorama as a cubemap rig: one
 * 6-sensor rig in rigs.json, one frame per panorama in frames.json. 404 unknown reconstruction or
 * snapshot, 422 a dataset that is not spherical, 409 nothing sealed yet.
 */
export async function submitToCubemap(env: Env, tenantId: string, reconId: string, body: ToCubemapRequest): Promise<JobAccepted> {
  const recon = await reconstructionOf(env, tenantId, reconId);
  requireCapability(env, "projection.cubemap_rig");
  const tenant = tenantStore(env, tenantId);
  const dataset = await tenant.getDataset(recon.dataset_id);
  if (!dataset) throw notFound("dataset of the reconstruction");
  requireSpherical(dataset, ":to_cubemap");
  const { seq, input_artifacts, submodels, root } = await snapshotInputs(env, tenantId, reconId, body.seq, "convert");
  const params: ToCubemapTaskParams = { to_cubemap: { face_size: body.face_size, seq, submodels } };
  return submitJob(env, {
    tenantId,
    projectId: recon.project_id,
    dataset: await producerDataset(env, tenantId, root),
    recipe: "to_cubemap",
    stages: [{ kind: "to_cubemap", params }],
    input_artifacts,
    recon: { recon_id: reconId },
  });
}

/**
 * @module Executor of `map` tasks (spec 2.12 PipelineSpec `incremental`, BundleAdjustmentSpec):
 * keypoints and verified matches -> the engine's incremental mapper, stepped one registration
 * at a time so that the task reports progress, honours cancels between steps, seals a snapshot
 * every `snapshot_frames_freq` registrations (and at the end) and stores a checkpoint with each,
 * from which a resumed task continues (3.1).
 *
 * Progress (4.8) counts the distinct photos some model holds against the photos that can register
 * at all (those with verified matches), plus one for the final merge and seal, under the phase of
 * the work at hand (a model's start, registration, its final refinement): it never reads finished
 * while work remains. `max_runtime_seconds` (2.12) bounds the mapper: once spent, the model being
 * built is finished and sealed with what it holds and no other is started (logged); a resumed task
 * counts the time its checkpoint says earlier attempts spent. At the end, the
 * models that share photos are joined into one by the Sim3 those photos give (stages/merge.ts
 * joinSubModels) and sealed at the root; every model stays a component (4.9). Each seal's root
 * carries its points' descriptors (`x-point_descriptors.bin`) for localization.
 *
 * The `global` pipeline (2.12) maps with the global mapper instead (mapGlobally): rotations
 * from the view-graph filter's rotation averaging (phase `global_rotation_avg`), every image
 * placed at once by global positioning (`global_positioning`), then global bundle adjustment
 * with retriangulation (`global_ba`), a model for each connected part of the view graph (photos of
 * places that do not connect), sealed once; with `use_incremental_quality_fallback` a part the
 * global mapper cannot place is mapped by the incremental mapper (summary `x-incremental_parts`),
 * and a poor global model as a whole is mapped again by it (logged, and recorded in the
 * artifact's summary as `x-mapper` and `x-global_fallback`).
 *
 * The `hierarchical` pipeline's map task is leased shard by shard (executors/hierarchical.ts),
 * through the same pieces: verified matches, the incremental mapper per cluster, `sealModels`.
 */
import type { Engine } from "../../../engine-wasm/ts/engine";
import {
  type GlobalPositioningSummary,
  IncrementalMapping,
  extendModel,
  type IncrementalMappingOptions,
  type MappedModel,
  type MappingInput,
  type MappingPhase,
  type MappingProgress,
} from "../../../engine-wasm/ts/mapping";
import { BundleAdjustmentSpec, type Phase, PipelineSpec, type SnapshotSeal, type TaskOutputs } from "../../../protocol";
import { POINTS_MEDIA_TYPE, decodePoints, encodePoints } from "../../../protocol/wire/points";
import { VERIFIED_MATCHES_MEDIA_TYPE, VerifiedMatchesFile, imageIdAt } from "../../../protocol/wire/verified-matches";
import { datasetCameras } from "../../stages/cameras";
import { FREE_VARIANCE, type MappingPriors, mappingPriors } from "../../stages/positions";
import { centreOf } from "../../stages/sim3";
import { keypointColors } from "../../stages/colors";
import { cubemapRigModel } from "../../stages/cubemap-rig";
import { joinSubModels } from "../../stages/merge";
import { connectedParts } from "../../stages/partition";
import { mappingPairs } from "../../stages/view-graph";
import { type ModelFiles, type SnapshotImageInput, modelFiles, previewPoints } from "../../stages/snapshot";
import type { OutputFile, TaskContext } from "../task-context";
import { coreArtifact, datasetOf, inputFiles } from "./artifact";
import { writeCorrespondenceGraph } from "./correspondence-graph";
import { sealedFiles } from "./georegister";
import { datasetKeypoints } from "./keypoints";
import { pointDescriptorsFile } from "./point-descriptors";

/** The task's error class when mapping ends without any model. */
export class NoModelError extends Error {
  override name = "NoModelError";
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** The progress phase (6) of each engine phase: the work its next step does. */
const PROGRESS_PHASES: Record<MappingPhase, Phase> = {
  start_model: "incremental_init",
  grow_model: "incremental_register",
  finish_model: "global_ba",
  done: "hierarchical_merge",
};

/** The checkpoint summary's entry for the mapping time spent up to the checkpoint (seconds, every attempt). */
export const MAPPING_SECONDS = "mapping_seconds";

/** The mapping time earlier attempts spent, as the checkpoint this task resumes from records it (ms). */
function spentBeforeMs(ctx: TaskContext): number {
  const spent = ctx.resumeFrom?.summary[MAPPING_SECONDS];
  return typeof spent === "number" && Number.isFinite(spent) && spent > 0 ? spent * 1000 : 0;
}

/** Photos held against photos that can register, plus one for the merge and seal at the end. */
export function reportProgress(ctx: TaskContext, p: MappingProgress): void {
  ctx.progress(p.imagesHeld, p.imagesReachable + 1, PROGRESS_PHASES[p.phase]);
}

/** The task's BundleAdjustmentSpec as the mapper's `ba` option (none: the mapper's defaults). */
export function bundleAdjustmentOptions(ctx: TaskContext): Pick<IncrementalMappingOptions, "ba"> {
  const ba = ctx.params.ba ? BundleAdjustmentSpec.parse(ctx.params.ba) : undefined;
  // featuremetric BA is gated by its capability (501 at submission); it never reaches a runner.
  if (ba?.mode === "featuremetric") throw new Error("featuremetric bundle adjustment is not available on this runner");
  return ba ? { ba: { ...ba, mode: ba.mode === "two_stage" ? "two_stage" : "standard" } } : {};
}

/** Each listed image's keypoint colours, from its decoded photo (dataset order). */
export async function addColors(ctx: TaskContext, images: SnapshotImageInput[], which: Iterable<number>): Promise<void> {
  const dataset = datasetOf(ctx.lease);
  for (const i of which) {
    await ctx.cancelPoint();
    const im = dataset.images[i]!;
    const decoded = await ctx.decode(await ctx.read(im.content_sha), { respectExifOrientation: dataset.respect_exif_orientation });
    images[i]!.colors = keypointColors(decoded, images[i]!.keypoints);
  }
}

export async function map(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = PipelineSpec.parse(ctx.params.spec ?? { kind: "incremental" });
  // Hierarchical mapping runs as shards (executors/hierarchical.ts); a whole-task lease of one is not made.
  if (spec.kind === "hierarchical") throw new Error("a hierarchical map task is leased shard by shard: this lease names none");
  // `spherical` with `panorama: true`: the panoramas are adjusted and sealed as cubemap rigs (2.12, 2.14).
  const cubemap = (ctx.params.cubemap as { face_size: number } | undefined) ?? null;
  const ba = bundleAdjustmentOptions(ctx);
  const dataset = datasetOf(ctx.lease);
  const keypoints = await datasetKeypoints(ctx);
  const { cameras, cameraOfImage } = datasetCameras(dataset, keypoints);
  const verified = await mergedVerifiedMatches(ctx);
  await writeCorrespondenceGraph(ctx);

  const images: SnapshotImageInput[] = dataset.images.map((im, i) => ({
    name: im.name,
    camera: cameraOfImage[i]!,
    keypoints: keypoints[i]!.xy,
  }));
  if (spec.kind !== "incremental" || spec.extract_colors) await addColors(ctx, images, dataset.images.keys());

  // The view-graph filter (issue 18): pairs whose relative rotation contradicts the loops and
  // averaged rotations of the rest of the graph do not reach the mapper.
  if (spec.kind === "global") ctx.progress(0, 1, "global_rotation_avg");
  const {
    pairs,
    cameras: mappedCameras,
    withInliers,
    dropped,
    priorsLetGo,
    calibrated,
    rotations,
  } = await mappingPairs(verified.pairs, { cameras, cameraOfImage }, keypoints, spec.seed, async (batch) => {
    await ctx.cancelPoint();
    return ctx.engines.verify(batch);
  });
  if (dropped > 0)
    ctx.log("INFO", `view-graph filter: ${dropped} of ${withInliers} verified pairs contradict the rest of the graph and are not mapped`);
  if (priorsLetGo > 0)
    ctx.log(
      "INFO",
      `view-graph filter: the prior focal lengths (EXIF) of ${priorsLetGo} camera(s) contradict their pairs; mapped from the focal lengths the pairs determine instead, without a prior`,
    );
  if (calibrated > 0)
    ctx.log(
      "INFO",
      `view-graph filter: ${calibrated} camera(s) without a focal length to take rotations through (no EXIF, no group of one size) calibrated by how their pairs agree with their partners' averaged rotations`,
    );

  const byName = new Map(dataset.images.map((im, i) => [im.name, i]));
  const initPair =
    spec.kind === "incremental" && spec.init_image_pair ? (spec.init_image_pair.map((n) => byName.get(n)) as [number, number]) : null;
  if (initPair && initPair.some((i) => i === undefined)) throw new Error(`init_image_pair names an image outside the dataset`);

  // Pose priors or GPS: soft constraints in global bundle adjustment, the model in their frame (4.12).
  const priors = mappingPriors(dataset.images);
  const engine = await ctx.engine();
  const input = {
    cameras: mappedCameras,
    images: images.map((im) => ({ camera: im.camera, keypoints: im.keypoints })),
    pairs,
  };
  const options: IncrementalMappingOptions = {
    seed: spec.seed,
    snapshot_frames_freq: spec.snapshot_frames_freq,
    init_image_pair: initPair,
    ...(spec.kind === "incremental"
      ? { multiple_models: spec.multiple_models, max_num_models: spec.max_num_models, min_num_matches: spec.min_num_matches }
      : {}),
    ...ba,
    cubemap_rig_face_size: cubemap?.face_size ?? 0,
    pose_priors: priors?.priors ?? [],
  };
  // Global mapping (2.12 `global`); a checkpoint only ever comes from its incremental fallback.
  let mapper: Record<string, unknown> = {};
  if (spec.kind === "global" && ctx.resumeFrom) {
    mapper = { "x-mapper": "incremental", "x-global_fallback": "resumed from a checkpoint of the incremental fallback" };
  } else if (spec.kind === "global") {
    const global = await mapGlobally(ctx, engine, input, options, rotations, spec, images);
    if (global.outputs) return global.outputs;
    mapper = { "x-mapper": "incremental", "x-global_fallback": global.poor, "x-global_positioning": global.positioning };
  }
  const mapping = new IncrementalMapping(engine, input, options);
  try {
    if (ctx.resumeFrom) {
      mapping.restore(await ctx.read(ctx.resumeFrom.blob_sha));
      ctx.log("INFO", `resumed from a checkpoint with ${mapping.numRegistrations} registrations`);
    }
    let final: {
      files: OutputFile[];
      root: { num_reg_images: number; num_points3D: number; mean_reproj_err: number };
      models: number;
    } | null = null;
    const budgetMs = spec.max_runtime_seconds === null ? null : spec.max_runtime_seconds * 1000;
    // The budget covers the mapping, not one attempt: a resumed task goes on from the time its
    // checkpoint says was already spent (each checkpoint records it).
    const startedAt = Date.now() - spentBeforeMs(ctx);
    let outOfTime = false;
    // How the largest model fits the priors it was constrained by (the map artifact's x-pose_priors).
    let priorFit: { "x-pose_priors"?: ReturnType<typeof fitToPriors> } = {};
    for (;;) {
      await ctx.cancelPoint();
      if (budgetMs !== null && !outOfTime && Date.now() - startedAt > budgetMs) {
        outOfTime = true;
        mapping.requestFinish();
        ctx.log(
          "WARNING",
          `max_runtime_seconds (${spec.max_runtime_seconds} s) spent: the model being built is finished and sealed as it stands; no further model is started`,
        );
      }
      reportProgress(ctx, mapping.progress());
      const status = mapping.step(1);
      if (status === "running") continue;
      const models = mapping.models();
      // As COLMAP's mapper: no initial pair, no model; an empty reconstruction is a failure, not a result.
      if (status === "done" && models.length === 0) {
        throw new NoModelError(
          `the mapper reconstructed no model from ${images.length} images and ${pairs.length} verified pairs: no initial image pair could be reconstructed`,
        );
      }
      if (status === "done") {
        reportProgress(ctx, mapping.progress());
        const largest = models.reduce((a, b) => (b.images.length > a.images.length ? b : a));
        if (priors) priorFit = { "x-pose_priors": fitToPriors(largest, priors) };
        // Cubemap rigs are sealed per model: joining them would need the rig through the merge.
        const join = cubemap ? null : engine;
        final = { ...(await seal(ctx, models, images, "final", cubemap?.face_size ?? null, join)), models: models.length };
        const { imagesReachable } = mapping.progress();
        ctx.progress(imagesReachable + 1, imagesReachable + 1, "hierarchical_merge");
        break;
      }
      await seal(ctx, models, images, "mapping", cubemap?.face_size ?? null, null);
      await ctx.saveCheckpoint(mapping.checkpoint(), {
        num_registrations: mapping.numRegistrations,
        [MAPPING_SECONDS]: (Date.now() - startedAt) / 1000,
      });
    }
    ctx.metric("num_reg_images", final.root.num_reg_images);
    ctx.metric("num_points3D", final.root.num_points3D);
    return {
      artifacts: [
        coreArtifact("reconstruction.sparse.v1", "sparse reconstruction", final.files, {
          num_models: final.models,
          ...final.root,
          ...priorFit,
          ...mapper,
        }),
      ],
      result: null,
    };
  } finally {
    mapping.free();
  }
}

type GlobalSpec = Extract<PipelineSpec, { kind: "global" }>;

/**
 * When the global model is poor enough for `use_incremental_quality_fallback` to map again
 * incrementally: fewer than this fraction of the images that can register (those with verified
 * matches) placed, or a mean reprojection error above this (pixels; half the filtering threshold
 * of 4 px: a model the refinement could not bring to its observations).
 */
const GLOBAL_MIN_REGISTERED_FRACTION = 0.8;
const GLOBAL_MAX_MEAN_REPROJ_ERR = 2;

/** Why a global model of `registered` images (of `reachable`) at `meanReprojectionError` pixels is poor (see above), or null. */
export function globalModelShortfall(registered: number, reachable: number, meanReprojectionError: number): string | null {
  return registered < 2
    ? "no model"
    : registered < GLOBAL_MIN_REGISTERED_FRACTION * reachable
      ? `${registered} of ${reachable} images registered (under ${GLOBAL_MIN_REGISTERED_FRACTION * 100}%)`
      : meanReprojectionError > GLOBAL_MAX_MEAN_REPROJ_ERR
        ? `mean reprojection error ${meanReprojectionError.toPrecision(3)} px (over ${GLOBAL_MAX_MEAN_REPROJ_ERR} px)`
        : null;
}

/** A part of the view graph with fewer images than this is not mapped by the global mapper (a stray pair of photos). */
const GLOBAL_MIN_COMPONENT_IMAGES = 3;

/**
 * The global mapper (2.12 `global`, engine-wasm/src/sfm/global_mapper.h): the images' averaged
 * rotations (the view-graph filter's), global positioning of cameras and points, then global
 * bundle adjustment with triangulation, filtering and retriangulation; sealed once. Each connected
 * part of the view graph (photos of places that do not connect) is mapped on its own, a model each,
 * as the incremental mapper's multiple models are. `formulation` AUTO is GLOMAP's explicit scale.
 * The photos a part's model leaves out, when it is not poor (see above), are registered into it by
 * the incremental mapper (summary `x-registered_incrementally`). With
 * `use_incremental_quality_fallback`, a part whose global model is poor (a place photographed
 * without EXIF, whose pairs give no rotation to average) is mapped by the incremental mapper
 * alone, beside the other parts' global models (summary `x-incremental_parts`), and a poor whole
 * (one part, or too few images over all) answers no outputs and why: the caller then maps
 * incrementally instead.
 */
async function mapGlobally(
  ctx: TaskContext,
  engine: Engine,
  input: MappingInput,
  options: IncrementalMappingOptions,
  rotations: ReadonlyMap<number, readonly number[]>,
  spec: GlobalSpec,
  images: SnapshotImageInput[],
): Promise<{ outputs: TaskOutputs } | { outputs: null; poor: string; positioning: GlobalPositioningSummary }> {
  const formulation = spec.formulation === "ELIMINATED_SCALE" ? "eliminated_scale" : "explicit_scale";
  const parts = connectedParts(input.pairs).filter((part) => part.length >= GLOBAL_MIN_COMPONENT_IMAGES);
  const positioning: GlobalPositioningSummary = {
    imagesWithRotation: 0,
    imagesInComponent: 0,
    imagesPositioned: 0,
    tracks: 0,
    observations: 0,
    inlierObservations: 0,
  };
  const models: MappedModel[] = [];
  const poorParts: string[] = [];
  const incrementalParts: string[] = [];
  let registeredIncrementally = 0;
  // max_runtime_seconds bounds an incremental part (the global steps themselves run to their end).
  const deadline = spec.max_runtime_seconds === null ? null : Date.now() + spec.max_runtime_seconds * 1000;
  let reachable = 0;
  // Progress in whole steps: each part positioned, then adjusted; then the seal.
  const steps = 2 * parts.length + 1;
  for (const [k, part] of parts.entries()) {
    const mapping = new IncrementalMapping(engine, input, options);
    try {
      reachable = mapping.progress().imagesReachable;
      await ctx.cancelPoint();
      ctx.progress(2 * k + 1, steps, "global_positioning");
      // The view graph's image ids are dataset ids, the engine's images input indices.
      const inPart = new Set(part);
      const partInput = { ...input, pairs: input.pairs.filter((p) => inPart.has(p.image1)) };
      const placed = mapping.globalPosition(
        new Map([...rotations].filter(([id]) => inPart.has(id - 1)).map(([id, q]) => [id - 1, q])),
        formulation,
      );
      for (const key of Object.keys(positioning) as Array<keyof GlobalPositioningSummary>) positioning[key] += placed[key];
      ctx.log(
        "INFO",
        `global positioning (${formulation.replace("_", " ")})${parts.length > 1 ? `, part ${k + 1} of ${parts.length} of the view graph (${part.length} images)` : ""}: ${placed.imagesPositioned} images placed (${placed.imagesInComponent} in the largest connected part of the ${placed.imagesWithRotation} with an averaged rotation); ${placed.inlierObservations} of ${placed.observations} observations of ${placed.tracks} tracks kept`,
      );
      await ctx.cancelPoint();
      ctx.progress(2 * k + 2, steps, "global_ba");
      mapping.globalRefine(formulation);
      let model = mapping.models()[0];
      // A part it cannot place (photos without a relative rotation to average) is as poor as a poor whole.
      const partPoor = globalModelShortfall(model?.images.length ?? 0, part.length, model?.meanReprojectionError ?? Infinity);
      // The photos a model that is not poor left out (no rotation to average: photos without EXIF among photos with
      // it) are registered into it by the incremental mapper, as hierarchical mapping's last pass does. A poor model
      // is not grown: one of a few photos of a street may be folded already, and grown it would pass for good.
      if (model && !partPoor && model.images.length < part.length) {
        const positioned = model.images.length;
        model =
          (await extendModel(engine, partInput, options, model, async (m) => {
            await ctx.cancelPoint();
            if (deadline !== null && Date.now() > deadline) m.requestFinish();
          })) ?? model;
        registeredIncrementally += model.images.length - positioned;
        ctx.log(
          "INFO",
          `${model.images.length - positioned} of the ${part.length - positioned} images of ${parts.length > 1 ? `part ${k + 1} of the view graph` : "the view graph"} the global mapper did not place registered into its model by the incremental mapper`,
        );
      }
      const why = `part ${k + 1} of ${parts.length} of the view graph (${part.length} images): ${partPoor}`;
      if (partPoor && parts.length > 1 && spec.use_incremental_quality_fallback) {
        // That part alone to the incremental mapper; the other parts keep their global models.
        ctx.log("WARNING", `the global model of ${why}: the incremental mapper maps that part instead`);
        incrementalParts.push(why);
        models.push(...(await mapPartIncrementally(ctx, engine, partInput, options, deadline)));
        continue;
      }
      if (model && model.images.length >= 2) models.push(model);
      if (partPoor && parts.length > 1) poorParts.push(why);
    } finally {
      mapping.free();
    }
  }
  const registered = models.reduce((n, m) => n + m.images.length, 0);
  const error = models.length ? Math.max(...models.map((m) => m.meanReprojectionError)) : Infinity;
  const poor = poorParts[0] ?? globalModelShortfall(registered, reachable, error);
  if (poor && spec.use_incremental_quality_fallback) {
    ctx.log("WARNING", `the global model is poor (${poor}): the incremental mapper maps the dataset instead`);
    return { outputs: null, poor, positioning };
  }
  if (models.length === 0)
    throw new NoModelError(`the global mapper placed no model from ${images.length} images and ${input.pairs.length} verified pairs`);
  if (poor) ctx.log("WARNING", `the global model is poor (${poor}); use_incremental_quality_fallback is off, so it is kept`);
  // Largest first, as the incremental mapper's models are sealed (the root is the largest).
  models.sort((a, b) => b.images.length - a.images.length);
  const final = await seal(ctx, models, images, "final", null, null);
  ctx.progress(steps, steps, "global_ba");
  ctx.metric("num_reg_images", final.root.num_reg_images);
  ctx.metric("num_points3D", final.root.num_points3D);
  return {
    outputs: {
      artifacts: [
        coreArtifact("reconstruction.sparse.v1", "sparse reconstruction", final.files, {
          num_models: models.length,
          ...final.root,
          "x-mapper": "global",
          "x-global_positioning": positioning,
          ...(incrementalParts.length ? { "x-incremental_parts": incrementalParts } : {}),
          ...(registeredIncrementally ? { "x-registered_incrementally": registeredIncrementally } : {}),
          ...(poor ? { "x-global_quality": poor } : {}),
        }),
      ],
      result: null,
    },
  };
}

/**
 * The incremental mapper's models of one part of the view graph (`partInput`: its images' pairs
 * only), for a part the global mapper cannot place. Past `deadline` (ms since the epoch; null:
 * none, from max_runtime_seconds) the model being built is finished as it stands. No checkpoints,
 * as for the global parts.
 */
async function mapPartIncrementally(
  ctx: TaskContext,
  engine: Engine,
  partInput: MappingInput,
  options: IncrementalMappingOptions,
  deadline: number | null,
): Promise<MappedModel[]> {
  const mapping = new IncrementalMapping(engine, partInput, options);
  try {
    let outOfTime = false;
    while (mapping.step(1) !== "done") {
      await ctx.cancelPoint();
      if (deadline !== null && !outOfTime && Date.now() > deadline) {
        outOfTime = true;
        mapping.requestFinish();
        ctx.log("WARNING", `max_runtime_seconds spent: the part's model being built is finished and sealed as it stands`);
      }
    }
    return mapping.models().filter((m) => m.images.length >= 2);
  } finally {
    mapping.free();
  }
}

/**
 * The verified matches of the whole dataset as one `two_view_geometries.json` (2.14), written and,
 * when the job drives a reconstruction, set as its `two_view_geometries.json`.
 */
export async function mergedVerifiedMatches(ctx: TaskContext): Promise<VerifiedMatchesFile> {
  const merged = await verifiedMatches(ctx);
  const file = await ctx.write("two_view_geometries.json", new TextEncoder().encode(JSON.stringify(merged)), VERIFIED_MATCHES_MEDIA_TYPE);
  await ctx.reconstructionFile("two_view_geometries.json", file);
  return merged;
}

/**
 * The verified matches of the whole dataset in dataset image ids: the verify task's blocks (each
 * a file of its own images, named in `x-images`) merged by image name.
 */
export async function verifiedMatches(ctx: TaskContext): Promise<VerifiedMatchesFile> {
  const dataset = datasetOf(ctx.lease);
  const indexOf = new Map(dataset.images.map((im, i) => [im.name, i]));
  const merged: VerifiedMatchesFile = {
    pairs: [],
    "x-images": dataset.images.map((im, i) => ({ image_id: imageIdAt(i), name: im.name, resource_id: im.image_id })),
  };
  for (const f of inputFiles(ctx.lease, "verified_matches").values()) {
    const part = VerifiedMatchesFile.parse(JSON.parse(new TextDecoder().decode(await ctx.read(f.blob_sha))));
    const datasetId = new Map(part["x-images"].map((im) => [im.image_id, indexOf.get(im.name)]));
    for (const p of part.pairs) {
      const [i1, i2] = [datasetId.get(p.image_id1), datasetId.get(p.image_id2)];
      if (i1 === undefined || i2 === undefined)
        throw new Error(`verified matches name an image outside the dataset (ids ${p.image_id1}, ${p.image_id2})`);
      merged.pairs.push({ ...p, image_id1: imageIdAt(i1), image_id2: imageIdAt(i2) });
    }
  }
  return merged;
}

/**
 * Uploads every model's files and seals them as the next snapshot: each model as a component
 * (2.8), at the root the largest model or, given `join` (the engine, at the end of the run), the
 * models that share photos joined into one. Answers the root's files and summary.
 */
async function seal(
  ctx: TaskContext,
  unsorted: MappedModel[],
  images: SnapshotImageInput[],
  phase: string,
  faceSize: number | null,
  join: Engine | null,
): Promise<SealedRoot> {
  const models = [...unsorted].sort((a, b) => b.images.length - a.images.length);
  return sealModels(
    ctx,
    models.map((model) => modelFiles(model, images)),
    phase,
    faceSize,
    join,
  );
}

/** What a seal answers: the root's files and summary. */
export interface SealedRoot {
  files: OutputFile[];
  root: { num_reg_images: number; num_points3D: number; mean_reproj_err: number };
}

/**
 * Seals models (largest first) as the next snapshot: each a component, the first (or, given
 * `join`, the ones that share photos joined) at the root. See `seal`.
 */
export async function sealModels(
  ctx: TaskContext,
  modelSet: ModelFiles[],
  phase: string,
  faceSize: number | null,
  join: Engine | null,
): Promise<SealedRoot> {
  const summaries = modelSet.map((m, idx) => ({ idx, num_reg_images: m.summary.num_reg_images, num_points3D: m.summary.num_points3D }));
  const submodels: SnapshotSeal["submodels"] = [];
  let root: OutputFile[] = [];
  for (const [idx, f] of modelSet.entries()) {
    const summaryFile = {
      models: summaries,
      phase,
      mean_reproj_err: f.summary.mean_reproj_err,
      mean_track_length: f.summary.mean_track_length,
    };
    const rig = faceSize ? cubemapRigModel(f, faceSize) : null;
    const files = [
      await ctx.write("cameras.json", json(rig?.cameras ?? f.cameras), "application/json"),
      await ctx.write("images.json", json(rig?.images ?? f.images), "application/json"),
      ...(rig
        ? [
            await ctx.write("rigs.json", json(rig.rigs), "application/json"),
            await ctx.write("frames.json", json(rig.frames), "application/json"),
          ]
        : []),
      await ctx.write("summary.json", json(summaryFile), "application/json"),
      await ctx.write("points.bin", f.points, POINTS_MEDIA_TYPE),
      await ctx.write("points_preview.bin", f.preview, POINTS_MEDIA_TYPE),
    ];
    submodels.push({
      idx,
      files: sealedFiles(files),
      summary: {
        num_reg_images: f.summary.num_reg_images,
        num_points3D: f.summary.num_points3D,
        mean_reproj_err: f.summary.mean_reproj_err,
      },
    });
    if (idx === 0) root = files;
  }
  const largest = modelSet[0]?.summary;
  let top = {
    num_reg_images: largest?.num_reg_images ?? 0,
    num_points3D: largest?.num_points3D ?? 0,
    mean_reproj_err: largest?.mean_reproj_err ?? 0,
  };
  const joined = join
    ? joinSubModels(
        join,
        modelSet.map((f) => ({ cameras: f.cameras, images: f.images, points: decodePoints(f.points) })),
      )
    : null;
  if (joined) {
    const { merged } = joined;
    top = { num_reg_images: merged.images.images.length, num_points3D: merged.points.ids.length, mean_reproj_err: merged.mean_reproj_err };
    root = [
      await ctx.write("cameras.json", json(merged.cameras), "application/json"),
      await ctx.write("images.json", json(merged.images), "application/json"),
      await ctx.write(
        "summary.json",
        json({ models: summaries, phase, mean_reproj_err: merged.mean_reproj_err, "x-joined_models": joined.joined }),
        "application/json",
      ),
      await ctx.write("points.bin", encodePoints(merged.points), POINTS_MEDIA_TYPE),
      await ctx.write("points_preview.bin", previewPoints(merged.points), POINTS_MEDIA_TYPE),
    ];
    ctx.log(
      "INFO",
      `joined models ${joined.joined.join(", ")} by the Sim3 of their shared photos: ${top.num_reg_images} images, ${top.num_points3D} points, mean reprojection error ${top.mean_reproj_err.toPrecision(3)} px after bundle adjustment`,
    );
  }
  // The root's per-point descriptors, which localization matches against (cubemap faces have no features of their own).
  const rootModel = joined ? joined.merged : modelSet[0] && { images: modelSet[0].images, points: decodePoints(modelSet[0].points) };
  if (rootModel && !faceSize)
    root.push(await pointDescriptorsFile(ctx, rootModel.images, rootModel.points, inputFiles(ctx.lease, "features")));
  const seq = await ctx.sealSnapshot({
    files: sealedFiles(root),
    submodels,
    summary: { ...top, num_models: modelSet.length, phase },
  });
  ctx.log(
    "INFO",
    `sealed snapshot ${seq}: ${top.num_reg_images} images, ${top.num_points3D} points at the root; ${modelSet.length} model(s)`,
  );
  return { files: root, root: top };
}

/**
 * How the largest model sits on the priors it was constrained by: their frame (and ENU origin),
 * how many of its images have one, and the root mean square distance of those images' centres to
 * their priors' (world units; metres for GPS, horizontally when a prior has no altitude).
 */
function fitToPriors(model: MappedModel, priors: MappingPriors) {
  const byImage = new Map(priors.priors.map((p) => [p.image, p]));
  const distances = model.images.flatMap((im) => {
    const prior = byImage.get(im.image);
    if (!prior) return [];
    const c = centreOf({ rotation: { w: im.qvec[0], x: im.qvec[1], y: im.qvec[2], z: im.qvec[3] }, translation: im.tvec });
    const d = [0, 1, 2].map((k) => c[k]! - prior.centre[k]!);
    // A prior without altitude (free up) leaves the height out.
    return [Math.hypot(d[0]!, d[1]!, prior.covariance[35]! >= FREE_VARIANCE ? 0 : d[2]!)];
  });
  return {
    frame: priors.frame,
    enu_origin: priors.enu_origin,
    num_priors: priors.priors.length,
    num_registered_with_prior: distances.length,
    rmse: distances.length ? Math.sqrt(distances.reduce((a, d) => a + d * d, 0) / distances.length) : null,
  };
}

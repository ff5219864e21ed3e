/**
 * @module Executor of `merge` tasks (spec 4.9 rule 3): the target's snapshot (input artifact
 * `snapshot`) and each source's (`source.<i>`) read, each source moved by its `target_from_source`
 * Sim3 (the request's, or estimated from what it shares with the target) and joined into the
 * target (stages/merge.ts) with their points' descriptors when every snapshot has them (x-point_descriptors.bin),
 * then sealed as the target's next snapshot. Completes with the merged
 * files as a `reconstruction.snapshot` artifact.
 */
import {
  CamerasFile,
  ImagesFile,
  type MergeTaskParams,
  type Sim3,
  type StageArtifact,
  SummaryFile,
  type TaskOutputs,
} from "../../../protocol";
import { POINTS_MEDIA_TYPE, decodePoints, encodePoints } from "../../../protocol/wire/points";
import {
  POINT_DESCRIPTORS_FILE,
  POINT_DESCRIPTORS_MEDIA_TYPE,
  decodePointDescriptors,
  encodePointDescriptors,
} from "../../../protocol/wire/point-descriptors";
import { type MergeInput, estimateTargetFromSource, mergeModels, refineMerged } from "../../stages/merge";
import { AlignmentError, normalizedSim3 } from "../../stages/sim3";
import { previewPoints } from "../../stages/snapshot";
import { type TaskContext, TaskValidationError } from "../task-context";
import { coreArtifact } from "./artifact";
import { sealedFiles } from "./georegister";

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

async function modelOf(
  ctx: TaskContext,
  artifact: StageArtifact | undefined,
  shas: Record<string, string>,
  what: string,
): Promise<MergeInput & { meanError: number | null }> {
  if (!artifact) throw new Error(`the lease carries no snapshot of ${what}`);
  const has = (name: string) => artifact.files.some((f) => f.path === name);
  const read = async (name: string) => {
    const f = artifact.files.find((x) => x.path === name);
    if (!f) throw new TaskValidationError(`the snapshot of ${what} has no ${name}`);
    return ctx.read(f.blob_sha);
  };
  const text = async (name: string) => JSON.parse(new TextDecoder().decode(await read(name))) as unknown;
  const summary = has("summary.json") ? SummaryFile.safeParse(await text("summary.json")) : null;
  return {
    model: {
      cameras: CamerasFile.parse(await text("cameras.json")),
      images: ImagesFile.parse(await text("images.json")),
      points: decodePoints(await read("points.bin")),
    },
    shaOf: new Map(Object.entries(shas)),
    descriptors: has(POINT_DESCRIPTORS_FILE) ? decodePointDescriptors(await read(POINT_DESCRIPTORS_FILE)) : null,
    meanError: summary?.success ? summary.data.mean_reproj_err : null,
  };
}

/** Content SHA-256 by image name over the target and every source (a name is the target's first, then the earlier source's). */
function imageShas(params: MergeTaskParams["merge"]): Record<string, string> {
  return Object.assign({}, ...[...params.sources].reverse().map((s) => s.image_shas), params.target.image_shas);
}

export async function merge(ctx: TaskContext): Promise<TaskOutputs> {
  const { merge: params } = ctx.params as MergeTaskParams;
  const artifacts = ctx.lease.inputs.artifacts;
  const target = await modelOf(ctx, artifacts.snapshot, params.target.image_shas, `target ${params.target.recon_id}`);
  const sources: { input: MergeInput; sim3: Sim3 }[] = [];
  const report = [];
  for (const [i, s] of params.sources.entries()) {
    await ctx.cancelPoint();
    const input = await modelOf(ctx, artifacts[`source.${i}`], s.image_shas, `source ${s.recon_id}`);
    if (s.sim3) {
      sources.push({ input, sim3: normalizedSim3(s.sim3) });
      report.push({ recon_id: s.recon_id, seq: s.seq, sim3: normalizedSim3(s.sim3), estimated: false });
      continue;
    }
    let fit;
    try {
      fit = estimateTargetFromSource(target, input);
    } catch (err) {
      if (err instanceof AlignmentError) throw new TaskValidationError(`source ${s.recon_id}: ${err.message}`);
      throw err;
    }
    const inliers = fit.residuals.filter((_, k) => fit.inliers[k]);
    sources.push({ input, sim3: fit.sim3 });
    report.push({
      recon_id: s.recon_id,
      seq: s.seq,
      sim3: fit.sim3,
      estimated: true,
      shared_images: fit.shared_images,
      shared_points: fit.shared_points,
      num_inliers: inliers.length,
      rmse: Math.sqrt(inliers.reduce((a, r) => a + r * r, 0) / inliers.length),
    });
    ctx.log(
      "INFO",
      `source ${s.recon_id}: target_from_source estimated from ${fit.shared_images} shared images and ${fit.shared_points} shared points (${inliers.length} inliers)`,
    );
  }
  const joined = mergeModels(target, sources);
  const refined = params.bundle_adjust ? refineMerged(await ctx.engine(), joined) : null;
  if (refined)
    ctx.log(
      "INFO",
      `bundle adjustment: ${refined.ba.iterations} iterations, mean reprojection error ${joined.mean_reproj_err.toPrecision(3)} -> ${refined.mean_reproj_err.toPrecision(3)} px` +
        (refined.ba.held_cameras.length > 0
          ? `; intrinsics held (out of bounds when refined): cameras ${refined.ba.held_cameras.join(", ")}`
          : ""),
    );
  const merged = refined ?? joined;
  const n = merged.points.ids.length;
  const preview = previewPoints(merged.points);
  const counts = { num_reg_images: merged.images.images.length, num_points3D: n };
  const files = [
    await ctx.write("cameras.json", json(merged.cameras), "application/json"),
    await ctx.write("images.json", json(merged.images), "application/json"),
    await ctx.write("points.bin", encodePoints(merged.points), POINTS_MEDIA_TYPE),
    await ctx.write("points_preview.bin", preview, POINTS_MEDIA_TYPE),
    // Localizable as the models merged were; without every model's descriptors, localize reads features (services/localize.ts).
    ...(merged.descriptors
      ? [await ctx.write(POINT_DESCRIPTORS_FILE, encodePointDescriptors(merged.descriptors), POINT_DESCRIPTORS_MEDIA_TYPE)]
      : []),
    await ctx.write(
      "summary.json",
      json({ models: [{ idx: 0, ...counts }], phase: "hierarchical_merge", mean_reproj_err: merged.mean_reproj_err }),
      "application/json",
    ),
  ];
  const seq = await ctx.sealSnapshot({
    files: sealedFiles(files),
    submodels: [],
    summary: { ...counts, phase: "hierarchical_merge", mean_reproj_err: merged.mean_reproj_err },
  });
  ctx.log(
    "INFO",
    `sealed snapshot ${seq}: ${params.sources.length} source(s) merged into snapshot ${params.target.seq}: ${merged.added_images} images added, ${merged.fused_points} points fused`,
  );
  return {
    // The merged model's photos by name: a later merge (or georegister, which keeps it) finds its shared images by them.
    artifacts: [
      coreArtifact(
        "reconstruction.snapshot",
        `snapshot ${params.target.seq} merged with ${params.sources.length} source(s)`,
        files,
        { snapshot_seq: seq, ...counts },
        { image_shas: imageShas(params) },
      ),
    ],
    result: {
      snapshot_seq: seq,
      target_seq: params.target.seq,
      sources: report,
      fused_points: merged.fused_points,
      added_images: merged.added_images,
      mean_reproj_err: merged.mean_reproj_err,
      bundle_adjusted: params.bundle_adjust,
      ...(refined ? { held_cameras: refined.ba.held_cameras } : {}),
    },
  };
}

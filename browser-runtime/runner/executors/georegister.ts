/**
 * @module Executor of `georegister` tasks (spec 4.13): the snapshot `seq` of a reconstruction
 * (its root and each component, the job's input artifacts `snapshot` and `submodel.<idx>`) moved
 * by a Sim3 and sealed as a new snapshot (stages/sim3.ts). The Sim3 is the request's, or, with our
 * `x-from_gps` extension, estimated from the root's camera centres and their images' positions in
 * the lease's dataset: GPS through a local ENU frame (stages/enu.ts), or pose-prior centres.
 * Completes with the root's files as a `reconstruction.snapshot` artifact; the result names the
 * Sim3 applied and, when estimated, how it fits (`x-alignment`).
 */
import {
  type DatasetSnapshot,
  type GeoregisterAlignment,
  type GeoregisterTaskParams,
  ImagesFile,
  type Sim3,
  type SnapshotSeal,
  type StageArtifact,
  type TaskOutputs,
} from "../../../protocol";
import type { Quat } from "../../../engine-wasm/ts/accuracy";
import { enuPositions } from "../../stages/positions";
import { type AlignmentPair, AlignmentError, centreOf, estimateAlignment, normalizedSim3, transformFile } from "../../stages/sim3";
import { type OutputFile, type TaskContext, TaskValidationError } from "../task-context";
import { coreArtifact } from "./artifact";

/** Every file of `artifact` moved by `sim3`, written under this job (the seal takes this job's blobs). */
export async function movedModel(ctx: TaskContext, artifact: StageArtifact, sim3: Sim3): Promise<OutputFile[]> {
  const files: OutputFile[] = [];
  for (const f of artifact.files) {
    await ctx.cancelPoint();
    const content = await ctx.read(f.blob_sha);
    let moved: Uint8Array | null;
    try {
      moved = transformFile(f.path, content, sim3);
    } catch (err) {
      throw new TaskValidationError(`the snapshot's ${f.path} cannot be read: ${(err as Error).message}`);
    }
    files.push(await ctx.write(f.path, moved ?? content, f.media_type ?? "application/octet-stream"));
  }
  return files;
}

export const sealedFiles = (files: OutputFile[]) =>
  files.map((f) => ({ name: f.path as "cameras.json", blob_sha: f.blob_sha, byte_size: f.byte_size }));

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : 0.5 * (s[m - 1]! + s[m]!);
};

/** Each registered image's centre paired with its reference position; for GPS, the ENU origin too. */
function referencePairs(images: ImagesFile, dataset: DatasetSnapshot, reference: "gps" | "pose_priors") {
  const byName = new Map(dataset.images.map((i) => [i.name, i]));
  if (reference === "pose_priors") {
    const pairs: AlignmentPair[] = [];
    for (const im of images.images) {
      const prior = byName.get(im.name)?.pose_prior;
      if (!prior) continue;
      const q = (r: { w: number; x: number; y: number; z: number }): Quat => [r.w, r.x, r.y, r.z];
      pairs.push({
        name: im.name,
        centre: centreOf(im.cam_from_world),
        reference: centreOf(prior.cam_from_world),
        orientations: [q(im.cam_from_world.rotation), q(prior.cam_from_world.rotation)],
      });
    }
    return { pairs, origin: null };
  }
  // The ENU frame of the dataset's GPS positions (origin at their mean), as spatial pairs and the mapper place images.
  const enu = enuPositions(dataset.images);
  if (!enu) return { pairs: [], origin: null };
  const positionOf = new Map(dataset.images.map((d, i) => [d.name, enu.positions[i]]));
  const pairs: AlignmentPair[] = images.images.flatMap((im) => {
    const reference = positionOf.get(im.name);
    return reference ? [{ name: im.name, centre: centreOf(im.cam_from_world), reference }] : [];
  });
  const origin = enu.origin;
  return { pairs, origin };
}

/** The Sim3 that puts the root model's cameras on their references, and how well it does. */
async function estimated(ctx: TaskContext, root: StageArtifact, from: { reference: "gps" | "pose_priors"; max_error_m: number }) {
  const file = root.files.find((f) => f.path === "images.json");
  if (!file) throw new TaskValidationError("the snapshot has no images.json");
  const images = ImagesFile.parse(JSON.parse(new TextDecoder().decode(await ctx.read(file.blob_sha))));
  const dataset = ctx.lease.inputs.dataset;
  if (!dataset) throw new Error("the lease carries no dataset: x-from_gps needs its images' positions");
  const { pairs, origin } = referencePairs(images, dataset, from.reference);
  let fit;
  try {
    fit = estimateAlignment(pairs, from.max_error_m);
  } catch (err) {
    if (err instanceof AlignmentError) throw new TaskValidationError(`x-from_gps (${from.reference}): ${err.message}`);
    throw err;
  }
  const inlierResiduals = fit.residuals.filter((_, i) => fit.inliers[i]);
  const alignment: GeoregisterAlignment = {
    reference: from.reference,
    enu_origin: origin,
    max_error_m: from.max_error_m,
    num_references: pairs.length,
    num_inliers: inlierResiduals.length,
    rmse_m: Math.sqrt(inlierResiduals.reduce((a, r) => a + r * r, 0) / inlierResiduals.length),
    median_m: median(inlierResiduals),
    max_m: Math.max(...inlierResiduals),
    residuals: pairs.map((p, i) => ({ image_name: p.name, residual_m: fit.residuals[i]!, inlier: fit.inliers[i]! })),
  };
  return { sim3: fit.sim3, alignment };
}

export async function georegister(ctx: TaskContext): Promise<TaskOutputs> {
  const { georegister: params } = ctx.params as GeoregisterTaskParams;
  const artifacts = ctx.lease.inputs.artifacts;
  const root = artifacts.snapshot;
  if (!root) throw new Error("the lease carries no 'snapshot' input");
  const fit = params.from_gps ? await estimated(ctx, root, params.from_gps) : null;
  const sim3 = normalizedSim3(fit?.sim3 ?? params.sim3!);
  const files = await movedModel(ctx, root, sim3);
  const submodels: SnapshotSeal["submodels"] = [];
  for (const idx of params.submodels) {
    const component = artifacts[`submodel.${idx}`];
    if (!component) continue;
    const moved = await movedModel(ctx, component, sim3);
    submodels.push({
      idx,
      files: sealedFiles(moved),
      summary: { num_reg_images: 0, num_points3D: 0, ...component.summary, "x-sim3": sim3 } as SnapshotSeal["submodels"][number]["summary"],
    });
  }
  const fitSummary = fit ? { "x-georegister_rmse_m": fit.alignment.rmse_m, "x-georegister_inliers": fit.alignment.num_inliers } : {};
  const summary = {
    num_reg_images: 0,
    num_points3D: 0,
    ...root.summary,
    phase: "georegister",
    "x-sim3": sim3,
    ...fitSummary,
  } as SnapshotSeal["summary"];
  const seq = await ctx.sealSnapshot({ files: sealedFiles(files), submodels, summary });
  ctx.log(
    "INFO",
    `sealed snapshot ${seq}: snapshot ${params.seq} moved by a Sim3 of scale ${sim3.scale.toPrecision(6)}${fit ? ` (estimated from ${fit.alignment.reference}: ${fit.alignment.num_inliers} of ${fit.alignment.num_references} inliers, rmse ${fit.alignment.rmse_m.toPrecision(3)})` : ""}`,
  );
  return {
    artifacts: [
      coreArtifact("reconstruction.snapshot", `snapshot ${params.seq} georegistered`, files, {
        source_seq: params.seq,
        snapshot_seq: seq,
        "x-sim3": sim3,
      }),
    ],
    result: { snapshot_seq: seq, source_seq: params.seq, sim3, ...(fit ? { "x-alignment": fit.alignment } : {}) },
  };
}

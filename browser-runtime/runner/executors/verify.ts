/**
 * @module Executor of `verify` tasks (spec 4.6 VerifySpec): every matched pair -> two-view
 * geometry in the engine (COLMAP's classification; calibrated E only when both cameras have a
 * prior focal length, else F/H) -> a `matches.verified.v1` artifact, which is also the
 * reconstruction's `two_view_geometries.json` (2.14) when the job drives one. Batches of pairs
 * are verified on the runner's engine pool, one batch per engine at once (items.ts); each pair's
 * RANSAC is seeded on its own, so the file is the same whichever engine verified it.
 */
import type { TwoViewInput } from "../../../engine-wasm/ts/two-view";
import { type TaskOutputs, VerifySpec } from "../../../protocol";
import { decodeMatches } from "../../../protocol/wire/matches";
import {
  VERIFIED_MATCHES_MEDIA_TYPE,
  type VerifiedMatchesFile,
  imageIdAt,
} from "../../../protocol/wire/verified-matches";
import { datasetCameras, twoViewCamera } from "../../stages/cameras";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf, inputFiles } from "./artifact";
import { eachItem } from "./items";
import { datasetKeypoints } from "./keypoints";

/** Pairs verified in one engine call, between cancel points. */
const PAIRS_PER_STEP = 4;
/** Engine memory of verifying a batch: its keypoints and matches beside the engine's own 16 MiB. */
const VERIFY_BYTES = 32 * 1024 ** 2;

export async function verify(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = VerifySpec.parse(ctx.params.verify ?? {});
  const dataset = datasetOf(ctx.lease);
  const keypoints = await datasetKeypoints(ctx);
  const { cameras, cameraOfImage } = datasetCameras(dataset, keypoints);
  const indexOf = new Map(dataset.images.map((im, i) => [im.name, i]));
  const camera = (i: number) => twoViewCamera(cameras[cameraOfImage[i]!]!);
  const matchFile = [...inputFiles(ctx.lease, "matches").values()][0]!;
  const pairs = decodeMatches(await ctx.read(matchFile.blob_sha));
  const inputs = pairs.map((pair) => {
    const i1 = indexOf.get(pair.imageName1);
    const i2 = indexOf.get(pair.imageName2);
    if (i1 === undefined || i2 === undefined) throw new Error(`matches name an image outside the dataset: ${pair.imageName1}, ${pair.imageName2}`);
    const input: TwoViewInput = {
      keypoints1: keypoints[i1]!.xy,
      keypoints2: keypoints[i2]!.xy,
      camera1: camera(i1),
      camera2: camera(i2),
      matches: pair.matches,
      options: { minInlierRatio: spec.min_inlier_ratio },
    };
    return { i1, i2, input };
  });
  const batches = Array.from({ length: Math.ceil(inputs.length / PAIRS_PER_STEP) }, (_, b) => inputs.slice(b * PAIRS_PER_STEP, (b + 1) * PAIRS_PER_STEP));
  const verifiedBatches = await eachItem(ctx, batches, { lanes: ctx.engines.lanes(VERIFY_BYTES), weight: (batch) => batch.length }, (batch) =>
    ctx.engines.verify(batch.map((p) => p.input)),
  );
  const out: VerifiedMatchesFile = {
    pairs: verifiedBatches.flat().map((g, p) => ({
      image_id1: imageIdAt(inputs[p]!.i1),
      image_id2: imageIdAt(inputs[p]!.i2),
      type: g.type,
      num_inliers: g.num_inliers,
      F: g.F,
      E: g.E,
      H: g.H,
      inlier_matches: g.inlier_matches,
    })),
    "x-images": dataset.images.map((im, i) => ({ image_id: imageIdAt(i), name: im.name, resource_id: im.image_id })),
  };
  const verified = out.pairs.filter((q) => q.num_inliers > 0);
  const inliers = verified.reduce((s, q) => s + q.num_inliers, 0);
  ctx.metric("num_verified_pairs", verified.length);
  ctx.metric("num_inlier_matches", inliers);
  const file = await ctx.write("two_view_geometries.json", new TextEncoder().encode(JSON.stringify(out)), VERIFIED_MATCHES_MEDIA_TYPE);
  await ctx.reconstructionFile("two_view_geometries.json", file);
  return {
    artifacts: [coreArtifact("matches.verified.v1", "verified matches", [file], { num_pairs: out.pairs.length, num_verified_pairs: verified.length, num_inlier_matches: inliers })],
    result: null,
  };
}

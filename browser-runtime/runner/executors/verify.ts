/**
 * @module Executor of `verify` shards (spec 4.6 VerifySpec): each block's matched pairs -> two-view
 * geometry in the engine (COLMAP's classification; calibrated E only when both cameras have a
 * prior focal length, else F/H) -> a `matches.verified.v1` artifact per block, whose one file is a
 * `two_view_geometries.json` (2.14) of the block's images (its `x-images` name them, so blocks
 * merge by name; the map task writes the reconstruction's whole file). Batches of pairs are
 * verified on the runner's engine pool, one batch per engine at once (items.ts); each pair's
 * RANSAC is seeded on its own, so a file is the same whichever engine verified it.
 */
import type { TwoViewInput, TwoViewResult } from "../../../engine-wasm/ts/two-view";
import { type ShardItem, type TaskOutputs, VerifySpec } from "../../../protocol";
import { type PairMatches, decodeMatches } from "../../../protocol/wire/matches";
import { VERIFIED_MATCHES_MEDIA_TYPE, type VerifiedMatchesFile, imageIdAt } from "../../../protocol/wire/verified-matches";
import { datasetCameras, twoViewCamera } from "../../stages/cameras";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf, inputFiles } from "./artifact";
import { eachItem } from "./items";
import { imageKeypoints } from "./keypoints";
import { blockPairs, shardImages, shardOf } from "./shard";

/** Pairs verified in one engine call, between cancel points. */
const PAIRS_PER_STEP = 4;
/** Engine memory of verifying a batch: its keypoints and matches beside the engine's own 16 MiB. */
const VERIFY_BYTES = 32 * 1024 ** 2;

/** Where a verify block's matches are: the match block of the same two image groups. */
const matchesPathOf = (item: ShardItem) => item.path.replace(/^two_view_geometries\/(.*)\.json$/, "matches/$1.bin");

export async function verify(ctx: TaskContext): Promise<TaskOutputs> {
  const spec = VerifySpec.parse(ctx.params.verify ?? {});
  const dataset = datasetOf(ctx.lease);
  const shard = shardOf(ctx.lease);
  const keypoints = await imageKeypoints(ctx, shardImages(shard));
  // Cameras as the whole dataset makes them (a shared camera's prior is its first image's); the
  // shard's images are sized by their features, the others by their headers.
  const sizes = dataset.images.map((im) => keypoints.get(im.name) ?? { width: im.width ?? 0, height: im.height ?? 0 });
  const { cameras, cameraOfImage } = datasetCameras(dataset, sizes);
  const indexOf = new Map(dataset.images.map((im, i) => [im.name, i]));
  const camera = (name: string) => twoViewCamera(cameras[cameraOfImage[indexOf.get(name)!]!]!);

  const matchFiles = inputFiles(ctx.lease, "matches");
  let everyMatch: PairMatches[] | null = null;
  const blockMatches = async (item: ShardItem): Promise<PairMatches[]> => {
    const own = matchFiles.get(matchesPathOf(item));
    if (own) return decodeMatches(await ctx.read(own.blob_sha));
    // Matches made otherwise (one file of every pair, an import): the block's pairs of all of them.
    everyMatch ??= (await Promise.all([...matchFiles.values()].map(async (f) => decodeMatches(await ctx.read(f.blob_sha))))).flat();
    return blockPairs(everyMatch, item);
  };

  const blocks = [];
  for (const item of shard.items) {
    const local = new Map(item.images.map((name, i) => [name, i]));
    const pairs = (await blockMatches(item)).map((pair) => {
      const [i1, i2] = [local.get(pair.imageName1), local.get(pair.imageName2)];
      if (i1 === undefined || i2 === undefined)
        throw new Error(`block ${item.path}: matches name an image outside it: ${pair.imageName1}, ${pair.imageName2}`);
      const input: TwoViewInput = {
        keypoints1: keypoints.get(pair.imageName1)!.xy,
        keypoints2: keypoints.get(pair.imageName2)!.xy,
        camera1: camera(pair.imageName1),
        camera2: camera(pair.imageName2),
        matches: pair.matches,
        options: { minInlierRatio: spec.min_inlier_ratio },
      };
      return { i1, i2, input };
    });
    blocks.push({ item, pairs });
  }
  const inputs = blocks.flatMap((b) => b.pairs);
  const batches = Array.from({ length: Math.ceil(inputs.length / PAIRS_PER_STEP) }, (_, b) =>
    inputs.slice(b * PAIRS_PER_STEP, (b + 1) * PAIRS_PER_STEP),
  );
  const geometries = (
    await eachItem(ctx, batches, { lanes: ctx.engines.lanes(VERIFY_BYTES), weight: (batch) => batch.length }, (batch) =>
      ctx.engines.verify(batch.map((p) => p.input)),
    )
  ).flat();

  const artifacts = [];
  let next = 0;
  for (const { item, pairs } of blocks) {
    const out: VerifiedMatchesFile = {
      pairs: pairs.map((p) => verifiedPair(p.i1, p.i2, geometries[next++]!)),
      "x-images": item.images.map((name, i) => ({
        image_id: imageIdAt(i),
        name,
        resource_id: dataset.images[indexOf.get(name)!]!.image_id,
      })),
    };
    const verified = out.pairs.filter((q) => q.num_inliers > 0);
    const inliers = verified.reduce((s, q) => s + q.num_inliers, 0);
    const file = await ctx.write(item.path, new TextEncoder().encode(JSON.stringify(out)), VERIFIED_MATCHES_MEDIA_TYPE);
    artifacts.push(
      coreArtifact("matches.verified.v1", "verified matches", [file], {
        num_pairs: out.pairs.length,
        num_verified_pairs: verified.length,
        num_inlier_matches: inliers,
      }),
    );
  }
  ctx.metric(
    "num_verified_pairs",
    artifacts.reduce((s, a) => s + (a.summary.num_verified_pairs as number), 0),
  );
  return { artifacts, result: null };
}

/** A pair's entry in two_view_geometries.json (2.14) from its verification, images by their index in the file's images. */
export function verifiedPair(index1: number, index2: number, g: TwoViewResult): VerifiedMatchesFile["pairs"][number] {
  return {
    image_id1: imageIdAt(index1),
    image_id2: imageIdAt(index2),
    type: g.type,
    num_inliers: g.num_inliers,
    F: g.F,
    E: g.E,
    H: g.H,
    inlier_matches: g.inlier_matches,
    "x-cam2_from_cam1": g.cam2_from_cam1,
  };
}

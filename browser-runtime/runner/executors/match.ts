/**
 * @module Executor of `match` shards (spec 2.12 PairsSpec + MatcherSpec): the task's pairs (chosen
 * over the whole dataset) that fall in each block of the shard -> brute-force descriptor matching
 * (WGSL or WASM, whichever is faster here) -> a `matches.indexed.v1` artifact per block, with the
 * block's one file. A block reads only its images' features. On WASM the shard's pairs are matched
 * on the runner's engine pool, one pair per engine at once (items.ts), in pair order.
 */
import { type Lease, MatcherSpec, PairsSpec, RETRIEVAL_INDEX_ROLE, type TaskOutputs } from "../../../protocol";
import { DHASH_INDEX_PATH, decodeDhashIndex } from "../../../protocol/wire/dhash";
import { decodeFeatures, type LocalFeatures } from "../../../protocol/wire/features";
import { MATCHES_MEDIA_TYPE, encodeMatches, type PairMatches } from "../../../protocol/wire/matches";
import { matchOptionsFromSpec } from "../../stages/match";
import { pairPositions, selectPairs } from "../../stages/pairs";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf, featuresPath, inputFiles } from "./artifact";
import { eachItem } from "./items";
import { blockPairs, shardImages, shardOf } from "./shard";

/** Engine memory of matching one pair: its two descriptor sets beside the engine's own 16 MiB (the matcher works in blocks). */
const MATCH_BYTES = 32 * 1024 ** 2;

export async function match(ctx: TaskContext): Promise<TaskOutputs> {
  const pairsSpec = PairsSpec.parse(ctx.params.pairs ?? {});
  const matcher = MatcherSpec.parse(ctx.params.matcher ?? {});
  const images = datasetOf(ctx.lease).images;
  const shard = shardOf(ctx.lease);
  const ids = new Map(images.map((i) => [i.name, i.image_id]));
  const featureFiles = inputFiles(ctx.lease, "features");
  const features = new Map<string, LocalFeatures>();
  for (const name of shardImages(shard)) {
    const file = featureFiles.get(featuresPath(name));
    if (!file) throw new Error(`no features for image '${name}' in the features input`);
    features.set(name, decodeFeatures(await ctx.read(file.blob_sha)));
  }
  const names = images.map((i) => i.name);
  const retrieval = pairsSpec.strategy === "retrieval" ? { hashes: await indexHashes(ctx, names) } : null;
  const located = pairsSpec.strategy === "spatial" || pairsSpec.strategy === "from_poses" ? pairPositions(images) : null;
  const all = selectPairs(names, pairsSpec, retrieval, located);
  const blocks = shard.items.map((item) => blockPairs(all, item));
  const pairs = blocks.flat();
  const sift = await ctx.sift();
  const options = matchOptionsFromSpec(matcher);
  const lanes = sift.matching === "wasm" ? ctx.engines.lanes(MATCH_BYTES) : 1;
  const matched: PairMatches[] = await eachItem(ctx, pairs, { lanes }, async ({ imageName1, imageName2 }) => {
    const matches = await sift.match(features.get(imageName1)!.descriptors, features.get(imageName2)!.descriptors, options);
    return { imageName1, imageName2, imageId1: ids.get(imageName1)!, imageId2: ids.get(imageName2)!, matches };
  });
  ctx.metric(
    "num_matches",
    matched.reduce((s, p) => s + p.matches.length / 2, 0),
  );
  const artifacts = [];
  let next = 0;
  for (const [b, item] of shard.items.entries()) {
    const mine = matched.slice(next, (next += blocks[b]!.length));
    const file = await ctx.write(item.path, encodeMatches(mine), MATCHES_MEDIA_TYPE);
    artifacts.push(
      coreArtifact("matches.indexed.v1", "descriptor matches", [file], {
        num_pairs: mine.length,
        num_matches: mine.reduce((s, p) => s + p.matches.length / 2, 0),
      }),
    );
  }
  return { artifacts, result: null };
}

/**
 * The dHash of each image (in `names` order) from the dataset's similarity index: the one the
 * service resolved for a matches stage, else the output of the job's own `vlad` task (a pipeline).
 */
async function indexHashes(ctx: TaskContext, names: string[]): Promise<string[]> {
  const file = indexFile(ctx.lease);
  const index = decodeDhashIndex(await ctx.read(file.blob_sha));
  const byName = new Map(index.images.map((im) => [im.name, im.dhash]));
  return names.map((name) => {
    const hash = byName.get(name);
    if (!hash) throw new Error(`the similarity index has no hash for image '${name}'`);
    return hash;
  });
}

function indexFile(lease: Lease): { blob_sha: string } {
  const artifact =
    lease.inputs.artifacts[RETRIEVAL_INDEX_ROLE] ??
    lease.inputs.upstream
      .filter((up) => up.kind === "vlad")
      .flatMap((up) => up.outputs_ref.artifacts)
      .find((a) => a.kind === "features.global.v1");
  const file = artifact?.files.find((f) => f.path === DHASH_INDEX_PATH);
  if (!file)
    throw new Error("retrieval pairs: the lease carries no similarity index (neither a resolved index nor an upstream vlad output)");
  return file;
}

/**
 * @module Executor of `match` tasks (spec 2.12 PairsSpec + MatcherSpec): the features input
 * -> image pairs -> brute-force descriptor matching (WGSL or WASM, whichever is faster here) ->
 * one `matches.indexed.v1` artifact.
 */
import { MatcherSpec, PairsSpec, type TaskOutputs } from "../../../protocol";
import { decodeFeatures, type LocalFeatures } from "../../../protocol/wire/features";
import { MATCHES_MEDIA_TYPE, encodeMatches, type PairMatches } from "../../../protocol/wire/matches";
import { matchOptionsFromSpec } from "../../stages/match";
import { selectPairs } from "../../stages/pairs";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf, featuresPath, inputFiles } from "./artifact";


export async function match(ctx: TaskContext): Promise<TaskOutputs> {
  const pairsSpec = PairsSpec.parse(ctx.params.pairs ?? {});
  const matcher = MatcherSpec.parse(ctx.params.matcher ?? {});
  const images = datasetOf(ctx.lease).images;
  const names = images.map((i) => i.name);
  const ids = new Map(images.map((i) => [i.name, i.image_id]));
  const featureFiles = inputFiles(ctx.lease, "features");
  const features = new Map<string, LocalFeatures>();
  for (const name of names) {
    const file = featureFiles.get(featuresPath(name));
    if (!file) throw new Error(`no features for image '${name}' in the features input`);
    features.set(name, decodeFeatures(await ctx.read(file.blob_sha)));
  }
  const pairs = selectPairs(names, pairsSpec);
  const sift = await ctx.sift();
  const options = matchOptionsFromSpec(matcher);
  const matched: PairMatches[] = [];
  ctx.progress(0, pairs.length);
  for (const [i, { imageName1, imageName2 }] of pairs.entries()) {
    await ctx.cancelPoint();
    const matches = await sift.match(features.get(imageName1)!.descriptors, features.get(imageName2)!.descriptors, options);
    matched.push({ imageName1, imageName2, imageId1: ids.get(imageName1)!, imageId2: ids.get(imageName2)!, matches });
    ctx.progress(i + 1, pairs.length);
  }
  const total = matched.reduce((s, p) => s + p.matches.length / 2, 0);
  ctx.metric("num_matches", total);
  const file = await ctx.write("matches.bin", encodeMatches(matched), MATCHES_MEDIA_TYPE);
  return {
    artifacts: [coreArtifact("matches.indexed.v1", "descriptor matches", [file], { num_pairs: matched.length, num_matches: total })],
    result: null,
  };
}

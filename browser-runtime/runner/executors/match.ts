/**
 * @module Executor of `match` tasks (spec 2.12 PairsSpec + MatcherSpec): the upstream features
 * -> image pairs -> brute-force descriptor matching -> one `matches.indexed.v1` artifact.
 */
import { MatcherSpec, PairsSpec, type TaskOutputs } from "../../../protocol";
import { decodeFeatures, type LocalFeatures } from "../../../protocol/wire/features";
import { MATCHES_MEDIA_TYPE, encodeMatches, type PairMatches } from "../../../protocol/wire/matches";
import { matchFeatures } from "../../stages/match";
import { selectPairs } from "../../stages/pairs";
import type { TaskContext } from "../task-context";
import { coreArtifact, featuresPath, upstreamFiles } from "./artifact";

/** Pairs matched between progress reports and cancel points. */
const PAIRS_PER_STEP = 4;

export async function match(ctx: TaskContext): Promise<TaskOutputs> {
  const pairsSpec = PairsSpec.parse(ctx.params.pairs ?? {});
  const matcher = MatcherSpec.parse(ctx.params.matcher ?? {});
  const images = ctx.lease.inputs.dataset.images;
  const names = images.map((i) => i.name);
  const ids = new Map(images.map((i) => [i.name, i.image_id]));
  const featureFiles = upstreamFiles(ctx.lease, "extract", "features.local.v1");
  const features = new Map<string, LocalFeatures>();
  for (const name of names) {
    const file = featureFiles.get(featuresPath(name));
    if (!file) throw new Error(`no features for image '${name}' upstream`);
    features.set(name, decodeFeatures(await ctx.read(file.blob_sha)));
  }
  const pairs = selectPairs(names, pairsSpec);
  const engine = await ctx.engine();
  const matched: PairMatches[] = [];
  ctx.progress(0, pairs.length);
  for (let i = 0; i < pairs.length; i += PAIRS_PER_STEP) {
    await ctx.cancelPoint();
    const step = matchFeatures(engine, { features, pairs: pairs.slice(i, i + PAIRS_PER_STEP), imageIds: ids, spec: matcher });
    matched.push(...step.pairs);
    ctx.progress(Math.min(i + PAIRS_PER_STEP, pairs.length), pairs.length);
  }
  const total = matched.reduce((s, p) => s + p.matches.length / 2, 0);
  ctx.metric("num_matches", total);
  const file = await ctx.write("matches.bin", encodeMatches(matched), MATCHES_MEDIA_TYPE);
  return {
    artifacts: [coreArtifact("matches.indexed.v1", "descriptor matches", [file], { num_pairs: matched.length, num_matches: total })],
    result: null,
  };
}

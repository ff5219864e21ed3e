/**
 * @module Executor of `match` shards (spec 2.12 PairsSpec + MatcherSpec): the task's pairs (chosen
 * over the whole dataset) that fall in each block of the shard -> brute-force descriptor matching
 * (WGSL or WASM, whichever is faster here, or the provider the task is routed to) -> a `matches.indexed.v1` artifact per block, with the
 * block's one file. A block reads only its images' features, as its pairs need them, and the
 * shard holds at most MATCH_HELD_IMAGES images' features at once (held-images.ts; a block of a
 * large set has hundreds of images), visiting the pairs tile by tile. On WASM the shard's pairs are
 * matched on the runner's engine pool, one pair per engine at once (items.ts); each block's file
 * lists its pairs in pair-list order, whatever order they were matched in. After the blocks' matches
 * the shard answers each block's pair list (`pairs.image_names.v1`, `pairs/<a>-<b>.txt`), whatever
 * strategy chose it, so the task's pair list is an artifact (runners.md "Shards"). Retrieval,
 * vocabulary-tree, spatial and from-poses pairs are chosen once, by the task's first shard (one item
 * at PAIR_LIST_PATH, answered with the whole list); the blocks the service plans from it read that file.
 */
import { CORE_ARTIFACT_KINDS, type Lease, MatcherSpec, PairsSpec, RETRIEVAL_INDEX_ROLE, type TaskOutputs } from "../../../protocol";
import { DHASH_INDEX_PATH, decodeDhashIndex } from "../../../protocol/wire/dhash";
import { decodeFeatures, type LocalFeatures } from "../../../protocol/wire/features";
import { VLAD_INDEX_PATH, decodeVladIndex } from "../../../protocol/wire/vlad";
import { BOW_INDEX_PATH, decodeBowIndex } from "../../../protocol/wire/bow";
import {
  PAIR_LIST_PATH,
  blockPairListPath,
  explicitPairs,
  pairListText,
  pairRowsOfList,
  pairRowsOfText,
} from "../../../protocol/wire/pairs";
import { MATCHES_MEDIA_TYPE, encodeMatches, type PairMatches } from "../../../protocol/wire/matches";
import { matchOptionsFromSpec } from "../../stages/match";
import { type ImagePair, type RetrievalIndex, pairPositions, selectPairs, sequenceOrder } from "../../stages/pairs";
import { siftFor, stagesFor } from "../../gpu/select";
import type { TaskContext } from "../task-context";
import { coreArtifact, datasetOf, featuresPath, inputFiles } from "./artifact";
import { HeldImages, localityOrder } from "./held-images";
import { atMost } from "../../../client/index";
import { eachItem, yieldToIo } from "./items";
import { blockPairs, shardImages, shardOf } from "./shard";

/** Engine memory of matching one pair: its two descriptor sets beside the engine's own 16 MiB (the matcher works in blocks). */
const MATCH_BYTES = 32 * 1024 ** 2;
/**
 * Images whose features a match shard holds at once (more only while more pairs are in flight: two
 * per pair). 8192 SIFT features take 1.2 MiB, so about 30 MiB; a block of two content groups of up
 * to 8 images each fits whole, and is read once.
 */
export const MATCH_HELD_IMAGES = 24;
/** A shard's block files uploaded at once. */
const UPLOADS_AT_ONCE = 8;

export async function match(ctx: TaskContext): Promise<TaskOutputs> {
  const pairsSpec = PairsSpec.parse(ctx.params.pairs ?? {});
  const matcher = MatcherSpec.parse(ctx.params.matcher ?? {});
  const images = datasetOf(ctx.lease).images;
  const shard = shardOf(ctx.lease);
  const ids = new Map(images.map((i) => [i.name, i.image_id]));
  const featureFiles = inputFiles(ctx.lease, "features");
  const held = new HeldImages<LocalFeatures>(MATCH_HELD_IMAGES, async (name) => {
    const file = featureFiles.get(featuresPath(name));
    if (!file) throw new Error(`no features for image '${name}' in the features input`);
    return decodeFeatures(await ctx.read(file.blob_sha));
  });
  const names = images.map((i) => i.name);
  const located = pairsSpec.strategy === "spatial" || pairsSpec.strategy === "from_poses" ? pairPositions(images) : null;
  const indexed = pairsSpec.strategy === "retrieval" || pairsSpec.strategy === "vocabtree";
  // Pairs chosen on a runner are chosen once, by the task's first shard; the blocks planned from them read that list.
  const chosen = shard.items.flatMap((it) => it.reads ?? []).find((f) => f.path === PAIR_LIST_PATH);
  const all = chosen
    ? await chosenPairs(ctx, chosen.blob_sha)
    : indexed
      ? await retrievalPairs(ctx, names, pairsSpec)
      : pairsSpec.strategy === "explicit"
        ? await listedPairs(ctx, names, pairsSpec)
        : selectPairs(pairsSpec.strategy === "sequential" ? sequenceOrder(images) : names, pairsSpec, null, located);
  if (shard.items.length === 1 && shard.items[0]!.path === PAIR_LIST_PATH) return pairList(ctx, all, pairsSpec.strategy);
  const blocks = shard.items.map((item) => blockPairs(all, item));
  const pairs = blocks.flat();
  // use_gpu: false (2.12) keeps the task on the WASM path, whatever this device's calibration chose.
  const sift = siftFor(stagesFor(await ctx.sift(), matcher.use_gpu), matcher.provider);
  const options = matchOptionsFromSpec(matcher);
  const lanes = sift.matching === "wasm" ? ctx.engines.lanes(MATCH_BYTES) : 1;
  const matched = new Array<PairMatches>(pairs.length);
  const order = localityOrder(pairs, MATCH_HELD_IMAGES / 2);
  try {
    await eachItem(ctx, order, { lanes }, async (k, i) => {
      const { imageName1, imageName2 } = pairs[k]!;
      const [features1, features2] = await held.acquire([imageName1, imageName2]);
      try {
        // The features of the pair this lane takes next are read while this one is matched (issue 17: a runner reads
        // those another extracted), the request sent before a computation in this thread holds it.
        const after = pairs[order[i + lanes] ?? -1];
        if (after) {
          held.warm([after.imageName1, after.imageName2]);
          await yieldToIo();
        }
        const matches = await sift.match(features1!.descriptors, features2!.descriptors, options);
        matched[k] = { imageName1, imageName2, imageId1: ids.get(imageName1)!, imageId2: ids.get(imageName2)!, matches };
      } finally {
        held.release([imageName1, imageName2]);
      }
    });
  } finally {
    await held.settled();
  }
  ctx.log(
    "INFO",
    `matched ${pairs.length} pairs of ${shardImages(shard).size} images holding the features of at most ${held.peak} at once (${held.reads} reads)`,
  );
  ctx.metric(
    "num_matches",
    matched.reduce((s, p) => s + p.matches.length / 2, 0),
  );
  // The blocks' files are uploaded at once (in item order all the same): one after another, a shard of many blocks waited on a
  // round trip per file (issue 17).
  let next = 0;
  const mine = shard.items.map((_, b) => matched.slice(next, (next += blocks[b]!.length)));
  const matchFiles = await atMost(UPLOADS_AT_ONCE, shard.items, (item, b) =>
    ctx.write(item.path, encodeMatches(mine[b]!), MATCHES_MEDIA_TYPE),
  );
  const listFiles = await atMost(UPLOADS_AT_ONCE, shard.items, (item, b) =>
    ctx.write(
      blockPairListPath(item.path)!,
      new TextEncoder().encode(pairListText(item.path, blocks[b]!)),
      CORE_ARTIFACT_KINDS["pairs.image_names.v1"].media_type,
    ),
  );
  const artifacts = [
    ...mine.map((pairs, b) =>
      coreArtifact("matches.indexed.v1", "descriptor matches", [matchFiles[b]!], {
        num_pairs: pairs.length,
        num_matches: pairs.reduce((s, p) => s + p.matches.length / 2, 0),
      }),
    ),
    ...blocks.map((pairs, b) => coreArtifact("pairs.image_names.v1", "image pairs", [listFiles[b]!], { num_pairs: pairs.length })),
  ];
  return { artifacts, result: null };
}

/**
 * The last retrieval or explicit pairs this runner chose, by index file or list and spec: VLAD pairs
 * cost O(n^2) dot products of 4096 values, a listed upload is read and parsed, and every match
 * shard of a job needs the same list.
 */
let lastPairs: { key: string; pairs: ImagePair[] } | null = null;

async function cachedPairs(key: string, choose: () => Promise<ImagePair[]>): Promise<ImagePair[]> {
  if (lastPairs?.key !== key) lastPairs = { key, pairs: await choose() };
  return lastPairs.pairs;
}

async function retrievalPairs(ctx: TaskContext, names: string[], spec: PairsSpec): Promise<ImagePair[]> {
  const files = indexFiles(ctx.lease);
  const file = files.find((f) => [VLAD_INDEX_PATH, BOW_INDEX_PATH, DHASH_INDEX_PATH].includes(f.path));
  if (!file)
    throw new Error("retrieval pairs: the lease carries no similarity index (neither a resolved index nor an upstream vlad output)");
  const key = JSON.stringify([file.blob_sha, spec.strategy, spec.retrieval_k, spec.overlap, names]);
  return cachedPairs(key, async () => selectPairs(names, spec, await retrievalIndex(ctx, file, names)));
}

/** The pair list the task's first shard chose (PAIR_LIST_PATH), as its blocks read it. */
async function chosenPairs(ctx: TaskContext, sha: string): Promise<ImagePair[]> {
  return cachedPairs(JSON.stringify(["chosen", sha]), async () =>
    pairRowsOfText(new TextDecoder().decode(await ctx.read(sha))).map(({ names: [imageName1, imageName2] }) => ({
      imageName1: imageName1!,
      imageName2: imageName2!,
    })),
  );
}

/** The list shard of pairs chosen on a runner: the whole list, one file, from which the service plans the task's blocks. */
async function pairList(ctx: TaskContext, pairs: ImagePair[], strategy: string): Promise<TaskOutputs> {
  const kind = CORE_ARTIFACT_KINDS["pairs.image_names.v1"];
  const file = await ctx.write(PAIR_LIST_PATH, new TextEncoder().encode(pairListText(`the ${strategy} pairs`, pairs)), kind.media_type);
  ctx.log("INFO", `chose ${pairs.length} ${strategy} pairs`);
  return { artifacts: [coreArtifact("pairs.image_names.v1", "image pairs", [file], { num_pairs: pairs.length })], result: null };
}

/**
 * Explicit pairs (2.12): `image_pairs`, or the `image1 image2` rows of the upload the job holds,
 * read as the service checked them at submission (protocol/wire/pairs.ts).
 */
async function listedPairs(ctx: TaskContext, names: string[], spec: PairsSpec): Promise<ImagePair[]> {
  const sha = spec.pairs_blob_sha;
  const key = JSON.stringify([sha ?? spec.image_pairs, names]);
  return cachedPairs(key, async () => {
    const rows = sha ? pairRowsOfText(new TextDecoder().decode(await ctx.read(sha))) : pairRowsOfList(spec.image_pairs ?? []);
    const { pairs, errors } = explicitPairs(names, rows);
    if (errors.length > 0) throw new Error(`explicit pairs: row ${errors[0]!.row}: ${errors[0]!.message}`);
    return pairs.map(([i, j]) => ({ imageName1: names[i]!, imageName2: names[j]! }));
  });
}

/**
 * The dataset's similarity index, in `names` order, from its file: the one the service resolved
 * for a matches stage, else the output of the job's own `vlad` task (a pipeline). dHash or VLAD.
 */
async function retrievalIndex(ctx: TaskContext, file: { path: string; blob_sha: string }, names: string[]): Promise<RetrievalIndex> {
  if (file.path === BOW_INDEX_PATH) {
    const byName = new Map(decodeBowIndex(await ctx.read(file.blob_sha)).images.map((im) => [im.name, im]));
    return {
      bags: names.map((name) => {
        const bag = byName.get(name);
        if (!bag) throw new Error(`the vocabulary-tree index has no words for image '${name}'`);
        return { words: bag.words, counts: bag.counts };
      }),
    };
  }
  if (file.path === VLAD_INDEX_PATH) {
    const index = decodeVladIndex(await ctx.read(file.blob_sha));
    const row = new Map(index.images.map((im, i) => [im.name, i]));
    const vectors = new Float32Array(names.length * index.dim);
    names.forEach((name, i) => {
      const at = row.get(name);
      if (at === undefined) throw new Error(`the similarity index has no vector for image '${name}'`);
      vectors.set(index.vectors.subarray(at * index.dim, (at + 1) * index.dim), i * index.dim);
    });
    return { vectors, dim: index.dim };
  }
  const index = decodeDhashIndex(await ctx.read(file.blob_sha));
  const byName = new Map(index.images.map((im) => [im.name, im.dhash]));
  return {
    hashes: names.map((name) => {
      const hash = byName.get(name);
      if (!hash) throw new Error(`the similarity index has no hash for image '${name}'`);
      return hash;
    }),
  };
}

function indexFiles(lease: Lease): { path: string; blob_sha: string }[] {
  const artifact =
    lease.inputs.artifacts[RETRIEVAL_INDEX_ROLE] ??
    lease.inputs.upstream
      .filter((up) => up.kind === "vlad")
      .flatMap((up) => up.outputs_ref.artifacts)
      .find((a) => a.kind === "features.global.v1");
  return artifact?.files ?? [];
}

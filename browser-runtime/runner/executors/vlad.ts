/**
 * @module Executor of `vlad` tasks (phase `vlad_index`): the dataset's similarity index for
 * retrieval pairs (2.12) and `GET .../similarity` (4.11), one `features.global.v1` artifact.
 * Strategy `dhash`: each image read and decoded as extraction decodes it (the dataset's EXIF
 * orientation rule), hashed with the one definition the service also uses (protocol/wire/dhash.ts).
 * Strategy `vlad`: each image's VLAD vector (browser-runtime/stages/vlad.ts, the shipped codebook)
 * from the features the job's extract task produced, one image's features in memory at a time.
 * Strategy `vocabtree` (pairs `vocabtree`): each image's bag of words in the shipped vocabulary
 * tree (browser-runtime/stages/vocab-tree.ts), from the same features.
 */
import type { TaskOutputs } from "../../../protocol";
import { DHASH_INDEX_MEDIA_TYPE, DHASH_INDEX_PATH, dhash, dhashIndexArtifact, encodeDhashIndex } from "../../../protocol/wire/dhash";
import { decodeFeatures } from "../../../protocol/wire/features";
import { VLAD_DIM, VLAD_INDEX_MEDIA_TYPE, VLAD_INDEX_PATH, encodeVladIndex, vladIndexArtifact } from "../../../protocol/wire/vlad";
import {
  BOW_INDEX_FORMAT,
  BOW_INDEX_MEDIA_TYPE,
  BOW_INDEX_PATH,
  DEFAULT_VOCAB_TREE_ID,
  bowIndexArtifact,
  encodeBowIndex,
} from "../../../protocol/wire/bow";
import { vlad as vladVector } from "../../stages/vlad";
import { DEFAULT_CODEBOOK, DEFAULT_TREE } from "../../stages/vocab";
import { bagOfWords, vocabTreeFromBytes } from "../../stages/vocab-tree";
import type { TaskContext } from "../task-context";
import { datasetOf, featuresPath, inputFiles } from "./artifact";
import { eachItem } from "./items";

export async function vlad(ctx: TaskContext): Promise<TaskOutputs> {
  const strategy = (ctx.params.similarity as { strategy?: string } | undefined)?.strategy;
  if (strategy === "dhash") return dhashIndex(ctx);
  if (strategy === "vlad") return vladIndex(ctx);
  if (strategy === "vocabtree") return bowIndex(ctx);
  throw new Error(`vlad: similarity strategy '${strategy}' is not computed by this runner`);
}

async function dhashIndex(ctx: TaskContext): Promise<TaskOutputs> {
  const dataset = datasetOf(ctx.lease);
  // One image at a time: decoding is the work, and a decoded photo is the memory.
  const hashes = await eachItem(ctx, dataset.images, { lanes: 1 }, async (image) => {
    const decoded = await ctx.decode(await ctx.read(image.content_sha), { respectExifOrientation: dataset.respect_exif_orientation });
    return dhash(decoded);
  });
  const bytes = encodeDhashIndex(dataset.images.map((im, i) => ({ name: im.name, content_sha: im.content_sha, dhash: hashes[i]! })));
  const file = await ctx.write(DHASH_INDEX_PATH, bytes, DHASH_INDEX_MEDIA_TYPE);
  ctx.log("INFO", `dHash of ${dataset.images.length} images`);
  return { artifacts: [dhashIndexArtifact(file, dataset.images.length, dataset.manifest_hash)], result: null };
}

async function vladIndex(ctx: TaskContext): Promise<TaskOutputs> {
  const dataset = datasetOf(ctx.lease);
  const codebook = DEFAULT_CODEBOOK;
  if (codebook.words * codebook.dim !== VLAD_DIM)
    throw new Error(`codebook ${codebook.id} gives ${codebook.words * codebook.dim} dimensions`);
  const featureFiles = inputFiles(ctx.lease, "features");
  const vectors = new Float32Array(dataset.images.length * VLAD_DIM);
  await eachItem(ctx, dataset.images, { lanes: 1 }, async (image, i) => {
    const file = featureFiles.get(featuresPath(image.name));
    if (!file) throw new Error(`no features for image '${image.name}' in the features input`);
    vectors.set(vladVector(decodeFeatures(await ctx.read(file.blob_sha)), codebook), i * VLAD_DIM);
  });
  const images = dataset.images.map((im) => ({ name: im.name, content_sha: im.content_sha }));
  const bytes = encodeVladIndex({ codebook: codebook.id, images, dim: VLAD_DIM, vectors });
  const file = await ctx.write(VLAD_INDEX_PATH, bytes, VLAD_INDEX_MEDIA_TYPE);
  ctx.log("INFO", `VLAD (${codebook.id}) of ${dataset.images.length} images`);
  return { artifacts: [vladIndexArtifact(file, dataset.images.length, dataset.manifest_hash, codebook.id)], result: null };
}

async function bowIndex(ctx: TaskContext): Promise<TaskOutputs> {
  const dataset = datasetOf(ctx.lease);
  // An uploaded tree is a blob the job holds (`vocab_tree_path: "blob:<sha256>"`); else the shipped one.
  const uploaded = (ctx.params.similarity as { tree_blob_sha?: string | null }).tree_blob_sha ?? null;
  if (uploaded === null && DEFAULT_TREE.id !== DEFAULT_VOCAB_TREE_ID)
    throw new Error(`this runner ships tree ${DEFAULT_TREE.id}, the service names ${DEFAULT_VOCAB_TREE_ID}`);
  const tree = uploaded === null ? DEFAULT_TREE : vocabTreeFromBytes(await ctx.read(uploaded));
  const featureFiles = inputFiles(ctx.lease, "features");
  const bags = await eachItem(ctx, dataset.images, { lanes: 1 }, async (image) => {
    const file = featureFiles.get(featuresPath(image.name));
    if (!file) throw new Error(`no features for image '${image.name}' in the features input`);
    return bagOfWords(decodeFeatures(await ctx.read(file.blob_sha)), tree);
  });
  const images = dataset.images.map((im, i) => ({ name: im.name, content_sha: im.content_sha, ...bags[i]! }));
  const bytes = encodeBowIndex({ format: BOW_INDEX_FORMAT, tree: tree.id, images });
  const file = await ctx.write(BOW_INDEX_PATH, bytes, BOW_INDEX_MEDIA_TYPE);
  ctx.log("INFO", `bags of words (${tree.id}) of ${dataset.images.length} images`);
  return { artifacts: [bowIndexArtifact(file, dataset.images.length, dataset.manifest_hash, tree.id)], result: null };
}

/**
 * @module Executor of `vlad` tasks (phase `vlad_index`): the dataset's similarity index for
 * retrieval pairs (2.12) and `GET .../similarity` (4.11). Strategy `dhash`: each image read and
 * decoded as extraction decodes it (the dataset's EXIF orientation rule), hashed with the one
 * definition the service also uses (protocol/wire/dhash.ts), into one `features.global.v1`
 * artifact whose file lists every image of the dataset with its hash.
 */
import type { TaskOutputs } from "../../../protocol";
import { DHASH_INDEX_MEDIA_TYPE, DHASH_INDEX_PATH, dhash, dhashIndexArtifact, encodeDhashIndex } from "../../../protocol/wire/dhash";
import type { TaskContext } from "../task-context";
import { datasetOf } from "./artifact";
import { eachItem } from "./items";

export async function vlad(ctx: TaskContext): Promise<TaskOutputs> {
  const strategy = (ctx.params.similarity as { strategy?: string } | undefined)?.strategy;
  if (strategy !== "dhash") throw new Error(`vlad: similarity strategy '${strategy}' is not computed by this runner`);
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

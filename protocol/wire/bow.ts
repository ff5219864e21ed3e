/**
 * @module The bag-of-words index of vocabulary-tree pairs (2.12 `pairs.vocabtree`): every image of
 * the dataset (in dataset order) by name and content, with its visual words (leaves of the tree
 * named by `tree`, ascending) and their counts. Computed by a runner's `vlad` task
 * (browser-runtime/stages/vocab-tree.ts), read by the matcher.
 */
import { z } from "zod";
import type { ArtifactDescriptor } from "../artifacts";
import { Sha256 } from "../schemas/common";

/** The one tree this deployment's runners ship (browser-runtime/stages/vocab/): the only `vocab_tree_path` accepted besides null. */
export const DEFAULT_VOCAB_TREE_ID = "tree-rootsift-b10-l3.v1";

export const BOW_INDEX_FORMAT = "edgesfm.features.global.bow.v1";
export const BOW_INDEX_MEDIA_TYPE = "application/json";
export const BOW_INDEX_PATH = "similarity/bow.json";

export const BowIndex = z.object({
  format: z.literal(BOW_INDEX_FORMAT),
  tree: z.string().min(1),
  images: z.array(
    z.object({ name: z.string(), content_sha: Sha256, words: z.array(z.number().int().min(0)), counts: z.array(z.number().int().min(1)) }),
  ),
});
export type BowIndex = z.infer<typeof BowIndex>;

export const encodeBowIndex = (index: BowIndex): Uint8Array => new TextEncoder().encode(JSON.stringify(index));
export const decodeBowIndex = (bytes: Uint8Array): BowIndex => BowIndex.parse(JSON.parse(new TextDecoder().decode(bytes)));

/** The index's artifact descriptor (2.11): a `features.global.v1` with its one file. */
export function bowIndexArtifact(
  file: ArtifactDescriptor["files"][number],
  numImages: number,
  manifestHash: string,
  tree: string,
): ArtifactDescriptor {
  return {
    kind: "features.global.v1",
    name: "vocabulary-tree bag-of-words index",
    uri: null,
    artifact_format: BOW_INDEX_FORMAT,
    schema_version: 1,
    media_type: BOW_INDEX_MEDIA_TYPE,
    summary: { strategy: "vocabtree", num_images: numImages, tree },
    metadata: { manifest_hash: manifestHash },
    files: [file],
  };
}

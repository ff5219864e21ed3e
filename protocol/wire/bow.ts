/**
 * @module The bag-of-words index of vocabulary-tree pairs (2.12 `pairs.vocabtree`): every image of
 * the dataset (in dataset order) by name and content, with its visual words (leaves of the tree
 * named by `tree`, ascending) and their counts. Computed by a runner's `vlad` task
 * (browser-runtime/stages/vocab-tree.ts), read by the matcher.
 */
import { z } from "zod";
import type { ArtifactDescriptor } from "../artifacts";
import { Sha256 } from "../schemas/common";

/** The tree this deployment's runners ship (browser-runtime/stages/vocab/), chosen by a `vocab_tree_path` of null or this id. */
export const DEFAULT_VOCAB_TREE_ID = "tree-rootsift-b10-l3.v1";

/** `vocab_tree_path: "blob:<sha256>"` names a tree the tenant uploaded (a finalized upload, 4.3) in the form VocabTreeFile. */
export const VOCAB_TREE_BLOB = /^blob:([0-9a-f]{64})$/;

/** The largest tree file accepted: 8 branches x 6 levels of 128-byte nodes is 39 MB of base64. */
export const MAX_VOCAB_TREE_BYTES = 64 << 20;

/**
 * A vocabulary tree file (scripts/train-vocab.ts --kind tree writes one): RootSIFT node centroids
 * level by level (level l holds branching^l nodes), each value quantised to a byte (x 255), base64.
 */
export const VocabTreeFile = z
  .object({
    format: z.literal("edgesfm.vocab.tree.v1"),
    id: z.string().min(1).max(200),
    branching: z.number().int().min(2).max(256),
    depth: z.number().int().min(1).max(8),
    dim: z.number().int().min(1).max(1024),
    descriptor: z.literal("rootsift"),
    training: z.record(z.string(), z.unknown()),
    nodes: z.string(),
  })
  .superRefine((t, ctx) => {
    let values = 0;
    for (let l = 1, count = t.branching; l <= t.depth; l += 1, count *= t.branching) values += count * t.dim;
    const bytes = Math.floor((t.nodes.length * 3) / 4) - (t.nodes.endsWith("==") ? 2 : t.nodes.endsWith("=") ? 1 : 0);
    if (values > MAX_VOCAB_TREE_BYTES || bytes !== values || !/^[A-Za-z0-9+/]*={0,2}$/.test(t.nodes))
      ctx.addIssue({ code: "custom", path: ["nodes"], message: `base64 of ${values} bytes (dim x branching^1..depth)` });
  });
export type VocabTreeFile = z.infer<typeof VocabTreeFile>;

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

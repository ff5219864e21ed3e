/**
 * @module Similarity (spec 4.11, capabilities `similarity.dhash` / `similarity.vlad`): the query of
 * `GET /v1/datasets/{did}/similarity`, its answer, and the manifest `:build` answers for dhash. The
 * indices themselves are the wire formats of wire/dhash.ts and wire/vlad.ts.
 */
import { z } from "zod";
import { Id, Links, Sha256, Timestamp, queryNumber } from "./schemas/common";

/**
 * The role under which a matches stage's lease carries the dataset's similarity index for
 * retrieval pairs (2.11: backend-specific roles use the dot-key syntax); in a pipeline the index
 * is the output of the job's own `vlad` task instead.
 */
export const RETRIEVAL_INDEX_ROLE = "edgesfm.similarity_index";

/** The capabilities pairs of this spec need (1.2): the strategy's, and for retrieval its index's. */
export function pairsCapabilities(pairs: { strategy: string; retrieval_strategy: string }): string[] {
  return pairs.strategy === "retrieval" ? ["pairs.retrieval", `similarity.${pairs.retrieval_strategy}`] : [`pairs.${pairs.strategy}`];
}

export const SIMILARITY_STRATEGIES = ["dhash", "vlad"] as const;
export const SimilarityStrategy = z.enum(SIMILARITY_STRATEGIES);
export type SimilarityStrategy = z.infer<typeof SimilarityStrategy>;
/** 8 (Limits): at most 1000 neighbours per query. */
export const MAX_SIMILARITY_K = 1000;

const Flag = z
  .enum(["true", "false"])
  .default("false")
  .transform((v) => v === "true");

export const SimilarityQuery = z.object({
  image_id: Id.describe("the query image, one of the dataset's"),
  k: queryNumber(z.number().int().min(1).max(MAX_SIMILARITY_K))
    .default(5)
    .describe("how many images to answer, the query image included when include_self is true"),
  strategy: SimilarityStrategy.default("dhash"),
  include_self: Flag.describe("answer the query image first, at distance 0 (4.11 rule 3)"),
});

export const SimilarityNeighbors = z
  .object({
    query_image_id: Id,
    strategy: SimilarityStrategy,
    k: z.number().int(),
    neighbors: z
      .array(z.object({ image_id: Id, distance: z.number() }))
      .describe("ascending by distance (dhash: Hamming distance in [0, 64]; vlad: max(0, 1 - cosine) in [0, 2]; ties in dataset order)"),
  })
  .meta({ id: "SimilarityNeighbors" });
export type SimilarityNeighbors = z.infer<typeof SimilarityNeighbors>;

export const SimilarityBuildQuery = z.object({
  strategy: SimilarityStrategy.default("dhash"),
  force: Flag.describe(
    "compute the index again (dhash: every image hashed from its bytes; vlad: every VLAD vector, from the cached features), even when an index for the dataset's manifest exists; the new index replaces it",
  ),
});

/** What `:build` answers for `dhash` (4.11: 200 manifest). The fields are this deployment's: the spec names none. */
export const SimilarityManifest = z
  .object({
    dataset_id: Id,
    strategy: SimilarityStrategy,
    manifest_hash: Sha256.describe("the dataset manifest the index was built for (4.11 rule 4)"),
    num_images: z.number().int(),
    bits: z.number().int().describe("bits per image hash"),
    built: z.boolean().describe("true when this request computed the index, false when the one for this manifest already existed"),
    artifact_id: Id.describe("the index as a stage artifact (`features.global.v1`, format edgesfm.features.global.dhash.v1)"),
    job_id: Id.describe("the job that owns the artifact"),
    created_at: Timestamp,
    _links: Links,
  })
  .meta({ id: "SimilarityManifest" });
export type SimilarityManifest = z.infer<typeof SimilarityManifest>;

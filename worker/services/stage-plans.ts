/**
 * @module What a stage (4.6) or pipeline (4.7) submission runs: its task chain, the capabilities
 * it needs and the input roles it reads, planned from the validated body. Shared by the stage and
 * pipeline routes and the backend actions that run them (4.16), so both submit the same job.
 */
import { type FeaturesRequest, type MatchesRequest, type PipelineRequest, type VerifyRequest, pairsCapabilities } from "../../protocol";
import type { DatasetSubmission, Stage } from "./jobs";
import { sphericalStageParams } from "./projections";
import { DHASH_STAGE, VLAD_STAGE, retrievalIndex, vocabTreeStage } from "./similarity";

export type StagePlan = Omit<DatasetSubmission, "tenantId" | "dataset" | "recipe" | "pipeline">;
type DatasetRow = DatasetSubmission["dataset"];

export const planFeatures = ({ spec }: FeaturesRequest): StagePlan => ({
  stages: [{ kind: "extract", params: { features: spec } }],
  capabilities: [`features.extract.${spec.type}`],
  input_artifacts: {},
  roles: { accepted: [], required: [] },
  spec_paths: { features: "spec" },
});

// A single-stage matches or verify job reads an earlier job's outputs (4.6 rule 4, 2.11); retrieval pairs read the dataset's index.
// Vocabulary-tree pairs read the images' bags of words, computed by a task of the job from the same features.
export async function planMatches(
  { pairs, matcher, input_artifacts }: MatchesRequest,
  env: Env,
  tenantId: string,
  dataset: DatasetRow,
): Promise<StagePlan> {
  const vocabTree = await vocabTreeStage(env, tenantId, pairs);
  return {
    stages: [...(vocabTree ? [vocabTree.stage] : []), { kind: "match", params: { pairs, matcher } }],
    capabilities: [...pairsCapabilities(pairs), `matchers.${matcher.type}`],
    input_artifacts,
    input_blobs: vocabTree?.input_blobs,
    roles: { accepted: ["features"], required: ["features"] },
    service_artifacts: await retrievalIndex(env, tenantId, dataset, pairs),
  };
}

export const planVerify = ({ spec, input_artifacts }: VerifyRequest): StagePlan => ({
  stages: [{ kind: "verify", params: { verify: spec } }],
  capabilities: ["matches.verify"],
  input_artifacts,
  roles: { accepted: ["features", "matches"], required: ["features", "matches"] },
  spec_paths: { verify: "spec" },
});

/** A pipeline: extract -> match -> verify -> map, starting after the latest stage an input artifact replaces. */
export async function planPipeline(
  body: PipelineRequest,
  env: Env,
  tenantId: string,
  ds: DatasetRow,
): Promise<StagePlan & Pick<DatasetSubmission, "pipeline">> {
  const kind = body.spec.kind;
  // The spherical pipeline finds and adjusts a panorama's features on its cube faces (2.12 `panorama`).
  const panorama = body.spec.kind === "spherical" ? await sphericalStageParams(env, tenantId, ds, body.spec) : {};
  const chain: { stage: Stage; capabilities: string[]; replaced_by: "features" | "matches" | "verified_matches" | null }[] = [
    {
      stage: { kind: "extract", params: { features: body.features, ...panorama } },
      capabilities: [`features.extract.${body.features.type}`],
      replaced_by: "features",
    },
    {
      stage: { kind: "match", params: { pairs: body.pairs, matcher: body.matcher } },
      capabilities: [...pairsCapabilities(body.pairs), `matchers.${body.matcher.type}`],
      replaced_by: "matches",
    },
    { stage: { kind: "verify", params: { verify: body.verify } }, capabilities: ["matches.verify"], replaced_by: "verified_matches" },
    {
      stage: { kind: "map", params: { spec: body.spec, ba: body.ba ?? null, ...panorama }, map_kind: kind },
      capabilities: [`map.${kind}`, ...(body.ba ? [`ba.${body.ba.mode}`] : [])],
      replaced_by: null,
    },
  ];
  // Input artifacts replace the stages that would compute them (2.11): the chain starts after the
  // latest one given; later stages read the features too, so those are then required.
  const given = Object.keys(body.input_artifacts);
  const skip = Math.max(0, ...chain.map((c, i) => (c.replaced_by && given.includes(c.replaced_by) ? i + 1 : 0)));
  const run = chain.slice(skip);
  // Retrieval pairs read the dataset's similarity index, built by a task of the job (2.12
  // retrieval, 4.11 rule 4): dHash's first (it reads the images alone), a cache hit when the index
  // of this manifest exists; VLAD's just before matching, over the features of the job, as the
  // bags of words of vocabulary-tree pairs.
  const vocabTree = await vocabTreeStage(env, tenantId, body.pairs);
  const stages = run.map((c) => c.stage);
  const matchAt = stages.findIndex((st) => st.kind === "match");
  if (body.pairs.strategy === "retrieval" && matchAt >= 0) {
    if (body.pairs.retrieval_strategy === "vlad") stages.splice(matchAt, 0, VLAD_STAGE);
    else stages.unshift(DHASH_STAGE);
  }
  if (vocabTree && matchAt >= 0) stages.splice(matchAt, 0, vocabTree.stage);
  return {
    stages,
    capabilities: [`pipelines.${kind}`, ...run.flatMap((c) => c.capabilities)],
    input_artifacts: body.input_artifacts,
    input_blobs: vocabTree && matchAt >= 0 ? vocabTree.input_blobs : undefined,
    roles: { accepted: ["features", "matches", "verified_matches"], required: skip > 0 ? ["features"] : [] },
    pipeline: body.spec,
  };
}

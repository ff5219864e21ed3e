/**
 * @module Stage and pipeline specs (spec 2.12) and the bodies of the stage (4.6) and pipeline
 * (4.7) endpoints. Every spec carries `version: 1`; defaults are applied here, so the parsed
 * value is the normalised spec that the task's `params_hash` is computed from. The deprecated
 * aliases of 9.6 are folded into their canonical fields before validation.
 */
import { z } from "zod";
import { Id, Sha256 } from "./common";

/** 1 to 64 characters, `^[A-Za-z0-9][A-Za-z0-9_.-]*$` (2.12, 8). */
export const Provider = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "must start with a letter or digit and contain only letters, digits, '_', '.', '-'");

const BackendOptions = z.record(z.string(), z.unknown()).default({});

/** A reference to a previous stage output (2.11): role -> `{artifact_id, kind}`. */
export const ArtifactRef = z.object({ artifact_id: Id, kind: z.string().min(1).max(128) });
export const InputArtifacts = z
  .record(z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/, "roles are dot-keys such as 'features'"), ArtifactRef)
  .default({});

const common = {
  version: z.literal(1).default(1),
  provider: Provider.optional(),
  backend_options: BackendOptions,
};

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Moves a deprecated alias into its canonical field. Both present with different values is a
 * contradiction, reported as a validation issue on the alias.
 */
function foldAlias(raw: Raw, alias: string, canonical: string, ctx: z.RefinementCtx, into?: string): void {
  if (!(alias in raw)) return;
  const value = raw[alias];
  delete raw[alias];
  const target = into ? (isObject(raw[into]) ? { ...(raw[into] as Raw) } : {}) : raw;
  if (canonical in target && JSON.stringify(target[canonical]) !== JSON.stringify(value)) {
    ctx.addIssue({
      code: "custom",
      path: [alias],
      message: `deprecated alias '${alias}' contradicts '${into ? `${into}.` : ""}${canonical}'`,
    });
    return;
  }
  target[canonical] = value;
  if (into) raw[into] = target;
}

export const FEATURE_TYPES = ["sift", "superpoint", "aliked", "disk", "r2d2", "d2net"] as const;

const FeaturesSpecObject = z.object({
  ...common,
  type: z.enum(FEATURE_TYPES).default("sift"),
  max_num_features: z.number().int().min(1).max(1_000_000).default(8192),
  use_gpu: z
    .boolean()
    .default(true)
    .describe(
      "true: the runner uses WebGPU where it measured it faster than its WASM path; false: the WASM path (and wasm panorama projection)",
    ),
  seed: z.number().int().default(0),
});

/**
 * FeaturesSpec. `sift_max_num_features` aliases `max_num_features` and `sift_first_octave`
 * becomes `backend_options.first_octave` (COLMAP's SiftExtractionOptions name), both only for
 * `type: sift`; `extractor_options` aliases `backend_options`.
 */
export const FeaturesSpec = z
  .preprocess((input, ctx) => {
    if (!isObject(input)) return input;
    const raw = { ...input };
    foldAlias(raw, "extractor_options", "backend_options", ctx);
    const legacy = ["sift_max_num_features", "sift_first_octave"].filter((k) => k in raw);
    if (legacy.length > 0 && (raw.type ?? "sift") !== "sift") {
      for (const k of legacy) ctx.addIssue({ code: "custom", path: [k], message: `'${k}' is accepted only when type is 'sift'` });
      return raw;
    }
    foldAlias(raw, "sift_max_num_features", "max_num_features", ctx);
    foldAlias(raw, "sift_first_octave", "first_octave", ctx, "backend_options");
    return raw;
  }, FeaturesSpecObject)
  .meta({
    id: "FeaturesSpec",
    description:
      "Deprecated aliases still accepted (9.6): sift_max_num_features (-> max_num_features) and sift_first_octave (-> backend_options.first_octave) when type is sift; extractor_options (-> backend_options).",
  });
export type FeaturesSpec = z.infer<typeof FeaturesSpec>;

export const PAIR_STRATEGIES = ["exhaustive", "sequential", "spatial", "vocabtree", "retrieval", "from_poses", "explicit"] as const;
const PairImageName = z.string().min(1).max(2048);

export const PairsSpec = z
  .object({
    ...common,
    strategy: z.enum(PAIR_STRATEGIES).default("exhaustive"),
    overlap: z.number().int().min(1).default(10),
    vocab_tree_path: z.string().max(4096).nullable().default(null),
    retrieval_strategy: z.enum(["dhash", "vlad", "netvlad"]).default("vlad"),
    retrieval_k: z.number().int().min(1).default(20),
    overlap_distance_m: z.number().positive().nullable().default(null),
    max_angle_deg: z.number().positive().nullable().default(null),
    image_pairs: z
      .array(z.object({ image_name1: PairImageName, image_name2: PairImageName }))
      .nullable()
      .default(null),
    pairs_blob_sha: Sha256.nullable().default(null),
    pairs_blob_format: z.literal("image_name_pairs_txt").default("image_name_pairs_txt"),
  })
  .superRefine((s, ctx) => {
    if (s.strategy === "explicit" && (s.image_pairs === null) === (s.pairs_blob_sha === null)) {
      ctx.addIssue({ code: "custom", path: ["image_pairs"], message: "explicit pairs need exactly one of image_pairs or pairs_blob_sha" });
    }
  })
  .meta({ id: "PairsSpec" });
export type PairsSpec = z.infer<typeof PairsSpec>;

export const MATCHER_TYPES = ["nn-mutual", "nn-ratio", "superglue", "lightglue", "loftr", "mast3r"] as const;

/** MatcherSpec; `matcher_options` aliases `backend_options`. */
export const MatcherSpec = z
  .preprocess(
    (input, ctx) => {
      if (!isObject(input)) return input;
      const raw = { ...input };
      foldAlias(raw, "matcher_options", "backend_options", ctx);
      return raw;
    },
    z.object({
      ...common,
      type: z.enum(MATCHER_TYPES).default("nn-mutual"),
      use_gpu: z
        .boolean()
        .default(true)
        .describe("true: the runner uses WebGPU where it measured it faster than its WASM path; false: the WASM path"),
      cross_check: z.boolean().default(true),
      max_ratio: z.number().positive().max(1).default(0.8),
      max_distance: z.number().positive().default(0.7),
    }),
  )
  .meta({ id: "MatcherSpec", description: "Deprecated alias still accepted (9.6): matcher_options (-> backend_options)." });
export type MatcherSpec = z.infer<typeof MatcherSpec>;

export const VerifySpec = z
  .object({
    ...common,
    use_gpu: z
      .boolean()
      .default(true)
      .describe("geometric verification always runs on the runner's WASM engine (no GPU kernel), so true and false agree"),
    min_inlier_ratio: z.number().min(0).max(1).default(0.25),
  })
  .meta({ id: "VerifySpec" });
export type VerifySpec = z.infer<typeof VerifySpec>;

export const BA_MODES = ["standard", "two_stage", "featuremetric"] as const;
export const BundleAdjustmentSpec = z
  .object({
    ...common,
    mode: z.enum(BA_MODES).default("standard"),
    refine_focal_length: z.boolean().default(true),
    refine_principal_point: z.boolean().default(false),
    refine_extra_params: z.boolean().default(true),
    max_num_iterations: z.number().int().min(1).default(100),
    loss_kernel: z.enum(["squared", "huber", "cauchy", "soft_l1", "tukey"]).default("squared"),
    loss_threshold: z.number().positive().default(1.0),
  })
  .meta({ id: "BundleAdjustmentSpec" });
export type BundleAdjustmentSpec = z.infer<typeof BundleAdjustmentSpec>;

export const PIPELINE_KINDS = ["incremental", "global", "hierarchical", "spherical"] as const;
export type PipelineKind = (typeof PIPELINE_KINDS)[number];

const pipelineCommon = {
  ...common,
  seed: z.number().int().default(0),
  max_runtime_seconds: z.number().int().positive().nullable().default(null),
  snapshot_frames_freq: z.number().int().positive().nullable().default(50),
};

/** PipelineSpec: a tagged union on `kind` (2.12); new kinds are additive (9.5). */
export const PipelineSpec = z
  .discriminatedUnion("kind", [
    z.object({
      ...pipelineCommon,
      kind: z.literal("incremental"),
      init_image_pair: z
        .tuple([z.string().min(1), z.string().min(1)])
        .nullable()
        .default(null),
      multiple_models: z.boolean().default(true),
      max_num_models: z.number().int().min(1).default(50),
      min_num_matches: z.number().int().min(1).default(15),
      ba_global_use_pba: z
        .boolean()
        .default(true)
        .describe(
          "a hint, accepted for COLMAP compatibility: COLMAP runs global bundle adjustment on the GPU with Parallel Bundle Adjustment when it can. This service has one solver (the engine's Levenberg-Marquardt with the Schur complement, in wasm on the runner, engine-wasm/src/optim/bundle_adjustment.h), so the hint changes no result; it is part of the pipeline's params, so a different value is another reconstruction",
        ),
      extract_colors: z.boolean().default(true),
    }),
    z.object({
      ...pipelineCommon,
      kind: z.literal("global"),
      backend: z
        .enum(["AUTO", "BAXX", "CERES"])
        .default("AUTO")
        .describe(
          "the solver of global positioning and bundle adjustment, accepted with the spec's values: this service has one solver for every value (the engine's Levenberg-Marquardt with the Schur complement, in wasm on the runner, engine-wasm/src/sfm/global_positioning.h and optim/bundle_adjustment.h), so the value changes no result; it is part of the pipeline's params, so a different value is another reconstruction",
        ),
      formulation: z
        .enum(["AUTO", "EXPLICIT_SCALE", "ELIMINATED_SCALE"])
        .default("AUTO")
        .describe(
          "the residual of global positioning: EXPLICIT_SCALE (GLOMAP's) r = v - d (X - c) with a scale d >= 1e-5 per observation solved alongside the camera centres c and points X; ELIMINATED_SCALE r = (X - c)/|X - c| - v, the scale taken out by normalisation; AUTO is EXPLICIT_SCALE",
        ),
      use_incremental_quality_fallback: z
        .boolean()
        .default(true)
        .describe(
          "when the global model is poor (fewer than 80% of the images with verified matches registered, or a mean reprojection error above 2 px; each connected part of the view graph, mapped as a model of its own, judged so too: a poor part alone is mapped incrementally, listed in the summary's x-incremental_parts), map incrementally instead; the map task's log says why and its artifact's summary carries x-mapper (global or incremental) and x-global_fallback",
        ),
    }),
    z.object({
      ...pipelineCommon,
      kind: z.literal("hierarchical"),
      cluster_max_size: z.number().int().min(2).default(100),
      cluster_overlap: z.number().int().min(0).default(25),
    }),
    z.object({ ...pipelineCommon, kind: z.literal("spherical"), panorama: z.boolean().default(true) }),
  ])
  .meta({ id: "PipelineSpec" });
export type PipelineSpec = z.infer<typeof PipelineSpec>;

// ---- request bodies ----

export const FeaturesRequest = z.object({ spec: FeaturesSpec.default(FeaturesSpec.parse({})) }).meta({ id: "FeaturesRequest" });
export type FeaturesRequest = z.infer<typeof FeaturesRequest>;

export const MatchesRequest = z
  .object({
    pairs: PairsSpec.default(PairsSpec.parse({})),
    matcher: MatcherSpec.default(MatcherSpec.parse({})),
    input_artifacts: InputArtifacts,
  })
  .meta({ id: "MatchesRequest" });
export type MatchesRequest = z.infer<typeof MatchesRequest>;

export const VerifyRequest = z
  .object({ spec: VerifySpec.default(VerifySpec.parse({})), input_artifacts: InputArtifacts })
  .meta({ id: "VerifyRequest" });
export type VerifyRequest = z.infer<typeof VerifyRequest>;

/**
 * The body of `POST /v1/projects/{pid}/pipelines/{recipe}` (4.7). `ba` is our optional
 * addition: the bundle adjustment of the map stage (2.12), gated by `ba.<mode>`.
 */
export const PipelineRequest = z
  .object({
    dataset_id: Id,
    spec: PipelineSpec,
    features: FeaturesSpec.default(FeaturesSpec.parse({})),
    pairs: PairsSpec.default(PairsSpec.parse({})),
    matcher: MatcherSpec.default(MatcherSpec.parse({})),
    verify: VerifySpec.default(VerifySpec.parse({})),
    ba: BundleAdjustmentSpec.optional(),
    input_artifacts: InputArtifacts,
  })
  .meta({ id: "PipelineRequest" });
export type PipelineRequest = z.infer<typeof PipelineRequest>;

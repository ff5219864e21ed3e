/**
 * @module Backend descriptors (spec 2.15, 4.16) and the operator's plugin and routing records
 * (4.17): the compute providers this build has, the `backend_options` each stage reads (its
 * config schema), and how a request's stage is routed to a provider. One list each, read by the
 * Worker (which publishes and enforces them) and the runner (which obeys the chosen provider).
 */
import { z } from "zod";
import type { OptionalCapability } from "./capabilities";
import { Id, Timestamp } from "./schemas/common";
import { Provider as ProviderName } from "./schemas/specs";

/** The stages a config schema or a routing rule names (2.15 config-schema `stage`). */
export const BACKEND_STAGES = ["features", "pairs", "matcher", "verify", "mapping", "bundle_adjustment"] as const;
export const BackendStage = z.enum(BACKEND_STAGES);
export type BackendStage = z.infer<typeof BackendStage>;

/** The ids of the compute providers of this build: the runner's two implementations (browser-runtime/gpu/select.ts). */
export const PROVIDER_IDS = ["wasm", "webgpu"] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

export interface ProviderInfo {
  provider_id: ProviderId;
  display_name: string;
  description: string;
  stages: readonly BackendStage[];
  capabilities: readonly OptionalCapability[];
  /** What a runner must offer to compute with it (RunnerAbilities). */
  requires: "nothing" | "webgpu_adapter";
  /** The runtime-version key of its code (2.15: rolled into every cache key). */
  runtime_version_key: "engine-wasm" | "shaders";
  /** Where the runner loads it from. */
  entry_point: string;
}

/**
 * The providers. Both compute SIFT and descriptor matching (their results agree within the
 * tolerances of protocol/agreement.ts); the engine alone verifies, maps and adjusts.
 */
export const PROVIDERS: Record<ProviderId, ProviderInfo> = {
  wasm: {
    provider_id: "wasm",
    display_name: "EdgeSfM engine (C++17, Eigen) compiled to WebAssembly",
    description:
      "The geometry core on the CPU of any runner: SIFT, descriptor matching, two-view verification, incremental and spherical mapping, bundle adjustment, projections.",
    stages: ["features", "matcher", "verify", "mapping", "bundle_adjustment"],
    capabilities: [
      "features.extract.sift",
      "matchers.nn-mutual",
      "matchers.nn-ratio",
      "matches.verify",
      "map.incremental",
      "map.spherical",
      "ba.standard",
      "ba.two_stage",
    ],
    requires: "nothing",
    runtime_version_key: "engine-wasm",
    entry_point: "engine-wasm/build/wasm/engine.wasm",
  },
  webgpu: {
    provider_id: "webgpu",
    display_name: "WGSL compute kernels (WebGPU)",
    description:
      "SIFT (scale space, detection, orientation, descriptors) and brute-force descriptor matching as WebGPU compute shaders; runs only on runners with a WebGPU adapter.",
    stages: ["features", "matcher"],
    capabilities: ["features.extract.sift", "matchers.nn-mutual", "matchers.nn-ratio"],
    requires: "webgpu_adapter",
    runtime_version_key: "shaders",
    entry_point: "shaders/*.wgsl",
  },
};

/** A routing rule's value besides a provider id: the runner times the enabled providers on its device and uses the faster. */
export const MEASURED = "measured";

/** The routing profile every deployment ships (4.16 rule 4: ordinary requests without `provider` keep working). */
export const BUILTIN_PROFILE = { name: "measured", routes: { features: MEASURED, matcher: MEASURED } } as const;

/** Stages more than one provider can compute: the only ones a routing rule decides. */
export const routedStages = (): BackendStage[] =>
  BACKEND_STAGES.filter((s) => PROVIDER_IDS.filter((p) => PROVIDERS[p].stages.includes(s)).length > 1);

/**
 * What a task of a routed stage carries in its spec's `provider`: absent for `measured` (the
 * runner's choice), else the provider the runner must use; a `webgpu` task is leased only to
 * runners with an adapter.
 */
export const needsWebgpu = (provider: unknown) => provider === "webgpu";

// ---- config schemas (2.15): the `backend_options` a stage reads ----

/** The SIFT options both providers read (browser-runtime/stages/extract.ts siftOptionsFromSpec), named as COLMAP names them. */
export const SiftBackendOptions = z
  .strictObject({
    max_image_size: z.number().int().min(16).max(16384).optional().describe("longest side after downscaling, pixels"),
    first_octave: z.number().int().min(-1).max(8).optional().describe("-1 upsamples the image once"),
    num_octaves: z.number().int().min(1).max(16).optional(),
    octave_resolution: z.number().int().min(1).max(16).optional().describe("scales per octave"),
    peak_threshold: z.number().positive().max(1).optional(),
    edge_threshold: z.number().positive().max(1000).optional(),
    max_num_orientations: z.number().int().min(1).max(8).optional(),
    upright: z.boolean().optional(),
    normalization: z.enum(["L1_ROOT", "L2", "l1_root", "l2"]).optional().describe("descriptor normalisation; RootSIFT by default"),
  })
  .describe("SIFT options (COLMAP's SiftExtractionOptions names)");

/** Stages whose runner reads no `backend_options`: publishing an empty schema rejects keys that would be ignored. */
const NoBackendOptions = z.strictObject({}).describe("this stage reads no backend_options");

export interface ConfigSchemaInfo {
  config_id: string;
  stage: BackendStage;
  capability: OptionalCapability;
  display_name: string;
  options: z.ZodType;
}

/** One schema per stage and capability, shared by the providers (both read the same options). */
export const CONFIG_SCHEMAS: readonly ConfigSchemaInfo[] = [
  {
    config_id: "edgesfm.features.sift",
    stage: "features",
    capability: "features.extract.sift",
    display_name: "SIFT",
    options: SiftBackendOptions,
  },
  {
    config_id: "edgesfm.matcher.nn_mutual",
    stage: "matcher",
    capability: "matchers.nn-mutual",
    display_name: "mutual nearest neighbours",
    options: NoBackendOptions,
  },
  {
    config_id: "edgesfm.matcher.nn_ratio",
    stage: "matcher",
    capability: "matchers.nn-ratio",
    display_name: "nearest neighbour with ratio test",
    options: NoBackendOptions,
  },
  {
    config_id: "edgesfm.verify",
    stage: "verify",
    capability: "matches.verify",
    display_name: "two-view verification",
    options: NoBackendOptions,
  },
];

/** The config schema of a stage run under `capability`, if one is published (2.15 behaviour). */
export const configSchemaFor = (stage: BackendStage, capability: string) =>
  CONFIG_SCHEMAS.find((s) => s.stage === stage && s.capability === capability);

// ---- wire records ----

const JsonSchema = z.record(z.string(), z.unknown());

export const BackendOut = z
  .object({
    name: z.string(),
    version: z.string(),
    vendor: z.string(),
    capabilities: z.array(z.string()).describe("the portable capabilities it implements"),
    runtime_versions: z.record(z.string(), z.string()),
    _links: z.record(z.string(), z.object({ href: z.string() })),
  })
  .meta({ id: "BackendOut" });

export const BackendAction = z
  .object({
    action_id: z.string(),
    display_name: z.string(),
    category: z.string(),
    stability: z.enum(["stable", "experimental", "backend_extension", "deprecated"]),
    side_effects: z.enum(["none", "read", "write", "unknown"]),
    required_capabilities: z.array(z.string()),
    input_schema: JsonSchema.optional(),
    output_schema: JsonSchema.optional(),
  })
  .meta({ id: "BackendAction" });
export type BackendAction = z.infer<typeof BackendAction>;

export const BackendConfigSchema = z
  .object({
    config_id: z.string(),
    stage: BackendStage,
    capability: z.string().optional(),
    provider: z.string().optional(),
    display_name: z.string(),
    option_schema: JsonSchema.optional(),
  })
  .meta({ id: "BackendConfigSchema" });

export const BackendArtifactContract = z
  .object({
    contract_id: z.string(),
    stage: z.string(),
    capability: z.string(),
    provider: z.string().optional(),
    display_name: z.string(),
    accepts: z.array(z.string()),
    emits: z.array(z.string()),
    accepts_formats: z.array(z.string()),
    emits_formats: z.array(z.string()),
    preferred: z.string(),
    preferred_format: z.string(),
    conversions: z.array(z.object({ from_format: z.string(), to_format: z.string(), lossless: z.boolean(), description: z.string() })),
  })
  .meta({ id: "BackendArtifactContract" });

export const ProviderOut = z
  .object({
    provider_id: z.string(),
    plugin_id: z.string(),
    display_name: z.string(),
    description: z.string(),
    stages: z.array(BackendStage),
    capabilities: z.array(z.string()),
    requires: z.enum(["nothing", "webgpu_adapter"]),
    enabled: z.boolean(),
    runtime_version: z.string().describe("the build id of its code in this service's runtime-version map"),
  })
  .meta({ id: "Provider" });
export type ProviderOut = z.infer<typeof ProviderOut>;

/** A profile's routes: stage -> provider id, or `measured` (the runner times the enabled providers and uses the faster). */
export const RoutingRoutes = z.partialRecord(BackendStage, z.union([ProviderName, z.literal(MEASURED)]));
export const RoutingProfile = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/),
    routes: RoutingRoutes,
  })
  .meta({ id: "RoutingProfile" });
export type RoutingProfile = z.infer<typeof RoutingProfile>;

export const RoutingOut = z
  .object({
    profiles: z.array(RoutingProfile.extend({ builtin: z.boolean() })),
    default_profile: z.string().nullable(),
    workspace_profile: z
      .string()
      .nullable()
      .describe("this deployment is one workspace: its rule applies to every project without its own"),
    project_profiles: z.record(Id, z.string()),
    priority: z
      .array(z.string())
      .describe("provider priority: none is set, so several eligible providers without a rule is a validation error (4.16 rule 4)"),
    routed_stages: z.array(BackendStage).describe("stages more than one provider computes"),
    providers: z.record(z.string(), z.object({ enabled: z.boolean(), stages: z.array(BackendStage) })),
  })
  .meta({ id: "RoutingOut" });
export type RoutingOut = z.infer<typeof RoutingOut>;

export const RoutingAssign = z
  .object({ profile: z.string().min(1).max(64).nullable().describe("a profile name; null removes the rule") })
  .meta({ id: "RoutingAssign" });

export const PluginItem = z
  .object({
    plugin_id: z.string(),
    display_name: z.string(),
    description: z.string(),
    provides: z.array(z.string()).describe("provider ids"),
    stages: z.array(BackendStage),
    capabilities: z.array(z.string()),
    builtin: z.boolean().describe("shipped inside the runner bundle: nothing to install"),
    enabled: z.boolean(),
    updated_at: Timestamp.nullable(),
    entry_point: z.string(),
  })
  .meta({ id: "PluginRegistryItem" });
export type PluginItem = z.infer<typeof PluginItem>;

export const PluginInstallRequest = z
  .object({
    method: z.enum(["uv", "docker", "external_tool"]),
    github_url: z.string().url().max(2048).optional(),
    ref: z.string().max(256).optional(),
    package_name: z.string().max(256).optional(),
    dry_run: z.boolean().default(true),
    allow_unsafe_execution: z.boolean().default(false),
  })
  .meta({ id: "PluginInstallRequest" });

export const PluginInstallPlan = z
  .object({
    plugin_id: z.string(),
    method: z.string(),
    dry_run: z.literal(true),
    executed: z.literal(false),
    runnable_command: z.string().nullable().describe("only `uv` yields one (4.17 rule 3); this service never runs it"),
    steps: z.array(z.string()),
    warnings: z.array(z.string()),
  })
  .meta({ id: "PluginInstallPlan" });

export const DoctorCheck = z.object({ name: z.string(), ok: z.boolean(), detail: z.string() });
export const PluginDoctor = z
  .object({
    plugin_id: z.string(),
    status: z.enum(["ok", "degraded", "unavailable"]),
    checks: z.array(DoctorCheck),
    runners: z.array(
      z.object({
        runner_id: z.string(),
        name: z.string(),
        scope: z.string(),
        last_seen_at: Timestamp,
        adapter: z.string().nullable(),
        is_fallback_adapter: z.boolean().nullable(),
        runtime_version: z.string().nullable(),
        current: z.boolean().describe("its build equals the service's"),
      }),
    ),
  })
  .meta({ id: "PluginDoctor" });
export type PluginDoctor = z.infer<typeof PluginDoctor>;

/** The provider a task's params pin (an extract task's `features.provider`, a match task's `matcher.provider`), if any. */
export function pinnedProvider(params: Record<string, unknown>): string | undefined {
  for (const key of ["features", "matcher"]) {
    const spec = params[key] as { provider?: unknown } | undefined;
    if (typeof spec?.provider === "string") return spec.provider;
  }
  return undefined;
}

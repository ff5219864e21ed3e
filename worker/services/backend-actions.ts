/**
 * @module Backend actions (spec 4.16): the stages and pipelines this deployment runs, described
 * from the same zod schemas as their routes (input schemas, normalised inputs), validated as the
 * routes validate them and run through the same submission (rule 2: an ordinary job, with its
 * status, progress, cancellation and events). Only actions whose capabilities are all true are
 * listed: the list says what truly runs.
 */
import { z } from "zod";
import {
  type BackendAction,
  type JobAccepted,
  FeaturesRequest,
  Id,
  MatchesRequest,
  PIPELINE_KINDS,
  PipelineRequest,
  TaskOutputs,
  VerifyRequest,
} from "../../protocol";
import { type FieldError, ApiError, notFound } from "../errors";
import { fieldErrors } from "../router";
import { applyBackendRules, jsonSchemaOf, routedSpecsOf } from "./backend";
import { implemented } from "./capabilities";
import { type DatasetSubmission, submitOnDataset } from "./jobs";
import { type StagePlan, planFeatures, planMatches, planPipeline, planVerify } from "./stage-plans";
import { tenantStore } from "./stores";

type DatasetRow = DatasetSubmission["dataset"];

interface ActionDef {
  action_id: string;
  display_name: string;
  category: string;
  recipe: string;
  capabilities: string[];
  input: z.ZodType<{ dataset_id: string }>;
  plan(inputs: unknown, env: Env, tenantId: string, ds: DatasetRow): Promise<StagePlan & Partial<Pick<DatasetSubmission, "pipeline">>>;
}

const DatasetField = { dataset_id: Id.describe("the dataset the stage reads") };

const ACTIONS: ActionDef[] = [
  {
    action_id: "edgesfm.stage.features",
    display_name: "Feature extraction (SIFT)",
    category: "features",
    recipe: "features",
    capabilities: ["features.extract.sift"],
    input: FeaturesRequest.extend(DatasetField),
    plan: async (inputs) => planFeatures(inputs as FeaturesRequest),
  },
  {
    action_id: "edgesfm.stage.matches",
    display_name: "Pairs and descriptor matching",
    category: "matching",
    recipe: "matches",
    capabilities: ["pairs.exhaustive", "matchers.nn-mutual"],
    input: MatchesRequest.extend(DatasetField),
    plan: (inputs, env, tenantId, ds) => planMatches(inputs as MatchesRequest, env, tenantId, ds),
  },
  {
    action_id: "edgesfm.stage.verify",
    display_name: "Two-view geometric verification",
    category: "verification",
    recipe: "verify",
    capabilities: ["matches.verify"],
    input: VerifyRequest.extend(DatasetField),
    plan: async (inputs) => planVerify(inputs as VerifyRequest),
  },
  ...PIPELINE_KINDS.map((kind): ActionDef => ({
    action_id: `edgesfm.pipeline.${kind}`,
    display_name: `${kind[0]!.toUpperCase()}${kind.slice(1)} pipeline (extract, match, verify, map)`,
    category: "pipelines",
    recipe: kind,
    capabilities: [`pipelines.${kind}`, `map.${kind}`],
    input: PipelineRequest.refine((b) => b.spec.kind === kind, { path: ["spec", "kind"], message: `must be '${kind}'` }),
    plan: (inputs, env, tenantId, ds) => planPipeline(inputs as PipelineRequest, env, tenantId, ds),
  })),
];

const available = (env: Env) => {
  const has = implemented(env) as ReadonlySet<string>;
  return ACTIONS.filter((a) => a.capabilities.every((c) => has.has(c)));
};

function describe(a: ActionDef, schemas: boolean): BackendAction {
  return {
    action_id: a.action_id,
    display_name: a.display_name,
    category: a.category,
    stability: "stable",
    side_effects: "write",
    required_capabilities: a.capabilities,
    ...(schemas ? { input_schema: jsonSchemaOf(a.input, "input"), output_schema: jsonSchemaOf(TaskOutputs, "output") } : {}),
  };
}

export const actions = (env: Env, schemas: boolean) => available(env).map((a) => describe(a, schemas));

function action(env: Env, actionId: string): ActionDef {
  const a = available(env).find((x) => x.action_id === actionId);
  if (!a) throw notFound("backend action");
  return a;
}

export const actionOf = (env: Env, actionId: string) => describe(action(env, actionId), true);

/** The dataset an action reads, in the caller's tenant (and project, when one is named). */
async function datasetFor(env: Env, tenantId: string, datasetId: string, projectId?: string) {
  const row = await tenantStore(env, tenantId).getDataset(datasetId);
  return row && (projectId === undefined || row.project_id === projectId) ? row : null;
}

/** `:validate`: the route's validation and the backend rules (config schemas, providers), no job. */
export async function validateAction(env: Env, tenantId: string, actionId: string, inputs: unknown) {
  const a = action(env, actionId);
  const parsed = a.input.safeParse(inputs);
  if (!parsed.success)
    return { action_id: a.action_id, valid: false, errors: fieldErrors(parsed.error, "inputs"), normalized_inputs: null };
  const errors: FieldError[] = [];
  const ds = await datasetFor(env, tenantId, parsed.data.dataset_id);
  if (!ds) errors.push({ path: "inputs.dataset_id", message: "no such dataset", code: "not_found" });
  else {
    try {
      const plan = await a.plan(parsed.data, env, tenantId, ds);
      await applyBackendRules(env, ds.project_id, routedSpecsOf(plan.stages, plan.spec_paths));
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      const listed = (e.extra.errors as FieldError[] | undefined) ?? [];
      errors.push(
        ...(listed.length > 0
          ? listed.map((f) => ({ ...f, path: `inputs.${f.path}` }))
          : [{ path: "inputs", message: e.message, code: e.slug }]),
      );
    }
  }
  return { action_id: a.action_id, valid: errors.length === 0, errors, normalized_inputs: parsed.data };
}

/**
 * `:run`: the job the action's route would submit, on a dataset of `projectId`, as a backend
 * action's (its tasks reported with kind `backend_action`, each naming its stage as `x-stage_kind`).
 */
export async function runAction(env: Env, tenantId: string, actionId: string, projectId: string, inputs: unknown): Promise<JobAccepted> {
  const a = action(env, actionId);
  const parsed = a.input.safeParse(inputs);
  if (!parsed.success) throw new ApiError(422, "validation", "invalid action inputs", { errors: fieldErrors(parsed.error, "inputs") });
  const ds = await datasetFor(env, tenantId, parsed.data.dataset_id, projectId);
  if (!ds) throw notFound("dataset");
  const plan = await a.plan(parsed.data, env, tenantId, ds);
  return submitOnDataset(env, { pipeline: null, ...plan, tenantId, dataset: ds, recipe: a.recipe, action_id: a.action_id });
}

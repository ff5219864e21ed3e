/**
 * @module Artifact input references (spec 2.11 `input_artifacts`), resolved before a job is
 * created: each role's reference must name an artifact of the caller's tenant (another tenant's
 * id reads as absent), of the kind the reference states and the role takes, computed from the
 * same dataset (or one with the same manifest, whose images are interchangeable), with files the
 * runners can read; the stage must read that role, and the roles it cannot run without must be
 * given or derived from the dataset's earlier outputs. Every failure is reported at once (422
 * `errors[]`), and no job is created.
 */
import { CORE_ROLES, type CoreRole, type InputArtifacts, type StageArtifact } from "../../protocol";
import { type FieldError, validation } from "../errors";
import type { ArtifactRow, DatasetRow } from "../storage/tenant-rows";
import { artifactResource } from "./artifacts";
import { jobStore, tenantStore } from "./stores";
import type { z } from "zod";

type Refs = z.infer<typeof InputArtifacts>;

/** The stage route that computes each role's artifact, for "run it first" messages. */
const STAGE_ROUTE: Partial<Record<CoreRole, string>> = { features: "features", matches: "matches", verified_matches: "verify" };

const refOf = (row: ArtifactRow) => ({ artifact_id: row.artifact_id, kind: row.kind });

/**
 * The required roles a request left out, taken from the dataset (4.6: the inputs of a stage are
 * "derived server-side from the dataset"): its latest matches (or verified matches), with the
 * features those were computed from; else its latest features. A role the request names is never
 * replaced, and matches are not guessed for features the request names (they must belong together).
 */
export async function withDatasetOutputs(env: Env, tenantId: string, refs: Refs, needs: RoleNeeds, dataset: DatasetRow): Promise<Refs> {
  const missing = needs.required.filter((role) => !(role in refs));
  if (missing.length === 0) return refs;
  const tenant = tenantStore(env, tenantId);
  const out: Refs = { ...refs };
  const errors: FieldError[] = [];
  const runFirst = (role: CoreRole) => ({
    path: `input_artifacts.${role}`,
    message: `this dataset has no ${role.replace("_", " ")} yet: run POST /v1/datasets/${dataset.dataset_id}/${STAGE_ROUTE[role]} first, or name an artifact`,
    code: "stage_not_run",
  });
  for (const role of ["verified_matches", "matches"] as const) {
    if (!missing.includes(role)) continue;
    if ("features" in refs) {
      errors.push({
        path: `input_artifacts.${role}`,
        message: `required with input_artifacts.features: the ${role.replace("_", " ")} computed from those features`,
        code: "required",
      });
      continue;
    }
    const row = await tenant.latestArtifact(CORE_ROLES[role].kinds[0], { dataset_id: dataset.dataset_id });
    if (row) out[role] = refOf(row);
    else errors.push(runFirst(role));
  }
  if (missing.includes("features") && errors.length === 0) {
    const matches = out.verified_matches ?? out.matches;
    const row = matches
      ? await featuresBehind(env, tenantId, matches.artifact_id)
      : await tenant.latestArtifact(CORE_ROLES.features.kinds[0], { dataset_id: dataset.dataset_id });
    if (row) out.features = refOf(row);
    else if (matches)
      errors.push({
        path: "input_artifacts.features",
        message: "required: the features those matches were computed from are not known here",
        code: "required",
      });
    else errors.push(runFirst("features"));
  }
  if (errors.length > 0)
    throw validation("the stage's inputs are neither given nor computed for this dataset yet; no job was created", errors);
  return out;
}

/** The features an artifact's job read: the ones it computed itself (a pipeline), else its own input. */
async function featuresBehind(env: Env, tenantId: string, artifactId: string): Promise<ArtifactRow | null> {
  const tenant = tenantStore(env, tenantId);
  const artifact = await tenant.getArtifact(artifactId);
  if (!artifact) return null;
  const own = await tenant.latestArtifact(CORE_ROLES.features.kinds[0], { job_id: artifact.job_id });
  if (own) return own;
  const input = await jobStore(env, tenantId, artifact.job_id).inputArtifactId("features");
  return input ? tenant.getArtifact(input) : null;
}

/** The roles a job's stages read, and those it cannot run without. */
export interface RoleNeeds {
  accepted: readonly CoreRole[];
  required: readonly CoreRole[];
}

const isCoreRole = (role: string): role is CoreRole => role in CORE_ROLES;

export async function resolveInputArtifacts(
  env: Env,
  tenantId: string,
  refs: Refs,
  needs: RoleNeeds,
  dataset: DatasetRow,
): Promise<Record<string, StageArtifact>> {
  const tenant = tenantStore(env, tenantId);
  const errors: FieldError[] = [];
  const resolved: Record<string, StageArtifact> = {};
  for (const role of needs.required) {
    if (!(role in refs))
      errors.push({ path: `input_artifacts.${role}`, message: `required: the '${role}' artifact of an earlier job`, code: "required" });
  }
  for (const [role, ref] of Object.entries(refs)) {
    const at = `input_artifacts.${role}`;
    if (!isCoreRole(role)) {
      errors.push({
        path: at,
        message: `no backend of this deployment reads the role '${role}'; core roles: ${Object.keys(CORE_ROLES).join(", ")}`,
        code: "unknown_role",
      });
      continue;
    }
    if (!needs.accepted.includes(role)) {
      const reads = needs.accepted.length > 0 ? `it reads ${needs.accepted.join(", ")}` : "it reads no input artifacts";
      errors.push({ path: at, message: `this stage does not read a '${role}' artifact: ${reads}`, code: "role_not_accepted" });
      continue;
    }
    const kinds: readonly string[] = CORE_ROLES[role].kinds;
    if (!kinds.includes(ref.kind)) {
      errors.push({
        path: `${at}.kind`,
        message: `the role '${role}' takes ${kinds.join(" or ")}, not '${ref.kind}'`,
        code: "role_mismatch",
      });
      continue;
    }
    const row = await tenant.getArtifact(ref.artifact_id);
    if (!row) {
      errors.push({ path: `${at}.artifact_id`, message: `no artifact ${ref.artifact_id} in this tenant`, code: "unknown_artifact" });
      continue;
    }
    const artifact = artifactResource(row);
    if (artifact.kind !== ref.kind) {
      errors.push({
        path: `${at}.kind`,
        message: `artifact ${ref.artifact_id} is a '${artifact.kind}', not a '${ref.kind}'`,
        code: "kind_mismatch",
      });
      continue;
    }
    if (row.dataset_id !== null && row.dataset_id !== dataset.dataset_id && row.manifest_hash !== dataset.manifest_hash) {
      errors.push({
        path: `${at}.artifact_id`,
        message: `artifact ${ref.artifact_id} was computed from dataset ${row.dataset_id}, whose images differ from this dataset's`,
        code: "dataset_mismatch",
      });
      continue;
    }
    if (artifact.files.length === 0) {
      errors.push({
        path: `${at}.artifact_id`,
        message: `artifact ${ref.artifact_id} has no server-managed files; runners read only those, never a uri`,
        code: "no_managed_files",
      });
      continue;
    }
    resolved[role] = artifact;
  }
  if (errors.length > 0) throw validation("input_artifacts do not resolve for this stage (2.11); no job was created", errors);
  return resolved;
}

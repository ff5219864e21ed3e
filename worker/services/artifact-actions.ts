/**
 * @module The artifact actions of spec 4.10: `:import` (register a URI or existing blobs without
 * copying, owned by a completed `artifact_import` job), `:validate` (descriptor, vocabulary, the
 * managed files' sizes and SHA-256, and each document as what it is named), `:conversionPlan` (the
 * shortest path over the conversion graph) and `:convert` (a `convert_artifact` job running every
 * step in one task). Impossible conversions are refused before anything is queued.
 */
import {
  type ArtifactConversionPlan,
  type ArtifactImportRequest,
  type ArtifactValidation,
  type ConversionPlanRequest,
  type ConvertRequest,
  type JobAccepted,
  SEALABLE_FILES,
  type StageArtifact,
  StoredDescriptor,
  conversionCapability,
  planConversion,
} from "../../protocol";
import { validateFeatures } from "../../protocol/wire/features";
import { validateMatches } from "../../protocol/wire/matches";
import { ApiError, type FieldError, capabilityUnavailable, notFound, validation } from "../errors";
import { fieldErrors } from "../router";
import { artifactResource, artifactRow } from "./artifacts";
import { digestStream, sha256Hex } from "./blobs";
import { implemented } from "./capabilities";
import { producerDataset } from "./exports";
import { frozenDataset, submitJob } from "./jobs";
import { fileProblem } from "./snapshot-files";
import { tenantStore } from "./stores";

// ---- :import ----

/**
 * Registers the artifact as the output of an `artifact_import` job born succeeded (4.10). 404 for
 * a project, dataset or reconstruction the tenant does not have (or of another project); 422 for
 * files that are not blobs of the tenant of that size, or a reconstruction of another dataset.
 */
export async function importArtifact(env: Env, tenantId: string, body: ArtifactImportRequest): Promise<StageArtifact> {
  const tenant = tenantStore(env, tenantId);
  if (!(await tenant.getProject(body.project_id))) throw notFound("project");
  const dataset = body.dataset_id ? await tenant.getDataset(body.dataset_id) : null;
  if (body.dataset_id && dataset?.project_id !== body.project_id) throw notFound("dataset in this project");
  const recon = body.recon_id ? await tenant.getReconstruction(body.recon_id) : null;
  if (body.recon_id && recon?.project_id !== body.project_id) throw notFound("reconstruction in this project");
  const errors: FieldError[] = [];
  if (recon && dataset && recon.dataset_id !== dataset.dataset_id) {
    errors.push({
      path: "recon_id",
      message: `the reconstruction was computed from dataset ${recon.dataset_id}, not ${dataset.dataset_id}`,
      code: "scope_mismatch",
    });
  }
  for (const [i, f] of body.files.entries()) {
    const blob = await tenant.getBlob(f.blob_sha);
    if (!blob)
      errors.push({
        path: `files.${i}.blob_sha`,
        message: "no blob with this sha in this tenant: finalize an upload of the bytes first",
        code: "unknown_blob",
      });
    else if (blob.size !== f.byte_size)
      errors.push({ path: `files.${i}.byte_size`, message: `the blob has ${blob.size} bytes`, code: "size_mismatch" });
  }
  if (errors.length > 0) throw validation("the artifact cannot be imported: nothing was registered", errors);

  const { project_id: _p, dataset_id: _d, recon_id: _r, ...descriptor } = body;
  const accepted = await submitJob(env, {
    tenantId,
    projectId: body.project_id,
    dataset: dataset ? frozenDataset(dataset, await tenant.allImages(dataset.dataset_id)) : null,
    recipe: "artifact_import",
    stages: [{ kind: "artifact_import", params: { import: descriptor } }],
    input_artifacts: {},
    recon: recon ? { recon_id: recon.recon_id } : null,
    imported: { artifacts: [descriptor], result: { uri: descriptor.uri } },
  });
  const listed = await tenant.listArtifacts({ job_id: accepted.job_id }, {}, { page_size: 1 });
  const row = listed.ok ? listed.value.items[0] : undefined;
  // The job records it before answering; only a failed recording (retried by the job's alarm) leaves it unlisted.
  if (!row)
    throw new ApiError(
      503,
      "unavailable",
      `the import job ${accepted.job_id} exists but its artifact is not recorded yet: read /v1/jobs/${accepted.job_id}/artifacts`,
    );
  return artifactResource(row);
}

// ---- :validate ----

/** Files read whole to be checked as documents; larger ones are only hashed. */
const MAX_DOCUMENT_BYTES = 64 << 20;
const SNAPSHOT_KINDS = new Set(["reconstruction.snapshot", "reconstruction.submodel", "reconstruction.sparse.v1"]);

/** Why these bytes are not what the artifact says they are, or null; undefined when nothing checks this file. */
function documentProblem(
  artifact: StageArtifact,
  path: string,
  mediaType: string | undefined,
  bytes: () => Uint8Array,
): string | null | undefined {
  const name = path.split("/").at(-1)!;
  try {
    if (SNAPSHOT_KINDS.has(artifact.kind) && (SEALABLE_FILES as readonly string[]).includes(name)) return fileProblem(name, bytes());
    if (artifact.kind === "matches.verified.v1" && name.endsWith(".json")) return fileProblem("two_view_geometries.json", bytes());
    if (artifact.kind === "features.local.v1" || artifact.kind === "matches.indexed.v1") {
      (artifact.kind === "features.local.v1" ? validateFeatures : validateMatches)(bytes());
      return null;
    }
    if (name.endsWith(".json") || mediaType === "application/json") {
      JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes()));
      return null;
    }
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}

/**
 * `:validate` (4.10): the stored descriptor against its schema and the core vocabulary (2.11),
 * then each managed file: stored, of its declared size, hashing to its `blob_sha`, and valid as
 * the document it is named (JSON manifests, snapshot files, features, matches).
 */
export async function validateArtifact(env: Env, tenantId: string, artifactId: string): Promise<ArtifactValidation> {
  const artifact = artifactResource(await artifactRow(env, tenantId, artifactId));
  const {
    artifact_id: _a,
    job_id: _j,
    task_id: _t,
    project_id: _p,
    dataset_id: _d,
    recon_id: _r,
    created_at: _c,
    _links: _l,
    ...descriptor
  } = artifact;
  const parsed = StoredDescriptor.safeParse(descriptor);
  const errors: FieldError[] = parsed.success ? [] : fieldErrors(parsed.error);
  const checked = { files: 0, bytes: 0, documents: 0 };
  const tenant = tenantStore(env, tenantId);
  for (const [i, f] of artifact.files.entries()) {
    const at = `files.${i}`;
    const blob = await tenant.getBlob(f.blob_sha);
    const obj = blob ? await env.BLOBS.get(blob.r2_key) : null;
    if (!blob || !obj) {
      errors.push({
        path: `${at}.blob_sha`,
        message: blob ? "the blob's bytes are gone from storage" : "no blob with this sha in this tenant",
        code: "missing_bytes",
      });
      continue;
    }
    if (obj.size !== f.byte_size)
      errors.push({ path: `${at}.byte_size`, message: `declared ${f.byte_size} bytes, stored ${obj.size}`, code: "size_mismatch" });
    const whole = obj.size <= MAX_DOCUMENT_BYTES ? new Uint8Array(await obj.arrayBuffer()) : null;
    const digest = whole ? await sha256Hex(whole) : await digestStream(obj.body);
    checked.files += 1;
    checked.bytes += obj.size;
    if (digest !== f.blob_sha) errors.push({ path: `${at}.blob_sha`, message: `the bytes hash to ${digest}`, code: "sha_mismatch" });
    if (!whole) continue;
    const problem = documentProblem(artifact, f.path, f.media_type, () => whole);
    if (problem === undefined) continue;
    checked.documents += 1;
    if (problem !== null) errors.push({ path: at, message: `${f.path}: ${problem}`, code: "invalid_document" });
  }
  return { artifact_id: artifactId, valid: errors.length === 0, errors, checked };
}

// ---- :conversionPlan, :convert ----

/** The plan for the artifact, or the refusal (4.10 rule 1): 422 no path or no lossless one, 501 a step this deployment lacks. */
export function conversionPlan(env: Env, artifact: StageArtifact, body: ConversionPlanRequest): ArtifactConversionPlan {
  const targets = [...(body.to_format ? [body.to_format] : []), ...(body.accepted_formats ?? [])];
  if (targets.length === 0)
    throw validation("name the format wanted: to_format or accepted_formats", [
      { path: "to_format", message: "required (or accepted_formats)", code: "required" },
    ]);
  const on = implemented(env) as ReadonlySet<string>;
  const plan = planConversion(
    { format: artifact.artifact_format, kind: artifact.kind },
    {
      targets,
      toKind: body.to_kind,
      requireLossless: body.require_lossless,
      available: (e) => (conversionCapability(e) === null ? true : on.has(conversionCapability(e)!)),
    },
  );
  const wanted = body.to_format ? "to_format" : "accepted_formats";
  const kind = body.to_kind ? ` of kind '${body.to_kind}'` : "";
  if (!plan.ok) {
    if (plan.reason === "unavailable")
      throw capabilityUnavailable(
        plan.capability,
        `converting '${artifact.artifact_format}' to ${targets.join(" or ")} needs '${plan.capability}', which this deployment does not offer`,
      );
    if (plan.reason === "lossless_impossible") {
      throw validation(`'${artifact.artifact_format}' converts to ${targets.join(" or ")}${kind} only with loss`, [
        { path: "require_lossless", message: "no lossless path exists", code: "lossless_impossible" },
      ]);
    }
    throw validation(`no conversion path from '${artifact.artifact_format}' to ${targets.join(" or ")}${kind}`, [
      { path: wanted, message: "no contracted path exists", code: "no_conversion_path" },
    ]);
  }
  return {
    artifact_id: artifact.artifact_id,
    from_format: artifact.artifact_format,
    to_format: plan.to_format,
    to_kind: plan.to_kind,
    lossless: plan.steps.every((s) => s.lossless),
    steps: plan.steps,
  };
}

export async function planArtifactConversion(
  env: Env,
  tenantId: string,
  artifactId: string,
  body: ConversionPlanRequest,
): Promise<ArtifactConversionPlan> {
  return conversionPlan(env, artifactResource(await artifactRow(env, tenantId, artifactId)), body);
}

/** `:convert`: plans, refuses what cannot run (no path, nothing to do, no managed files), then queues one `convert_artifact` task. */
export async function convertArtifact(env: Env, tenantId: string, artifactId: string, body: ConvertRequest): Promise<JobAccepted> {
  const artifact = artifactResource(await artifactRow(env, tenantId, artifactId));
  const plan = conversionPlan(env, artifact, body);
  if (plan.steps.length === 0)
    throw validation(`the artifact already is '${plan.to_format}'`, [
      { path: body.to_format ? "to_format" : "accepted_formats", message: "nothing to convert", code: "already_in_format" },
    ]);
  if (artifact.files.length === 0) {
    throw validation("the artifact has no server-managed files to convert (a uri is never dereferenced)", [
      { path: "artifact_id", message: "no managed files", code: "no_managed_files" },
    ]);
  }
  return submitJob(env, {
    tenantId,
    projectId: artifact.project_id,
    dataset: await producerDataset(env, tenantId, artifact),
    recipe: "convert_artifact",
    stages: [
      {
        kind: "convert_artifact",
        params: { convert: { steps: plan.steps, name: body.name ?? `${artifact.name} as ${plan.to_format}`, options: body.options } },
      },
    ],
    input_artifacts: { source: artifact },
    recon: artifact.recon_id ? { recon_id: artifact.recon_id } : null,
  });
}

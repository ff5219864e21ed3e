/**
 * @module Building artifact descriptors (spec 2.11) and finding a task's inputs in its lease: the
 * frozen dataset, and each role's artifact, resolved from `input_artifacts` or produced upstream.
 */
import {
  type ArtifactDescriptor,
  CORE_ARTIFACT_FORMATS,
  CORE_ROLES,
  type CoreArtifactKind as CoreKind,
  type CoreRole,
  type DatasetSnapshot,
  type Lease,
} from "../../../protocol";
import type { OutputFile } from "../task-context";

export function coreArtifact(
  kind: CoreKind,
  name: string,
  files: OutputFile[],
  summary: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
): ArtifactDescriptor {
  return {
    kind,
    name,
    uri: null,
    artifact_format: CORE_ARTIFACT_FORMATS[kind],
    schema_version: 1,
    media_type: files.length === 1 ? files[0]!.media_type : "application/octet-stream",
    summary,
    metadata,
    files,
  };
}

/**
 * The files of the task's `role` input, by path: the artifact resolved from the job's
 * `input_artifacts`, else the output of the upstream task that produces that role.
 */
export function inputFiles(lease: Lease, role: CoreRole): Map<string, { blob_sha: string; byte_size: number }> {
  const { kinds, produced_by } = CORE_ROLES[role];
  const given = lease.inputs.artifacts[role];
  const artifact =
    given ??
    lease.inputs.upstream
      .filter((up) => up.kind === produced_by)
      .flatMap((up) => up.outputs_ref.artifacts)
      .find((a) => (kinds as readonly string[]).includes(a.kind));
  if (!artifact) throw new Error(`the lease carries no '${role}' input: neither an input artifact nor an upstream '${produced_by}' output`);
  return new Map(artifact.files.map((f) => [f.path, { blob_sha: f.blob_sha, byte_size: f.byte_size }]));
}

/** The dataset the job froze; stage tasks always have one. */
export function datasetOf(lease: Lease): DatasetSnapshot {
  if (!lease.inputs.dataset) throw new Error(`a ${lease.task.kind} task needs a dataset, and this job has none`);
  return lease.inputs.dataset;
}

/** Where the features of an image live inside the features artifact. */
export const featuresPath = (imageName: string) => `features/${imageName}`;

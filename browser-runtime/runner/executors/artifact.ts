/** @module Building artifact descriptors (spec 2.11) and finding upstream outputs in a lease. */
import { type ArtifactDescriptor, CORE_ARTIFACT_FORMATS, type Lease, type TaskKind } from "../../../protocol";
import type { OutputFile } from "../task-context";

type CoreKind = keyof typeof CORE_ARTIFACT_FORMATS;

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

/** The files of the upstream task's artifact of `kind`, by path. */
export function upstreamFiles(lease: Lease, from: TaskKind, kind: CoreKind): Map<string, { blob_sha: string; byte_size: number }> {
  for (const up of lease.inputs.upstream) {
    if (up.kind !== from) continue;
    const artifact = up.outputs_ref.artifacts.find((a) => a.kind === kind);
    if (artifact) return new Map(artifact.files.map((f) => [f.path, { blob_sha: f.blob_sha, byte_size: f.byte_size }]));
  }
  throw new Error(`the lease carries no '${kind}' output of an upstream '${from}' task`);
}

/** Where the features of an image live inside the features artifact. */
export const featuresPath = (imageName: string) => `features/${imageName}`;

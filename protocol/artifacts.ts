/**
 * @module The artifact vocabulary (spec 2.11): core kinds, their default canonical formats, and
 * the descriptor a stage emits. Backend-native outputs use same-family namespaced kinds and
 * backend-owned format ids; they are never added to the core vocabulary (2.11 rule 2).
 */
import { z } from "zod";
import { Id, Links, Sha256, Timestamp } from "./schemas/common";

/** Core kind -> default canonical format id (2.11 rule 1; namespace word `svc`). */
export const CORE_ARTIFACT_FORMATS = {
  "features.local.v1": "svc.features.local.v1",
  "features.global.v1": "svc.features.global.v1",
  "pairs.image_names.v1": "svc.pairs.image_names.v1",
  "matches.indexed.v1": "svc.matches.indexed.v1",
  "matches.coordinates.v1": "svc.matches.coordinates.v1",
  "matches.dense.v1": "svc.matches.dense.v1",
  "matches.verified.v1": "svc.matches.verified.v1",
  "reconstruction.sparse.v1": "svc.reconstruction.sparse.v1",
  "reconstruction.snapshot": "svc.reconstruction.snapshot",
  "reconstruction.submodel": "svc.reconstruction.submodel",
  "projection.images.v1": "svc.projection.images.v1",
} as const satisfies Record<string, string>;

const DotId = z.string().min(3).max(128).regex(/^[a-z0-9_]+(\.[a-z0-9_]+)+$/, "must be a dot-notated id such as 'features.local.v1'");

/** One stored file of an artifact: content-addressed bytes in the tenant's blob store. */
export const ArtifactFile = z.object({
  path: z.string().min(1).max(1024).regex(/^[^/\\\0][^\\\0]*$/, "must be a relative path"),
  blob_sha: Sha256,
  byte_size: z.number().int().min(0),
  media_type: z.string().max(255).optional(),
});

/** The descriptor a stage emits (2.11). An invalid one fails its task with a validation error (rule 3). */
export const ArtifactDescriptor = z
  .object({
    kind: DotId,
    name: z.string().min(1).max(256),
    uri: z.string().max(4096).nullable().default(null),
    artifact_format: DotId,
    schema_version: z.number().int().min(1),
    media_type: z.string().min(1).max(255),
    summary: z.record(z.string(), z.unknown()).default({}),
    metadata: z.record(z.string(), z.unknown()).default({}),
    files: z.array(ArtifactFile).min(1).max(1024),
  })
  .superRefine((a, ctx) => {
    const core = (CORE_ARTIFACT_FORMATS as Record<string, string>)[a.kind];
    if (core && a.artifact_format !== core && a.artifact_format.startsWith("svc.")) {
      ctx.addIssue({ code: "custom", path: ["artifact_format"], message: `core kind '${a.kind}' has core format '${core}'` });
    }
    if (!core && a.artifact_format.startsWith("svc.")) {
      ctx.addIssue({ code: "custom", path: ["artifact_format"], message: "the 'svc.' namespace is reserved for core kinds" });
    }
  })
  .meta({ id: "ArtifactDescriptor" });
export type ArtifactDescriptor = z.infer<typeof ArtifactDescriptor>;

/**
 * A stored artifact (2.11): the descriptor plus what the server assigns: its id, the job and task
 * that own it (an import job's for imports), and the scope it belongs to. `files` are managed
 * bytes (blobs of this tenant); an imported artifact with only a `uri` has none.
 */
export const StageArtifact = z
  .object({
    artifact_id: Id,
    job_id: Id,
    task_id: Id,
    project_id: Id,
    dataset_id: Id.nullable(),
    recon_id: Id.nullable(),
    kind: DotId,
    name: z.string(),
    uri: z.string().nullable(),
    artifact_format: DotId,
    schema_version: z.number().int(),
    media_type: z.string(),
    summary: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.unknown()),
    files: z.array(ArtifactFile),
    created_at: Timestamp,
    _links: Links,
  })
  .meta({ id: "StageArtifact" });
export type StageArtifact = z.infer<typeof StageArtifact>;

/**
 * @module The artifact vocabulary (spec 2.11): core kinds, their default canonical formats, and
 * the descriptor a stage emits. Backend-native outputs use same-family namespaced kinds and
 * backend-owned format ids; they are never added to the core vocabulary (2.11 rule 2).
 */
import { z } from "zod";
import { Id, Links, Page, Sha256, Timestamp } from "./schemas/common";
import type { TaskKind } from "./schemas/task-kind";

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

export type CoreArtifactKind = keyof typeof CORE_ARTIFACT_FORMATS;

/** What each core kind holds, and the media type of its default format's files (`GET /v1/artifacts/kinds`, `/formats`). */
export const CORE_ARTIFACT_KINDS: Record<CoreArtifactKind, { description: string; media_type: string }> = {
  "features.local.v1": {
    description:
      "local features of each image (keypoints and descriptors), one file `features/<image name>` per image; layout in protocol/README.md",
    media_type: "application/x-sfm-features-v1",
  },
  "features.global.v1": { description: "one global descriptor per image, for retrieval", media_type: "application/octet-stream" },
  "pairs.image_names.v1": {
    description:
      "image pairs to match, one `<image name 1> <image name 2>` line each; a match task's, one file `pairs/<a>-<b>.txt` per block of its pair list",
    media_type: "text/plain",
  },
  "matches.indexed.v1": {
    description: "putative matches of image pairs as keypoint index pairs (`matches.bin`); layout in protocol/README.md",
    media_type: "application/x-sfm-matches-v1",
  },
  "matches.coordinates.v1": { description: "matches of image pairs as pixel coordinate pairs", media_type: "application/octet-stream" },
  "matches.dense.v1": { description: "dense correspondences of image pairs", media_type: "application/octet-stream" },
  "matches.verified.v1": {
    description: "geometrically verified matches with each pair's two-view geometry (`two_view_geometries.json`, spec 2.14)",
    media_type: "application/json",
  },
  "reconstruction.sparse.v1": {
    description: "the largest model a mapping task produced, as snapshot files (cameras.json, images.json, points.bin, ...)",
    media_type: "application/octet-stream",
  },
  "reconstruction.snapshot": {
    description: "a sealed snapshot's root model (spec 2.10): cameras.json, images.json, summary.json, points.bin, points_preview.bin",
    media_type: "application/octet-stream",
  },
  "reconstruction.submodel": {
    description: "one component of a sealed snapshot (spec 2.8), with the files of a snapshot",
    media_type: "application/octet-stream",
  },
  "projection.images.v1": {
    description: "projected images and `projection_manifest.json` (spec 4.14)",
    media_type: "application/octet-stream",
  },
};

/** The most files one artifact lists: its descriptor travels in one JSON request and one stored row. */
export const MAX_ARTIFACT_FILES = 1024;

const DotId = z
  .string()
  .min(3)
  .max(128)
  .regex(/^[a-z0-9_]+(\.[a-z0-9_]+)+$/, "must be a dot-notated id such as 'features.local.v1'");

/** One stored file of an artifact: content-addressed bytes in the tenant's blob store. */
export const ArtifactFile = z.object({
  path: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[^/\\\0][^\\\0]*$/, "must be a relative path"),
  blob_sha: Sha256,
  byte_size: z.number().int().min(0),
  media_type: z.string().max(255).optional(),
});

const descriptorFields = {
  kind: DotId,
  name: z.string().min(1).max(256),
  uri: z.string().max(4096).nullable().default(null),
  artifact_format: DotId,
  schema_version: z.number().int().min(1),
  media_type: z.string().min(1).max(255),
  summary: z.record(z.string(), z.unknown()).default({}),
  metadata: z.record(z.string(), z.unknown()).default({}),
  files: z.array(ArtifactFile).min(1).max(MAX_ARTIFACT_FILES),
};

const vocabulary = (a: { kind: string; artifact_format: string }, ctx: z.RefinementCtx) => {
  for (const issue of vocabularyIssues(a)) ctx.addIssue({ code: "custom", ...issue });
};

/** The descriptor a stage emits (2.11). An invalid one fails its task with a validation error (rule 3). */
export const ArtifactDescriptor = z.object(descriptorFields).superRefine(vocabulary).meta({ id: "ArtifactDescriptor" });
export type ArtifactDescriptor = z.infer<typeof ArtifactDescriptor>;

/**
 * Core kind/format compatibility (2.11 rules 1, 2): a core kind keeps its core format (or a
 * backend-owned one), and the `svc.` namespace belongs to core kinds. Shared by descriptor
 * validation and `:validate`.
 */
export function vocabularyIssues(a: { kind: string; artifact_format: string }): { path: string[]; message: string }[] {
  const core = (CORE_ARTIFACT_FORMATS as Record<string, string>)[a.kind];
  if (core && a.artifact_format !== core && a.artifact_format.startsWith("svc.")) {
    return [{ path: ["artifact_format"], message: `core kind '${a.kind}' has core format '${core}'` }];
  }
  if (!core && a.artifact_format.startsWith("svc."))
    return [{ path: ["artifact_format"], message: "the 'svc.' namespace is reserved for core kinds" }];
  return [];
}

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
    uri: z
      .string()
      .describe(
        "metadata, not a portability contract (2.11): the URI an import recorded, else the route serving the bytes stored here (`/v1/artifacts/{artifact_id}/content`)",
      ),
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
export const StageArtifactPage = Page(StageArtifact, "StageArtifactPage");

/** A URI the server records but never dereferences (4.10): an absolute URI (`s3://`, `https://`, `file:`) or an absolute path. */
const ImportedUri = z
  .string()
  .min(1)
  .max(4096)
  .regex(/^([A-Za-z][A-Za-z0-9+.-]*:|\/)/, "must be an absolute URI (scheme:...) or an absolute path");

/**
 * An imported artifact's descriptor (4.10 `:import`): its bytes stay where `uri` says (never
 * copied, never dereferenced), or are blobs of the tenant already (`files`, from finalized
 * uploads); at least one of the two.
 */
const importedFields = {
  ...descriptorFields,
  uri: ImportedUri.nullable().default(null),
  schema_version: z.number().int().min(1).default(1),
  media_type: z.string().min(1).max(255).default("application/octet-stream"),
  files: z.array(ArtifactFile).max(MAX_ARTIFACT_FILES).default([]),
};
const uriOrFiles = (a: { uri: string | null; files: unknown[] }, ctx: z.RefinementCtx) => {
  if (a.uri === null && a.files.length === 0)
    ctx.addIssue({ code: "custom", path: ["uri"], message: "name a uri, or files (blobs of this tenant), or both" });
};

/** What a stored artifact's descriptor must be (`:validate`): a stage's, or an import's (a uri without files). */
export const StoredDescriptor = z.object(importedFields).superRefine(vocabulary).superRefine(uriOrFiles);

/** `POST /v1/artifacts:import` (4.10): the descriptor, and where the artifact belongs. */
export const ArtifactImportRequest = z
  .object({
    ...importedFields,
    project_id: Id,
    dataset_id: Id.optional().describe("the dataset it was computed from: its dataset scope (2.11) and the photos a conversion may list"),
    recon_id: Id.optional().describe("the reconstruction it belongs to"),
  })
  .superRefine(vocabulary)
  .superRefine(uriOrFiles)
  .meta({ id: "ArtifactImportRequest" });
export type ArtifactImportRequest = z.infer<typeof ArtifactImportRequest>;

/** `POST /v1/artifacts/{id}:validate` (4.10): what was checked, and every problem found (empty when valid). */
export const ArtifactValidation = z
  .object({
    artifact_id: Id,
    valid: z.boolean(),
    errors: z.array(z.object({ path: z.string(), message: z.string(), code: z.string() })),
    checked: z.object({
      files: z.number().int().describe("managed files whose bytes were read and hashed"),
      bytes: z.number().int(),
      documents: z.number().int().describe("files checked as what they are named (JSON manifests, snapshot files, features, matches)"),
    }),
  })
  .meta({ id: "ArtifactValidation" });
export type ArtifactValidation = z.infer<typeof ArtifactValidation>;

export const ArtifactKind = z
  .object({ kind: DotId, default_format: DotId, media_type: z.string(), description: z.string() })
  .meta({ id: "ArtifactKind" });
export const ArtifactFormat = z
  .object({ artifact_format: DotId, kind: DotId, media_type: z.string(), description: z.string() })
  .meta({ id: "ArtifactFormat" });

/** The exact-match filters of the artifact listings (4.8, 4.9). */
export const ArtifactListQuery = z.object({
  kind: z.string().max(128).optional(),
  task_id: Id.optional(),
  name: z.string().max(256).optional(),
});

/**
 * The core roles of `input_artifacts` (2.11): the kinds each accepts, and which task of a
 * pipeline produces that output otherwise (runners read a role from the lease's resolved
 * artifacts, else from that upstream task).
 */
export const CORE_ROLES = {
  features: { kinds: ["features.local.v1"], produced_by: "extract" },
  pairs: { kinds: ["pairs.image_names.v1"], produced_by: null },
  matches: { kinds: ["matches.indexed.v1"], produced_by: "match" },
  verified_matches: { kinds: ["matches.verified.v1"], produced_by: "verify" },
  snapshot: { kinds: ["reconstruction.snapshot"], produced_by: null },
  submodel: { kinds: ["reconstruction.submodel"], produced_by: null },
} as const satisfies Record<string, { kinds: readonly CoreArtifactKind[]; produced_by: TaskKind | null }>;
export type CoreRole = keyof typeof CORE_ROLES;

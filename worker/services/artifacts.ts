/**
 * @module Stage artifacts (spec 2.11, 4.10): the stored record as the API renders it, the core
 * vocabulary, and an artifact's bytes (`/content`): one file, or every file as one tar archive.
 * Only server-managed files (blobs of the tenant) are served; a `uri` is never dereferenced.
 */
import { CORE_ARTIFACT_FORMATS, CORE_ARTIFACT_KINDS, type CoreArtifactKind, type StageArtifact } from "../../protocol";
import { TAR_END_BYTES, tarEntryHeader, tarPaddingLength } from "../../protocol/wire/tar";
import { notFound } from "../errors";
import type { PageRequest } from "../storage/sql";
import type { ArtifactFilter, ArtifactRow } from "../storage/tenant-rows";
import { hashJson } from "./runtime";
import { type BytePart, serveBytes } from "./bytes";
import { tenantStore, unwrap } from "./stores";

const link = (href: string) => ({ href });

export function artifactResource(r: ArtifactRow): StageArtifact {
  const self = `/v1/artifacts/${r.artifact_id}`;
  const d = JSON.parse(r.descriptor_json) as Omit<
    StageArtifact,
    "artifact_id" | "job_id" | "task_id" | "project_id" | "dataset_id" | "recon_id" | "created_at" | "_links"
  >;
  return {
    artifact_id: r.artifact_id,
    job_id: r.job_id,
    task_id: r.task_id,
    project_id: r.project_id,
    dataset_id: r.dataset_id,
    recon_id: r.recon_id,
    kind: d.kind,
    name: d.name,
    // Metadata, never dereferenced (2.11): the recorded one, else the route serving the bytes stored here.
    uri: d.uri ?? `${self}/content`,
    artifact_format: d.artifact_format,
    schema_version: d.schema_version,
    media_type: d.media_type,
    summary: d.summary,
    metadata: d.metadata,
    files: d.files,
    created_at: r.created_at,
    _links: {
      self: link(self),
      ...(d.files.length > 0 ? { content: link(`${self}/content`) } : {}),
      job: link(`/v1/jobs/${r.job_id}`),
      project: link(`/v1/projects/${r.project_id}`),
      ...(r.recon_id ? { reconstruction: link(`/v1/reconstructions/${r.recon_id}`) } : {}),
    },
  };
}

/** The tenant's artifact, or 404 (absent, or another tenant's: 5.3). */
export async function artifactRow(env: Env, tenantId: string, artifactId: string): Promise<ArtifactRow> {
  const row = await tenantStore(env, tenantId).getArtifact(artifactId);
  if (!row) throw notFound("artifact");
  return row;
}

/** A page of the job's or the reconstruction's artifacts (4.8, 4.9), oldest first, filtered by exact match. */
export async function listArtifacts(
  env: Env,
  tenantId: string,
  owner: { job_id: string } | { recon_id: string },
  query: ArtifactFilter & PageRequest,
) {
  const { kind, task_id, name, ...page } = query;
  const result = unwrap(await tenantStore(env, tenantId).listArtifacts(owner, { kind, task_id, name }, page));
  return { ...result, items: result.items.map(artifactResource) };
}

/** The reserved core kinds (2.11), sorted by kind. */
export const coreKinds = () =>
  (Object.keys(CORE_ARTIFACT_FORMATS) as CoreArtifactKind[]).sort().map((kind) => ({
    kind,
    default_format: CORE_ARTIFACT_FORMATS[kind],
    media_type: CORE_ARTIFACT_KINDS[kind].media_type,
    description: CORE_ARTIFACT_KINDS[kind].description,
  }));

/** The reserved core formats (2.11 rule 1: each core kind's default canonical format), sorted by format id. */
export const coreFormats = () =>
  coreKinds()
    .map((k) => ({
      artifact_format: k.default_format,
      kind: k.kind,
      media_type: k.media_type,
      description: `the canonical format of '${k.kind}': ${k.description}`,
    }))
    .sort((a, b) => a.artifact_format.localeCompare(b.artifact_format));

/** A safe file name for `Content-Disposition`: the last path segment. */
const baseName = (path: string) => path.split("/").at(-1)!;

/**
 * `GET /v1/artifacts/{id}/content` (4.10): the file at `path`; without `path`, the artifact's only
 * file, or all its files as one POSIX tar (paths as listed, in order; strong ETag over the file
 * list, since the same files always make the same bytes). ETag, 304, Range and `download=true`
 * as for every byte route (4 rules 1-3). 404 when the artifact has no managed files (an imported
 * `uri` is not dereferenced) or no file at `path`.
 */
export async function serveArtifactContent(
  env: Env,
  req: Request,
  tenantId: string,
  artifactId: string,
  o: { path?: string | undefined; download: boolean },
) {
  const artifact = artifactResource(await artifactRow(env, tenantId, artifactId));
  if (artifact.files.length === 0) {
    throw notFound(
      `content of artifact ${artifactId}: it has no server-managed files${artifact.uri ? ` (its uri '${artifact.uri}' is not dereferenced)` : ""}`,
    );
  }
  const files = o.path === undefined ? artifact.files : artifact.files.filter((f) => f.path === o.path);
  if (files.length === 0) throw notFound(`file '${o.path}' in artifact ${artifactId}`);
  const tenant = tenantStore(env, tenantId);
  const blobs = await Promise.all(files.map((f) => tenant.getBlob(f.blob_sha)));
  const keys = blobs.map((b, i) => {
    if (!b) throw notFound(`the bytes of '${files[i]!.path}'`);
    return b.r2_key;
  });
  const cache = { immutable: true, shared: false };
  if (files.length === 1) {
    const f = files[0]!;
    return serveBytes(env.BLOBS, req, {
      key: keys[0]!,
      size: f.byte_size,
      etag: `"${f.blob_sha}"`,
      contentType: f.media_type ?? artifact.media_type,
      cache,
      downloadName: o.download ? baseName(f.path) : undefined,
    });
  }
  const parts: BytePart[] = files.flatMap((f, i) => [
    { bytes: tarEntryHeader(f.path, f.byte_size) },
    { key: keys[i]!, size: f.byte_size },
    { bytes: new Uint8Array(tarPaddingLength(f.byte_size)) },
  ]);
  parts.push({ bytes: new Uint8Array(TAR_END_BYTES) });
  return serveBytes(env.BLOBS, req, {
    parts,
    etag: `"tar-${hashJson(files.map((f) => [f.path, f.blob_sha]))}"`,
    contentType: "application/x-tar",
    cache,
    downloadName: o.download ? `${artifact.name.replace(/[^A-Za-z0-9._-]+/g, "_")}.tar` : undefined,
  });
}

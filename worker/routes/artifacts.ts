/**
 * @module Artifacts (spec 4.10, vocabulary 2.11): the reserved core kinds and formats, a stored
 * StageArtifact and its bytes, and the listings of a job's (4.8) and a reconstruction's (4.9)
 * artifacts.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ArtifactFormat, ArtifactKind, ArtifactListQuery, Id, Page, PageQuery, StageArtifact, StageArtifactPage } from "../../protocol";
import { problemResponses } from "../openapi";
import { newRouter } from "../router";
import { artifactResource, artifactRow, coreFormats, coreKinds, listArtifacts, serveArtifactContent } from "../services/artifacts";
import { paginateArray } from "../services/pages";

export const artifacts = newRouter();

const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
export const ArtifactParams = z.object({ artifact_id: Id });

artifacts.openapi(
  createRoute({
    method: "get",
    path: "/v1/artifacts/kinds",
    tags: ["artifacts"],
    request: { query: PageQuery },
    responses: { 200: json(Page(ArtifactKind, "ArtifactKindPage"), "the reserved core kinds (2.11), each with its default canonical format"), ...problemResponses(401, 422) },
  }),
  (c) => c.json(paginateArray(coreKinds(), (k) => k.kind, c.req.valid("query")), 200),
);

artifacts.openapi(
  createRoute({
    method: "get",
    path: "/v1/artifacts/formats",
    tags: ["artifacts"],
    request: { query: PageQuery },
    responses: { 200: json(Page(ArtifactFormat, "ArtifactFormatPage"), "the reserved core formats (2.11 rule 1, namespace `svc`)"), ...problemResponses(401, 422) },
  }),
  (c) => c.json(paginateArray(coreFormats(), (f) => f.artifact_format, c.req.valid("query")), 200),
);

artifacts.openapi(
  createRoute({
    method: "get",
    path: "/v1/artifacts/{artifact_id}",
    tags: ["artifacts"],
    request: { params: ArtifactParams },
    responses: { 200: json(StageArtifact, "the artifact: its descriptor, owner job and task, and scope"), ...problemResponses(401, 404) },
  }),
  async (c) => c.json(artifactResource(await artifactRow(c.env, c.var.tenantId, c.req.valid("param").artifact_id)), 200),
);

const bytes = (description: string) => ({ content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } }, description });

artifacts.openapi(
  createRoute({
    method: "get",
    path: "/v1/artifacts/{artifact_id}/content",
    tags: ["artifacts"],
    description: [
      "The artifact's bytes. Only server-managed files (blobs of the tenant) are served: an imported artifact's `uri` is never dereferenced (404).",
      "`path` names one file of `files`; without it, the only file, or every file as one POSIX tar archive (`application/x-tar`, paths as listed).",
      "Strong ETag (a file's SHA-256; for an archive, a digest of its file list), `If-None-Match` -> 304, `Range` -> 206, `Cache-Control: private, max-age=31536000, immutable`.",
    ].join("\n"),
    request: {
      params: ArtifactParams,
      query: z.object({
        path: z.string().min(1).max(1024).optional().describe("one file of the artifact"),
        download: z.enum(["true", "false"]).default("false").describe("attachment disposition"),
      }),
    },
    responses: {
      200: bytes("the file, or the tar archive of every file"),
      206: bytes("the requested byte range"),
      304: { description: "not modified" },
      ...problemResponses(401, 404, 416, 422),
    },
  }),
  async (c) => {
    const { path, download } = c.req.valid("query");
    return serveArtifactContent(c.env, c.req.raw, c.var.tenantId, c.req.valid("param").artifact_id, { path, download: download === "true" }) as never;
  },
);

const LISTINGS = [
  {
    path: "/v1/jobs/{jid}/artifacts",
    params: z.object({ jid: Id }),
    owner: (p: { jid: string }) => ({ job_id: p.jid }),
    tags: ["jobs", "artifacts"],
    description:
      "The artifacts the job's tasks produced (2.11), oldest first. A cache-hit task (3.2.1) lists artifacts of its own, owned by it and this job, whose files are the same blobs as those of the task that computed them.",
  },
  {
    path: "/v1/reconstructions/{rid}/artifacts",
    params: z.object({ rid: Id }),
    owner: (p: { rid: string }) => ({ recon_id: p.rid }),
    tags: ["reconstructions", "artifacts"],
    description:
      "Every artifact of the reconstruction (2.11), oldest first: its pipeline tasks' outputs, each sealed snapshot (`reconstruction.snapshot`) and component (`reconstruction.submodel`), and its exports.",
  },
] as const;

for (const l of LISTINGS) {
  artifacts.openapi(
    createRoute({
      method: "get",
      path: l.path,
      tags: [...l.tags],
      description: `${l.description} \`kind\`, \`task_id\` and \`name\` filter by exact match.`,
      request: { params: l.params, query: PageQuery.extend(ArtifactListQuery.shape) },
      responses: { 200: json(StageArtifactPage, "a page of artifacts"), ...problemResponses(401, 404, 422) },
    }),
    async (c) => {
      // (The loop hides valid()'s typing; the validator ran with exactly these schemas.)
      const req = c.req as unknown as { valid(t: "param"): never; valid(t: "query"): z.output<typeof ArtifactListQuery> & { page_size: number; page_token?: string } };
      return c.json(await listArtifacts(c.env, c.var.tenantId, l.owner(req.valid("param")), req.valid("query")), 200);
    },
  );
}

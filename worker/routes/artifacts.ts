/**
 * @module Artifacts (spec 4.10, vocabulary 2.11): the reserved core kinds and formats, a stored
 * StageArtifact and its bytes, the listings of a job's (4.8) and a reconstruction's (4.9)
 * artifacts, and the actions `:import`, `:validate`, `:conversionPlan` and `:convert`.
 * `artifacts.md` beside this file is the reference for clients.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  ArtifactConversionPlan,
  ArtifactFormat,
  ArtifactImportRequest,
  ArtifactKind,
  ArtifactListQuery,
  ArtifactValidation,
  ConversionPlanRequest,
  ConvertRequest,
  Id,
  JobAccepted,
  Page,
  PageQuery,
  StageArtifact,
  StageArtifactPage,
} from "../../protocol";
import { json, jsonBody, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { convertArtifact, importArtifact, planArtifactConversion, validateArtifact } from "../services/artifact-actions";
import { artifactResource, artifactRow, coreFormats, coreKinds, listArtifacts, serveArtifactContent } from "../services/artifacts";
import { paginateArray } from "../services/pages";

export const artifacts = newRouter();

export const ArtifactParams = z.object({ artifact_id: Id });

artifacts.openapi(
  createRoute({
    method: "get",
    path: "/v1/artifacts/kinds",
    tags: ["artifacts"],
    request: { query: PageQuery },
    responses: {
      200: json(Page(ArtifactKind, "ArtifactKindPage"), "the reserved core kinds (2.11), each with its default canonical format"),
      ...problemResponses(401, 422),
    },
  }),
  (c) =>
    c.json(
      paginateArray(coreKinds(), (k) => k.kind, c.req.valid("query")),
      200,
    ),
);

artifacts.openapi(
  createRoute({
    method: "get",
    path: "/v1/artifacts/formats",
    tags: ["artifacts"],
    request: { query: PageQuery },
    responses: {
      200: json(Page(ArtifactFormat, "ArtifactFormatPage"), "the reserved core formats (2.11 rule 1, namespace `svc`)"),
      ...problemResponses(401, 422),
    },
  }),
  (c) =>
    c.json(
      paginateArray(coreFormats(), (f) => f.artifact_format, c.req.valid("query")),
      200,
    ),
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

const bytes = (description: string) => ({
  content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } },
  description,
});

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
    return serveArtifactContent(c.env, c.req.raw, c.var.tenantId, c.req.valid("param").artifact_id, {
      path,
      download: download === "true",
    });
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
      const req = c.req as unknown as {
        valid(t: "param"): never;
        valid(t: "query"): z.output<typeof ArtifactListQuery> & { page_size: number; page_token?: string };
      };
      return c.json(await listArtifacts(c.env, c.var.tenantId, l.owner(req.valid("param")), req.valid("query")), 200);
    },
  );
}

// ---- actions (4.10) ----

artifacts.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/artifacts:import",
    tags: ["artifacts"],
    description: [
      "Registers an existing artifact without copying bytes: a `uri` (recorded, never dereferenced) and/or `files` that are already blobs of the tenant (finalized uploads).",
      "It is owned by a new `artifact_import` job whose one task is succeeded at once. 404: project, dataset or reconstruction unknown (or of another project);",
      "422: a malformed descriptor (a core kind keeps its `svc.*` format), files that are not blobs of that size, a reconstruction of another dataset.",
    ].join("\n"),
    request: jsonBody(ArtifactImportRequest),
    responses: {
      201: { ...json(StageArtifact, "registered"), headers: z.object({ Location: z.string().describe("/v1/artifacts/<artifact_id>") }) },
      ...problemResponses(400, 401, 404, 413, 422),
    },
  }),
  async (c) => {
    const artifact = await importArtifact(c.env, c.var.tenantId, c.req.valid("json"));
    return c.json(artifact, 201, { Location: `/v1/artifacts/${artifact.artifact_id}` });
  },
);

artifacts.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/artifacts/{artifact_id}:validate",
    tags: ["artifacts"],
    description:
      "Checks the stored descriptor (schema, core kind/format compatibility), then every managed file: stored, of its declared size, hashing to its `blob_sha`, and valid as the document it is named (JSON manifests; snapshot files against their 2.14 schemas; features and matches wire formats). Runs no job.",
    request: { params: ArtifactParams },
    responses: { 200: json(ArtifactValidation, "the checks and every problem found"), ...problemResponses(401, 404) },
  }),
  async (c) => c.json(await validateArtifact(c.env, c.var.tenantId, c.req.valid("param").artifact_id), 200),
);

artifacts.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/artifacts/{artifact_id}:conversionPlan",
    tags: ["artifacts"],
    description: [
      "The shortest path (fewest steps) over the conversion graph (protocol/exports.ts CONVERSIONS) to `to_format` or any of `accepted_formats`; equally short paths go to the earlier format",
      "(`to_format` first, then `accepted_formats` in order). `to_kind` restricts the result's kind; `require_lossless` uses lossless steps only. No steps when the artifact already is in a wanted format.",
      "422 `no_conversion_path` or `lossless_impossible`; 501 when the only path needs a capability this deployment lacks.",
    ].join("\n"),
    request: { params: ArtifactParams, ...jsonBody(ConversionPlanRequest) },
    responses: { 200: json(ArtifactConversionPlan, "the plan"), ...problemResponses(400, 401, 404, 413, 422, 501) },
  }),
  async (c) => c.json(await planArtifactConversion(c.env, c.var.tenantId, c.req.valid("param").artifact_id, c.req.valid("json")), 200),
);

artifacts.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/artifacts/{artifact_id}:convert",
    tags: ["artifacts"],
    description: [
      "Plans as `:conversionPlan`, then queues a job with one `convert_artifact` task (phase `artifact_conversion`) that runs every step in turn, each feeding the next (4.10 rule 2);",
      "its artifact is the last step's. Refused before anything is queued (4.10 rule 1): no path or no lossless one (422), a missing capability (501), nothing to convert (422 `already_in_format`),",
      "an artifact without managed files (422 `no_managed_files`). `options` are the export options of export steps.",
    ].join("\n"),
    request: { params: ArtifactParams, ...jsonBody(ConvertRequest) },
    responses: {
      202: {
        ...json(JobAccepted, "accepted; follow the job, then read its artifact"),
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 413, 422, 501),
    },
  }),
  async (c) => {
    const body = await convertArtifact(c.env, c.var.tenantId, c.req.valid("param").artifact_id, c.req.valid("json"));
    return c.json(body, 202, { Location: `/v1/jobs/${body.job_id}` });
  },
);

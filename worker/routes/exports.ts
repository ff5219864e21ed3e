/**
 * @module Exports of a reconstruction (spec 1.2 `export.*`; the route is our addition, 9.2):
 * `POST /v1/reconstructions/{rid}/export` answers 202 with the export job (2.9 task kind `export`),
 * whose artifact is read at `/v1/jobs/{jid}/artifacts` and `/v1/artifacts/{id}/content`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ExportRequest, Id, JobAccepted } from "../../protocol";
import { problemResponses } from "../openapi";
import { newRouter } from "../router";
import { submitExport } from "../services/exports";

export const exportRoutes = newRouter();

exportRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/reconstructions/{rid}/export",
    tags: ["reconstructions", "artifacts"],
    description: [
      "Exports a sealed snapshot (default the latest; `seq`) or one component (`submodel_idx`) to `format`, as a job with one `export` task that a runner computes.",
      "Its artifact (kind and format per protocol/exports.ts EXPORT_ARTIFACT_TYPES) is listed at `/v1/jobs/{jid}/artifacts` and downloaded at `/v1/artifacts/{id}/content`.",
      "Photo-carrying formats (nerfstudio, instant_ngp, gaussian_splatting, kapture) list the dataset's own image blobs (`options.include_images`, default true): no bytes are copied.",
      "404 unknown reconstruction, snapshot or component; 409 no snapshot sealed yet; 501 `export.<format>` not offered. A snapshot the format cannot hold",
      "(e.g. distorted cameras for gaussian_splatting without `options.allow_distorted_cameras`) fails the task with `error_class` ValidationError and says why.",
    ].join("\n"),
    request: {
      params: z.object({ rid: Id }),
      body: { content: { "application/json": { schema: ExportRequest } }, required: true },
    },
    responses: {
      202: {
        content: { "application/json": { schema: JobAccepted } },
        description: "accepted; follow the job, then read its artifact",
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 409, 413, 422, 501),
    },
  }),
  async (c) => {
    const body = await submitExport(c.env, c.var.tenantId, c.req.valid("param").rid, c.req.valid("json"));
    return c.json(body, 202, { Location: `/v1/jobs/${body.job_id}` });
  },
);

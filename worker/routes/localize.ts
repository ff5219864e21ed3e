/**
 * @module Localization (spec 4.13 localize, capability `localize.from_memory`): `POST
 * /v1/reconstructions/{rid}/localize` answers 202 with a job whose one `relocalize` task a runner
 * computes; the task's `outputs_ref.result` is the LocalizationResult (2.13).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { Id, JobAccepted, LocalizationRequest } from "../../protocol";
import { jsonBody, problemResponses } from "../openapi";
import { newRouter } from "../router";
import { submitLocalize } from "../services/localize";

export const localizeRoutes = newRouter();

localizeRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/reconstructions/{rid}/localize",
    tags: ["reconstructions"],
    summary: "localizes an image against the reconstruction (4.13)",
    description: [
      "The query is a finalized upload of this tenant (`blob_sha`, 64 hex characters). A job with one `relocalize` task: a runner extracts the query's SIFT features",
      "(`sift` overrides max_num_features, first_octave, peak_threshold, edge_threshold), matches them to the 3D points of the reconstruction's largest sealed snapshot",
      "(each point described by the mean descriptor of the keypoints observing it, kept with the snapshot as its `x-point_descriptors.bin`) and estimates the pose by P3P in LO-RANSAC, refined on the inliers,",
      "the focal length scanned when the photo's EXIF gives none. The task's `outputs_ref.result` is a LocalizationResult (`success: false` with `diagnostics.reason` when it",
      "cannot be localized). 404 unknown reconstruction; 422 `blob_sha` missing, malformed, not stored in this tenant (`unknown_blob`) or not an image (`not_an_image`);",
      "409 no snapshot sealed yet, or one sealed without point descriptors whose features are no longer stored.",
    ].join("\n"),
    request: { params: z.object({ rid: Id }), ...jsonBody(LocalizationRequest) },
    responses: {
      202: {
        content: { "application/json": { schema: JobAccepted } },
        description: "accepted; follow the job: its task's outputs_ref.result is a LocalizationResult",
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 409, 413, 422, 501),
    },
  }),
  async (c) => {
    const body = await submitLocalize(c.env, c.var.tenantId, c.req.valid("param").rid, c.req.valid("json"));
    return c.json(body, 202, { Location: `/v1/jobs/${body.job_id}` });
  },
);

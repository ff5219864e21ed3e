/**
 * @module `POST /v1/reconstructions/{rid}/georegister` (spec 4.13, capability `georegister.sim3`):
 * 202 with a job of one `georegister` task; the checks are in services/georegister.ts, the work in
 * the runners' executor (browser-runtime/runner/executors/georegister.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { GeoregisterRequest, Id, JobAccepted, parseGeoregisterRequest } from "../../protocol";
import { problemResponses } from "../openapi";
import { fieldErrors, newRouter, validationHook } from "../router";
import { validation } from "../errors";
import { submitGeoregister } from "../services/georegister";

export const georegisterRoutes = newRouter();

/** The body parsed by the form it takes (parseGeoregisterRequest), or 422 naming that form's fields. */
function checkedBody(raw: unknown) {
  const parsed = parseGeoregisterRequest(raw);
  if (!parsed.success) throw validation("invalid request body", fieldErrors(parsed.error));
  return parsed.data;
}

georegisterRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/reconstructions/{rid}/georegister",
    tags: ["reconstructions"],
    summary: "Apply a Sim3 to the latest sealed snapshot",
    description: [
      "Moves every camera and 3D point of the reconstruction's latest sealed snapshot (its root and each component) by the Sim3 `new_from_old * x = scale * R x + translation`",
      "and seals the result as a new snapshot, announced by `snapshot_available` (4.13). A job with one `georegister` task (an extension kind, 9.2; phase `georegister`).",
      "Poses: cam_from_world (R_c, t_c) becomes (R_c R^T, scale t_c - R_c R^T translation); rigs' sensor_from_rig and pose-graph edges scale their translation;",
      "points are moved in float64 and stored as float32; intrinsics, observations and ids are unchanged. The task's result: `{snapshot_seq, source_seq, sim3}`.",
      "",
      'Our extension (2.0): `{"x-from_gps": true}` instead of a Sim3 estimates it robustly (Umeyama\'s similarity inside RANSAC, inlier threshold `x-max_error_m`,',
      "refitted on the inliers) from the registered cameras' centres and their images' positions: `x-reference` `gps` (a pose prior's `gps`, else the photo's EXIF GPS,",
      "in a local East-North-Up frame in metres whose origin is their mean position) or `pose_priors` (the priors' camera centres and orientations, in their frame);",
      "`auto` (default) takes gps when 3 images have one. The result's `x-alignment` reports the ENU origin, the inlier count and each image's residual (`rmse_m`, `median_m`, `max_m`);",
      "the task fails (ValidationError) when fewer than 3 registered images have a position, or the inlier GPS positions lie on a line (the roll about it is then unknown).",
      "",
      "404 unknown reconstruction; 422 a malformed Sim3 (a rotation not a unit quaternion within 1e-3, a scale not positive, a number not finite), or x-from_gps with fewer",
      "than 3 images with a position; 409 before any snapshot is sealed. Nothing is created when the request is refused.",
    ].join("\n"),
    request: {
      params: z.object({ rid: Id }),
      body: { content: { "application/json": { schema: GeoregisterRequest } }, required: true },
    },
    responses: {
      202: {
        content: { "application/json": { schema: JobAccepted } },
        description: "accepted; the new snapshot is announced by the job's `snapshot_available` event",
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 409, 413, 422, 501),
    },
  }),
  async (c) => {
    // The validator read the union's first passing form; the body is checked again by its own form
    // (a Sim3 that also says x-from_gps is refused rather than read as either). Hono keeps the raw body.
    const body = checkedBody(await c.req.json());
    const accepted = await submitGeoregister(c.env, c.var.tenantId, c.req.valid("param").rid, body);
    return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
  },
  // A refused body names the fields of the form it was meant as (a Sim3, or x-from_gps), not both.
  (result): undefined => {
    if (!result.success && result.target === "json") checkedBody((result as { data?: unknown }).data);
    validationHook(result);
    return undefined;
  },
);

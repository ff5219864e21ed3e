/**
 * @module `POST /v1/reconstructions:merge` (spec 4.9, capability `recon.merge`): 202 with a job of
 * one `merge` task; the checks are in services/merge.ts, the work in the runners' executor
 * (browser-runtime/runner/executors/merge.ts, stages/merge.ts).
 */
import { z } from "@hono/zod-openapi";
import { JobAccepted, MergeRequest } from "../../protocol";
import { problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { submitMerge } from "../services/merge";

export const mergeRoutes = newRouter();

mergeRoutes.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/reconstructions:merge",
    tags: ["reconstructions"],
    summary: "Merge source reconstructions into the target",
    description: [
      "Joins the latest sealed snapshot (its largest model) of each source into the target's and seals the result as the target's next snapshot (4.9 rule 3),",
      "announced by `snapshot_available`; a job with one `merge` task (an extension kind, 9.2; phase `hierarchical_merge`) under the target reconstruction.",
      "`sim3_aligners[i]` is `target_from_source` for `source_recon_ids[i]` (an identity leaves that model where it is); without aligners each is estimated",
      "(Umeyama's similarity in RANSAC, inliers within 2% of the target's spread) from the camera centres of the images the models share (the same photo bytes)",
      "and the 3D points both triangulated from one keypoint of a shared image. Joined: the target keeps its ids; a shared image keeps the target's pose and",
      "gains the source's observations; points seen at one keypoint of a shared image are fused (weighted mean position); the other images, cameras and points",
      "are added under new ids; then (our `x-bundle_adjust`, default true) a bundle adjustment refines every pose and point and each camera's focal length and",
      "distortion, as COLMAP's global bundle adjustment after its model merger (principal points held, Cauchy loss, gauge the first image's pose and the second's",
      "distance; a camera driven out of COLMAP's bounds is held and the adjustment repeated); track lengths and `mean_reproj_err` are computed again.",
      "When every snapshot merged has `x-point_descriptors.bin`, the merged snapshot has one too (a fused point's descriptor the mean of its parts', weighted by",
      "track length), so it can be localized as they could. Rigs and frames of the inputs are not carried over.",
      "The task's result: `{snapshot_seq, target_seq, sources: [{recon_id, seq, sim3, estimated, shared_images, shared_points, num_inliers, rmse}], fused_points, added_images,",
      "mean_reproj_err, bundle_adjusted, held_cameras}` (`held_cameras`: ids of cameras whose intrinsics the adjustment held).",
      "404 an unknown reconstruction (or another tenant's); 422 a malformed body (sim3_aligners not one per source, a Sim3 as georegister refuses it, the target",
      "among the sources), or a source in another project (`other_project`); 409 a reconstruction with no sealed snapshot. Nothing is created when refused.",
      "A source sharing no image with the target and given no aligner fails the task (ValidationError) and nothing is sealed.",
    ].join("\n"),
    request: { body: { content: { "application/json": { schema: MergeRequest } }, required: true } },
    responses: {
      202: {
        content: { "application/json": { schema: JobAccepted } },
        description: "accepted; the merged snapshot is announced by the job's `snapshot_available` event",
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 409, 413, 422, 501),
    },
  }),
  async (c) => {
    const accepted = await submitMerge(c.env, c.var.tenantId, c.req.valid("json"));
    return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
  },
);

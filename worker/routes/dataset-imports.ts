/**
 * @module Datasets made from an uploaded file (spec 4.2): `:import_kapture` (services/kapture-import.ts).
 */
import { z } from "@hono/zod-openapi";
import { Id, JobAccepted, KaptureImportRequest, KaptureImportResult } from "../../protocol";
import { problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { importKapture } from "../services/kapture-import";

export const datasetImports = newRouter();

datasetImports.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/projects/{pid}/datasets:import_kapture",
    tags: ["datasets"],
    summary: "A Kapture archive imported as a dataset",
    description: [
      "`archive_path` names an uploaded Kapture archive as `blob:<sha256>` (the blob_sha of a finalized upload; this service has no local files):",
      "an uncompressed tar or a zip holding a kapture 1.1 tree (sensors/sensors.txt, sensors/records_camera.txt, optionally sensors/trajectories.txt",
      "and sensors/rigs.txt, the images under sensors/records_data/) at its top or under one folder. Each camera record becomes an image of a new",
      "dataset of the project (named after that folder, or `kapture-<sha prefix>`); the cameras' COLMAP model sets the dataset's `camera_model`",
      "(one camera: `single_camera`; one per folder: `per_folder`; else `per_image`); each record with a pose in trajectories.txt (of its camera,",
      "or of a rig holding it) gets it as its pose prior (4.12, with the record's timestamp). Everything is checked first: a malformed archive or",
      "listing is a 422 naming each file and line, and nothing is imported. The job answered is born succeeded; its task's result is",
      "KaptureImportResult (`{sensors, records, image_root}` and `x-derived_dataset`). Capability `import.kapture`.",
    ].join("\n"),
    request: {
      params: z.object({ pid: Id }),
      body: { content: { "application/json": { schema: KaptureImportRequest } }, required: true },
    },
    responses: {
      202: {
        content: { "application/json": { schema: JobAccepted } },
        description: `accepted, done: the task's result is KaptureImportResult (${Object.keys(KaptureImportResult.shape).join(", ")})`,
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(400, 401, 404, 422, 501),
    },
  }),
  async (c) => {
    const accepted = await importKapture(c.env, c.var.tenantId, c.req.valid("param").pid, c.req.valid("json"));
    return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
  },
);

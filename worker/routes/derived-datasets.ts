/**
 * @module Derived datasets, our runner-protocol extension (reference-only, runners.md): a task
 * that turns its inputs into images (a projection, 4.14) registers them as a dataset through its
 * lease. The checks and the recording are in services/derived-datasets.ts.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { DerivedDatasetRegister, DerivedDatasetRegistered } from "../../protocol";
import { problemResponses } from "../openapi";
import { newRouter } from "../router";
import { registerDerivedDataset } from "../services/derived-datasets";
import { datasetResource } from "../services/resources";
import { scopeOf } from "../services/runners";
import { LeaseId } from "./runners";

export const derivedDatasets = newRouter();

derivedDatasets.openapi(
  createRoute({
    method: "post",
    path: "/v1/leases/{lease_id}/datasets",
    tags: ["runners"],
    summary: "Register the dataset a task derives (projections)",
    description: [
      "Creates the dataset the lease's task derives, with its images, atomically (4.14 rule 4). Reference-only runner-protocol extension.",
      "Upload every image first with `PUT /v1/leases/{lease_id}/blobs/{sha}` (an image media type, so its width and height are read); the dataset is named by the",
      "task's request (a name the project already has gets `-<task_id>` appended). A retry of the task gets the dataset it registered (200, `reused: true`).",
      "409 when the task registers no dataset; 422 when an image is not a blob of the job.",
    ].join("\n"),
    request: {
      params: z.object({ lease_id: LeaseId }),
      body: { content: { "application/json": { schema: DerivedDatasetRegister } }, required: true },
    },
    responses: {
      201: { content: { "application/json": { schema: DerivedDatasetRegistered } }, description: "registered" },
      200: { content: { "application/json": { schema: DerivedDatasetRegistered } }, description: "this task had registered it: reused" },
      ...problemResponses(401, 403, 404, 409, 413, 422),
    },
  }),
  async (c) => {
    const scope = await scopeOf(c.env, c.req.header("Authorization"), c.var.tenantId);
    const { tenant, dataset, reused } = await registerDerivedDataset(c.env, scope, c.req.valid("param").lease_id, c.req.valid("json"));
    return c.json({ dataset: datasetResource(dataset, tenant), reused }, reused ? 200 : 201);
  },
);

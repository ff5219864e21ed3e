/**
 * @module Datasets (spec 2.3, 2.4, 4.4). An `upload` source registers its entries as images
 * at creation; `local` and `s3` sources are validated and stored, but this edge deployment
 * cannot reach such bytes, so their images cannot be registered (422 on image creation).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { Dataset, DatasetCreate, DatasetPatch, Id, Page, PageQuery, UpdateMaskQuery } from "../../protocol";
import { notFound } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { newRouter } from "../router";
import { datasetResource } from "../services/resources";
import { tenantStore, unwrap } from "../services/stores";
import { applyUpdateMask } from "../services/update-mask";

export const datasets = newRouter();

const DatasetPage = Page(Dataset, "DatasetPage");
const ProjectParams = z.object({ pid: Id });
const DatasetParams = z.object({ pid: Id, did: Id });
const PATCHABLE = [
  "name",
  "camera_model",
  "intrinsics_mode",
  "is_spherical",
  "rig_config",
  "respect_exif_orientation",
  "active_maskset_id",
] as const;

/** The dataset when it belongs to the project in the path, else 404. */
async function datasetIn(env: Env, tenantId: string, pid: string, did: string) {
  const row = await tenantStore(env, tenantId).getDataset(did);
  if (!row || row.project_id !== pid) throw notFound("dataset");
  return row;
}

datasets.openapi(
  createRoute({
    method: "post",
    path: "/v1/projects/{pid}/datasets",
    tags: ["datasets"],
    request: { params: ProjectParams, ...jsonBody(DatasetCreate) },
    responses: { 201: json(Dataset, "created"), ...problemResponses(400, 401, 404, 413, 422) },
  }),
  async (c) => {
    const { pid } = c.req.valid("param");
    const row = unwrap(await tenantStore(c.env, c.var.tenantId).createDataset(pid, c.req.valid("json")));
    return c.json(datasetResource(row, c.var.tenantId), 201, { Location: `/v1/projects/${pid}/datasets/${row.dataset_id}` });
  },
);

datasets.openapi(
  createRoute({
    method: "get",
    path: "/v1/projects/{pid}/datasets",
    tags: ["datasets"],
    request: { params: ProjectParams, query: PageQuery },
    responses: { 200: json(DatasetPage, "the project's datasets"), ...problemResponses(401, 404, 422) },
  }),
  async (c) => {
    const page = unwrap(await tenantStore(c.env, c.var.tenantId).listDatasets(c.req.valid("param").pid, c.req.valid("query")));
    return c.json({ ...page, items: page.items.map((r) => datasetResource(r, c.var.tenantId)) }, 200);
  },
);

datasets.openapi(
  createRoute({
    method: "get",
    path: "/v1/projects/{pid}/datasets/{did}",
    tags: ["datasets"],
    request: { params: DatasetParams },
    responses: { 200: json(Dataset, "the dataset"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const { pid, did } = c.req.valid("param");
    return c.json(datasetResource(await datasetIn(c.env, c.var.tenantId, pid, did), c.var.tenantId), 200);
  },
);

datasets.openapi(
  createRoute({
    method: "patch",
    path: "/v1/projects/{pid}/datasets/{did}",
    tags: ["datasets"],
    request: { params: DatasetParams, query: UpdateMaskQuery, ...jsonBody(DatasetPatch) },
    responses: { 200: json(Dataset, "the updated dataset"), ...problemResponses(400, 401, 404, 413, 422) },
  }),
  async (c) => {
    const { pid, did } = c.req.valid("param");
    await datasetIn(c.env, c.var.tenantId, pid, did);
    const patch = applyUpdateMask(c.req.valid("json"), c.req.valid("query").update_mask, PATCHABLE);
    const row = await tenantStore(c.env, c.var.tenantId).patchDataset(did, patch);
    if (!row) throw notFound("dataset");
    return c.json(datasetResource(row, c.var.tenantId), 200);
  },
);

datasets.openapi(
  createRoute({
    method: "delete",
    path: "/v1/projects/{pid}/datasets/{did}",
    tags: ["datasets"],
    request: { params: DatasetParams },
    responses: { 204: { description: "deleted with its images" }, ...problemResponses(401, 404) },
  }),
  async (c) => {
    const { pid, did } = c.req.valid("param");
    await datasetIn(c.env, c.var.tenantId, pid, did);
    await tenantStore(c.env, c.var.tenantId).deleteDataset(did);
    return c.body(null, 204);
  },
);

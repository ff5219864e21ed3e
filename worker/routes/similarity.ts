/**
 * @module Similarity (spec 4.11): the k nearest images of one image, and `:build`. `dhash` runs
 * here (capability `similarity.dhash`); `vlad` is built by runners (capability `similarity.vlad`:
 * `:build` answers 202 with the job, a query before it 404). The capability a request names is
 * decided before anything else is read (1.1).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { Id, JobAccepted, SimilarityBuildQuery, SimilarityManifest, SimilarityNeighbors, SimilarityQuery } from "../../protocol";
import type { AppEnv } from "../context";
import { notFound } from "../errors";
import { json, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { requireCapability } from "../services/capabilities";
import {
  dhashNeighbors,
  ensureDhashIndex,
  findVladIndex,
  similarityManifest,
  submitVladBuild,
  vladIndexNotBuilt,
  vladNeighbors,
} from "../services/similarity";
import { tenantStore } from "../services/stores";

export const similarity = newRouter();

const DatasetParams = z.object({ did: Id });

async function datasetOr404(env: Env, tenantId: string, did: string) {
  const row = Id.safeParse(did).success ? await tenantStore(env, tenantId).getDataset(did) : null;
  if (!row) throw notFound("dataset");
  return row;
}

/**
 * 501 for the strategy's capability when it is off (an unknown strategy is left to validation:
 * 422); then a path naming no dataset of the tenant is 404 before the query is read (7: an
 * absent resource is 404 whatever else the request gets wrong).
 */
const gate = createMiddleware<AppEnv>(async (c, next) => {
  const strategy = c.req.query("strategy") ?? "dhash";
  if (strategy === "dhash" || strategy === "vlad") requireCapability(c.env, `similarity.${strategy}`);
  await datasetOr404(c.env, c.var.tenantId, c.req.param("did") ?? "");
  await next();
});

similarity.openapi(
  createRoute({
    method: "get",
    path: "/v1/datasets/{did}/similarity",
    tags: ["similarity"],
    summary: "The k nearest images of one image (4.11)",
    description:
      "dhash: 64-bit difference hashes, Hamming distance in [0, 64], ties in dataset order. The index of the dataset's current manifest is built on the first query when `:build` did not build it (4.11 rules 1, 4). " +
      "vlad: 4096-dimensional L2-normalised VLAD vectors (RootSIFT of the default extraction, 32-word codebook), distance max(0, 1 - cosine); 404 until `:build?strategy=vlad` built the index of the dataset's current manifest (rule 2). " +
      "With include_self the query image comes first at distance 0 and counts toward k. 404 for an image of another dataset; 422 when an image cannot be hashed here.",
    middleware: gate,
    request: { params: DatasetParams, query: SimilarityQuery },
    responses: { 200: json(SimilarityNeighbors, "the neighbours, ascending by distance"), ...problemResponses(401, 404, 422, 501) },
  }),
  async (c) => {
    const { did } = c.req.valid("param");
    const { image_id, k, include_self, strategy } = c.req.valid("query");
    const dataset = await datasetOr404(c.env, c.var.tenantId, did);
    const tenant = tenantStore(c.env, c.var.tenantId);
    const image = await tenant.getImage(image_id);
    if (!image || image.dataset_id !== did) throw notFound("image in this dataset");
    if (strategy === "vlad") {
      const found = await findVladIndex(c.env, c.var.tenantId, dataset, await tenant.allImages(did));
      if (!found) throw vladIndexNotBuilt(dataset);
      return c.json(vladNeighbors(found, image, k, include_self), 200);
    }
    const built = await ensureDhashIndex(c.env, c.var.tenantId, dataset, { force: false });
    return c.json(dhashNeighbors(built, image, k, include_self), 200);
  },
);

similarity.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/datasets/{did}/similarity:build",
    tags: ["similarity"],
    summary: "Builds the dataset's similarity index (4.11)",
    description:
      "dhash: synchronous, 200 with the manifest of the index for the dataset's current manifest (the existing one unless force=true). " +
      "vlad: 202 with a job of two tasks, the default SIFT extraction and a runner's `vlad` task (phase vlad_index) that computes every image's VLAD vector from those features; both are cache hits when the index of this manifest exists, unless force=true. " +
      "The index is a `features.global.v1` artifact owned by a job born succeeded; a pipeline with retrieval pairs reuses it. 422 for a dataset without images or with images that cannot be hashed here.",
    middleware: gate,
    request: { params: DatasetParams, query: SimilarityBuildQuery },
    responses: {
      200: json(SimilarityManifest, "dhash: the index's manifest"),
      202: {
        ...json(JobAccepted, "vlad: accepted; the job builds the index"),
        headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
      },
      ...problemResponses(401, 404, 422, 501),
    },
  }),
  async (c) => {
    const dataset = await datasetOr404(c.env, c.var.tenantId, c.req.valid("param").did);
    const { force, strategy } = c.req.valid("query");
    if (strategy === "vlad") {
      const accepted = await submitVladBuild(c.env, c.var.tenantId, dataset, { force });
      return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
    }
    const built = await ensureDhashIndex(c.env, c.var.tenantId, dataset, { force });
    return c.json(similarityManifest(dataset, built), 200);
  },
);

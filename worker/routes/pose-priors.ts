/**
 * @module Pose priors (spec 4.12, capability `pose_priors.read_write`): one PosePrior per image
 * (2.13), read, written and deleted one at a time or a dataset's at once (bulk writes of up to
 * 1000, all or nothing). An image without a prior reads as `null`. Priors go with their image.
 * `timestamp_ns` values keep every digit (protocol/int64-json.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { TypedResponse } from "hono";
import { HTTPException } from "hono/http-exception";
import { Id, PosePrior, PosePriorsBulk, PosePriorsMap, PosePriorsWritten } from "../../protocol";
import { PRIOR_INT64_KEYS, parseInt64Json, stringifyInt64Json } from "../../protocol/int64-json";
import type { AppEnv } from "../context";
import { json, jsonBody, problemResponses } from "../openapi";
import { newRouter } from "../router";
import { requireCapability } from "../services/capabilities";
import { tenantStore, unwrap } from "../services/stores";

export const posePriors = newRouter();

const CAPABILITY = "pose_priors.read_write";
const ImageParams = z.object({ image_id: Id });
const DatasetParams = z.object({ did: Id });

/**
 * Gates the routes on the capability (501 before anything is read), and parses a JSON body keeping
 * every digit of `timestamp_ns` (the validator then reads the parsed body from Hono's cache).
 */
const gate = createMiddleware<AppEnv>(async (c, next) => {
  requireCapability(c.env, CAPABILITY);
  if (/json/i.test(c.req.header("Content-Type") ?? "") && c.req.method !== "GET") {
    let parsed: unknown;
    try {
      parsed = parseInt64Json(await c.req.raw.clone().text(), PRIOR_INT64_KEYS);
    } catch {
      throw new HTTPException(400, { message: "Malformed JSON in request body" });
    }
    c.req.bodyCache.json = Promise.resolve(parsed);
  }
  await next();
});

/** A JSON answer whose `timestamp_ns` integers are written whole. */
const int64Json = <T>(body: T) =>
  new Response(stringifyInt64Json(body, PRIOR_INT64_KEYS), { status: 200, headers: { "Content-Type": "application/json" } }) as Response &
    TypedResponse<T, 200, "json">;

posePriors.openapi(
  createRoute({
    method: "get",
    path: "/v1/images/{image_id}/pose_prior",
    tags: ["pose priors"],
    middleware: gate,
    request: { params: ImageParams },
    responses: { 200: json(PosePrior.nullable(), "the image's prior, or null when it has none"), ...problemResponses(401, 404, 501) },
  }),
  async (c) => {
    const prior = unwrap(await tenantStore(c.env, c.var.tenantId).getPosePrior(c.req.valid("param").image_id));
    return int64Json(prior === null ? null : JSON.parse(prior));
  },
);

posePriors.openapi(
  createRoute({
    method: "put",
    path: "/v1/images/{image_id}/pose_prior",
    tags: ["pose priors"],
    middleware: gate,
    description:
      "Sets the image's prior. Checked: a unit quaternion (within 1e-3), finite numbers, a symmetric positive semi-definite covariance, the GpsCoord, timestamp and IMU shapes.",
    request: { params: ImageParams, ...jsonBody(PosePrior) },
    responses: { 200: json(PosePrior, "the prior as stored (echoed)"), ...problemResponses(400, 401, 404, 413, 422, 501) },
  }),
  async (c) => {
    const prior = c.req.valid("json");
    const text = JSON.stringify(prior);
    unwrap(await tenantStore(c.env, c.var.tenantId).putPosePrior(c.req.valid("param").image_id, text));
    return int64Json(prior);
  },
);

posePriors.openapi(
  createRoute({
    method: "delete",
    path: "/v1/images/{image_id}/pose_prior",
    tags: ["pose priors"],
    middleware: gate,
    request: { params: ImageParams },
    responses: { 204: { description: "the image has no prior now" }, ...problemResponses(401, 404, 501) },
  }),
  async (c) => {
    unwrap(await tenantStore(c.env, c.var.tenantId).deletePosePrior(c.req.valid("param").image_id));
    return c.body(null, 204);
  },
);

posePriors.openapi(
  createRoute({
    method: "get",
    path: "/v1/datasets/{did}/pose_priors",
    tags: ["pose priors"],
    middleware: gate,
    request: { params: DatasetParams },
    responses: { 200: json(PosePriorsMap, "every prior of the dataset's images, by image_id"), ...problemResponses(401, 404, 501) },
  }),
  async (c) => {
    const stored = unwrap(await tenantStore(c.env, c.var.tenantId).datasetPosePriors(c.req.valid("param").did));
    return int64Json({ pose_priors: Object.fromEntries(Object.entries(stored).map(([id, text]) => [id, JSON.parse(text)])) });
  },
);

posePriors.openapi(
  createRoute({
    method: "put",
    path: "/v1/datasets/{did}/pose_priors",
    tags: ["pose priors"],
    middleware: gate,
    description:
      "Writes up to 1000 priors at once, all or none: every key must be an image of this dataset (422 `unknown_image` otherwise). Images not named keep theirs.",
    request: { params: DatasetParams, ...jsonBody(PosePriorsBulk) },
    responses: { 200: json(PosePriorsWritten, "how many priors were written"), ...problemResponses(400, 401, 404, 413, 422, 501) },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const texts = Object.fromEntries(Object.entries(body).map(([id, prior]) => [id, JSON.stringify(prior)]));
    return c.json(unwrap(await tenantStore(c.env, c.var.tenantId).putPosePriors(c.req.valid("param").did, texts)), 200);
  },
);

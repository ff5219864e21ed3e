/**
 * @module The API application: cross-cutting middleware written once (request id, config,
 * CORS, auth, body limits, problem+json errors) and one router per spec section.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { except } from "hono/combine";
import { cors } from "hono/cors";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { readConfig } from "./config";
import type { AppEnv } from "./context";
import { ApiError, type ErrorSlug, problemResponse } from "./errors";
import { authModeHeader, operatorAuth, runnerAuth, tenantAuth } from "./middleware/auth";
import { jsonBodyLimit } from "./middleware/limits";
import { json, openApiDocument } from "./openapi";
import { guardedBucket } from "./services/bucket";
import { isSitePath, serveSiteAsset } from "./services/site";
import { admin } from "./routes/admin";
import { artifacts } from "./routes/artifacts";
import { backend } from "./routes/backend";
import { datasets } from "./routes/datasets";
import { datasetImports } from "./routes/dataset-imports";
import { derivedDatasets } from "./routes/derived-datasets";
import { errorPages } from "./routes/errors";
import { exportRoutes } from "./routes/exports";
import { georegisterRoutes } from "./routes/georegister";
import { mergeRoutes } from "./routes/merge";
import { images } from "./routes/images";
import { jobs } from "./routes/jobs";
import { localizeRoutes } from "./routes/localize";
import { meta } from "./routes/meta";
import { oneshot } from "./routes/oneshot";
import { posePriors } from "./routes/pose-priors";
import { projections } from "./routes/projections";
import { projects } from "./routes/projects";
import { reconstructions } from "./routes/reconstructions";
import { runners } from "./routes/runners";
import { similarity } from "./routes/similarity";
import { snapshotSeal } from "./routes/snapshot-seal";
import { unbuilt } from "./routes/unbuilt";
import { uploads } from "./routes/uploads";
import { newRouter } from "./router";
import { recordRequest } from "./services/metrics";

const STATUS_SLUG: Record<number, ErrorSlug> = {
  400: "bad_request",
  401: "auth",
  403: "tenant_violation",
  404: "not_found",
  405: "method_not_allowed",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  416: "range_not_satisfiable",
  422: "validation",
  501: "capability_unavailable",
  503: "unavailable",
};

function errorsBase(c: { var: AppEnv["Variables"]; req: { url: string } }) {
  return c.var.config?.errorsBase ?? `${new URL(c.req.url).origin}/errors`;
}

export function createApp() {
  const app = newRouter();

  app.use("*", requestId());
  app.use("*", async (c, next) => {
    const config = readConfig(c.env);
    c.set("config", config);
    // R2 as the handlers see it: bounded in time, its failures a 503 problem (services/bucket.ts).
    c.env = { ...c.env, BLOBS: guardedBucket(c.env.BLOBS, config.blobTimeoutMs) };
    await next();
  });
  const corsHeaders = cors({
    origin: "*",
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    allowHeaders: [
      "Authorization",
      "Content-Type",
      "Content-Range",
      "Range",
      "If-None-Match",
      "Idempotency-Key",
      "Last-Event-ID",
      "X-Content-SHA256",
    ],
    exposeHeaders: ["ETag", "Last-Modified", "Content-Range", "Location", "Link", "X-EdgeSfM-Auth", "X-Request-Id"],
    maxAge: 600,
  });
  app.use("*", async (c, next) => {
    const preflight = await corsHeaders(c, next);
    // Hono answers a preflight 204; browsers take any ok status, and some clients insist on 200 (4: CORS).
    return preflight ? new Response(null, { status: 200, headers: preflight.headers }) : undefined;
  });
  app.use("*", async (c, next) => {
    await next();
    recordRequest(c.req.method, c.res.status);
  });
  app.use("*", authModeHeader);
  app.use("/v1/admin/*", operatorAuth);
  app.use("/v1/runners/*", runnerAuth);
  app.use("/v1/leases/*", runnerAuth);
  // A keyless volunteer's token (POST /v1/runner-tokens) needs no credential: the operator's setting decides.
  app.use("/v1/*", except(["/v1/admin/*", "/v1/runners/*", "/v1/leases/*", "/v1/runner-tokens"], tenantAuth));
  app.use("/ws/*", tenantAuth);
  app.use("*", jsonBodyLimit);

  app.route("/", meta);
  app.route("/", errorPages);
  app.route("/", projects);
  app.route("/", uploads);
  app.route("/", datasets);
  app.route("/", datasetImports);
  app.route("/", images);
  app.route("/", posePriors);
  app.route("/", jobs);
  app.route("/", runners);
  app.route("/", snapshotSeal);
  app.route("/", reconstructions);
  app.route("/", artifacts);
  app.route("/", exportRoutes);
  app.route("/", backend);
  app.route("/", localizeRoutes);
  app.route("/", georegisterRoutes);
  app.route("/", oneshot);
  app.route("/", mergeRoutes);
  app.route("/", admin);
  app.route("/", projections);
  app.route("/", derivedDatasets);
  app.route("/", similarity);
  app.route("/", unbuilt);

  app.openapi(
    createRoute({
      method: "get",
      path: "/openapi.json",
      tags: ["meta"],
      responses: {
        200: json(
          z.record(z.string(), z.unknown()),
          "this document: every route with its request, response and error schemas (OpenAPI 3.1)",
        ),
      },
    }),
    (c) => c.json(openApiDocument(app, new URL(c.req.url).origin), 200),
  );

  app.notFound(async (c) => {
    if ((c.req.method === "GET" || c.req.method === "HEAD") && isSitePath(c.req.path)) {
      const asset = await serveSiteAsset(c.env, c.req.raw);
      if (asset) return asset;
    }
    const allowed = allowedMethods(app, c.req.path);
    if (allowed.length > 0) {
      return problemResponse(
        new ApiError(405, "method_not_allowed", `${c.req.method} is not allowed on ${c.req.path}`, {}, { Allow: allowed.join(", ") }),
        c.req.path,
        errorsBase(c),
      );
    }
    return problemResponse(new ApiError(404, "not_found", `no route for ${c.req.method} ${c.req.path}`), c.req.path, errorsBase(c));
  });

  app.onError((err, c) => {
    const problem = toApiError(err);
    if (problem.status >= 500 && problem.slug === "internal") console.error(`[${c.var.requestId}]`, err);
    else if (problem.status === 503) console.warn(`[${c.var.requestId}] ${problem.message}`);
    const res = problemResponse(problem, c.req.path, errorsBase(c));
    // Keep CORS and auth-mode headers on errors too.
    c.res.headers.forEach((v, k) => {
      if (k.startsWith("access-control-") || k === "x-edgesfm-auth" || k === "x-request-id") res.headers.set(k, v);
    });
    return res;
  });

  return app;
}

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof HTTPException) {
    const slug = STATUS_SLUG[err.status] ?? (err.status >= 500 ? "internal" : "bad_request");
    const detail = err.status === 400 && /JSON/i.test(err.message) ? "request body is not valid JSON" : err.message || slug;
    return new ApiError(err.status, slug, detail);
  }
  return new ApiError(500, "internal", "an unexpected error occurred; it has been logged");
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** Methods with a route at `path`, as Hono's own router matches them (middleware aside), for 405 + Allow. */
function allowedMethods(app: OpenAPIHono<AppEnv>, path: string): string[] {
  return METHODS.filter((m) => app.router.match(m, path)[0].some(([[, route]]) => route.method !== "ALL"));
}

/**
 * @module Health and meta (spec 4.1) and capabilities (1.2).
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  CAMERA_MODELS,
  CameraModel,
  Capabilities,
  Health,
  Page,
  PageQuery,
  RUNNER_PROTOCOL_VERSION,
  Readyz,
  Spec,
  Version,
} from "../../protocol";
import { newRouter } from "../router";
import { SERVICE_VERSION, SPEC_VERSION } from "../context";
import { json, problemResponses } from "../openapi";
import { BACKEND, flags } from "../services/capabilities";
import { keyRegistry, tenantStore } from "../services/stores";
import { paginateArray } from "../services/pages";
import { metricsText } from "../services/metrics";
import { runtimeVersions } from "../services/runtime";

export const meta = newRouter();

meta.openapi(
  createRoute({ method: "get", path: "/healthz", tags: ["meta"], responses: { 200: json(Health, "the process responds") } }),
  (c) => c.json({ status: "ok" as const }, 200),
);

meta.openapi(
  createRoute({
    method: "get",
    path: "/readyz",
    tags: ["meta"],
    responses: { 200: json(Readyz, "every dependency answers"), 503: json(Readyz, "a dependency does not answer") },
  }),
  async (c) => {
    const probe = async (fn: () => Promise<unknown>) => {
      try {
        await fn();
        return { status: "ok" as const };
      } catch (e) {
        return { status: "fail" as const, detail: e instanceof Error ? e.message : String(e) };
      }
    };
    const checks = {
      tenant_store: await probe(() => tenantStore(c.env, "_readyz").ping()),
      key_registry: await probe(() => keyRegistry(c.env).ping()),
      blob_store: await probe(() => c.env.BLOBS.head("_readyz")),
    };
    const up = Object.values(checks).every((v) => v.status === "ok");
    return c.json({ status: up ? ("ok" as const) : ("unavailable" as const), checks }, up ? 200 : 503);
  },
);

meta.openapi(
  createRoute({ method: "get", path: "/version", tags: ["meta"], responses: { 200: json(Version, "service and backend versions") } }),
  (c) =>
    c.json(
      {
        service: SERVICE_VERSION,
        backend: { ...BACKEND, runtime_versions: runtimeVersions(c.env) },
        "x-runner_protocol": RUNNER_PROTOCOL_VERSION,
      },
      200,
    ),
);

meta.openapi(
  createRoute({ method: "get", path: "/spec", tags: ["meta"], responses: { 200: json(Spec, "implemented spec version") } }),
  (c) => c.json({ spec_version: SPEC_VERSION, spec_url: c.var.config.specUrl }, 200),
);

meta.openapi(
  createRoute({
    method: "get",
    path: "/metrics",
    tags: ["meta"],
    responses: { 200: { content: { "text/plain": { schema: z.string() } }, description: "Prometheus text exposition" } },
  }),
  (c) => c.text(metricsText(), 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" }),
);

meta.openapi(
  createRoute({
    method: "get",
    path: "/v1/capabilities",
    tags: ["meta"],
    responses: { 200: json(Capabilities, "backend identity and capability flags"), ...problemResponses(401) },
  }),
  (c) => c.json({ backend: BACKEND, features: flags(c.env) }, 200),
);

const CameraModelPage = Page(CameraModel, "CameraModelPage");

meta.openapi(
  createRoute({
    method: "get",
    path: "/v1/camera-models",
    tags: ["meta"],
    request: { query: PageQuery },
    responses: { 200: json(CameraModelPage, "camera models and their parameter layouts"), ...problemResponses(401, 422) },
  }),
  (c) => {
    const all = CAMERA_MODELS.map((m) => ({
      ...m,
      params: [...m.params],
      num_params: m.params.length,
      focal_length_idxs: [...m.focal_length_idxs],
      principal_point_idxs: [...m.principal_point_idxs],
      extra_params_idxs: [...m.extra_params_idxs],
    }));
    return c.json(
      paginateArray(all, (m) => String(m.model_id).padStart(6, "0"), c.req.valid("query")),
      200,
    );
  },
);

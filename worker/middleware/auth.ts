/**
 * @module Authentication (spec 5): resolves the caller's tenant once per request.
 * `none`: every request is the default tenant and responses say `X-EdgeSfM-Auth: none`.
 * `api_key`: `Authorization: Bearer sfm_<ULID>_<random>`, looked up by digest in the KeyRegistry.
 */
import { createMiddleware } from "hono/factory";
import { DEFAULT_TENANT, type AppEnv } from "../context";
import { ApiError, unauthorized } from "../errors";
import { digestKey } from "../storage/key-registry";
import { keyRegistry } from "../services/stores";

/** Routes that need no key in `api_key` mode (5.2), plus CORS preflight and the demo's static files. */
const PUBLIC = new Set(["/healthz", "/readyz", "/version", "/spec", "/metrics", "/openapi.json"]);
const isPublic = (path: string) => PUBLIC.has(path) || path.startsWith("/errors/") || !(path.startsWith("/v1/") || path.startsWith("/ws/"));

/** The runner protocol's routes, where a runner token may stand in for an API key. */
const isRunnerPath = (path: string) => path.startsWith("/v1/runners") || path.startsWith("/v1/leases/");

export const bearer = (header: string | undefined) => /^Bearer\s+(\S+)$/i.exec(header ?? "")?.[1] ?? null;

export const auth = createMiddleware<AppEnv>(async (c, next) => {
  const config = c.var.config;
  const path = c.req.path;
  if (path.startsWith("/v1/admin/")) {
    // Operator routes sit outside the tenant check (4.17); an optional token guards them.
    if (config.adminToken && bearer(c.req.header("Authorization")) !== config.adminToken) {
      throw unauthorized("admin routes need the operator token");
    }
  } else if (config.authMode === "none") {
    c.set("tenantId", DEFAULT_TENANT);
  } else if (isRunnerPath(path) && bearer(c.req.header("Authorization"))?.startsWith("sfr_")) {
    // A pool runner presents a runner token, not an API key; services/runners.ts resolves it.
  } else if (!isPublic(path) && c.req.method !== "OPTIONS") {
    const raw = bearer(c.req.header("Authorization"));
    if (!raw) throw unauthorized("this deployment requires 'Authorization: Bearer <API key>'");
    if (!/^sfm_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]+$/.test(raw)) throw new ApiError(401, "auth", "malformed API key");
    const tenant = await keyRegistry(c.env).resolve(digestKey(raw));
    if (!tenant) throw new ApiError(401, "auth", "unknown or revoked API key", {}, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
    c.set("tenantId", tenant);
  }
  await next();
  if (config.authMode === "none") c.header("X-EdgeSfM-Auth", "none");
});

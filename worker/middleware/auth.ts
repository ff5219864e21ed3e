/**
 * @module Authentication (spec 5): who may call which group of routes, each group a Hono path
 * pattern (`app.ts` mounts them). Public routes (5.2: health, version, spec, metrics, the OpenAPI
 * document, error pages, the demo) belong to no group and need no key.
 * - Tenant routes (`/v1/*`, `/ws/*`): `none` mode makes every request the default tenant; `api_key`
 *   mode resolves `Authorization: Bearer sfm_<ULID>_<random>` by digest in the KeyRegistry, or a
 *   signed link to a sealed snapshot file (services/signed-urls.ts) for that one GET.
 * - Runner protocol routes (`/v1/runners*`, `/v1/leases/*`): a pool runner's `sfr_` token may stand
 *   in for an API key (services/runners.ts resolves it).
 * - Operator routes (`/v1/admin/*`, 4.17): outside the tenant check; `SVC_ADMIN_TOKEN` guards them when set.
 */
import type { Context } from "hono";
import { some } from "hono/combine";
import { createMiddleware } from "hono/factory";
import { DEFAULT_TENANT, type AppEnv } from "../context";
import { ApiError, unauthorized } from "../errors";
import { digestKey } from "../storage/key-registry";
import { SIGNATURE, signedTenant } from "../services/signed-urls";
import { keyRegistry } from "../services/stores";

export const bearer = (header: string | undefined) => /^Bearer\s+(\S+)$/i.exec(header ?? "")?.[1] ?? null;

/** Resolves the caller's tenant (never from the caller: 5.3). */
export const tenantAuth = createMiddleware<AppEnv>(async (c, next) => {
  if (c.var.config.authMode === "none") {
    c.set("tenantId", DEFAULT_TENANT);
    return next();
  }
  const raw = bearer(c.req.header("Authorization"));
  // A signed link to a sealed snapshot file speaks for its tenant, for that GET only (services/signed-urls.ts).
  if (c.req.query(SIGNATURE.signature) !== undefined) {
    const signed = await signedTenant(c.env, c.req.method, new URL(c.req.url), Date.now());
    if (signed) {
      c.set("tenantId", signed);
      c.set("signedLink", true);
      return next();
    }
    if (!raw) throw new ApiError(401, "auth", "the signed link is invalid or has expired: ask for the file again with an API key");
  }
  if (!raw) throw unauthorized("this deployment requires 'Authorization: Bearer <API key>'");
  if (!/^sfm_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]+$/.test(raw)) throw new ApiError(401, "auth", "malformed API key");
  const tenant = await keyRegistry(c.env).resolve(digestKey(raw));
  if (!tenant) throw new ApiError(401, "auth", "unknown or revoked API key", {}, { "WWW-Authenticate": 'Bearer error="invalid_token"' });
  c.set("tenantId", tenant);
  return next();
});

/** A pool or operator runner's token in `api_key` mode (the route resolves it), else a tenant's key as anywhere. */
export const runnerAuth = some(
  (c: Context<AppEnv>) => c.var.config.authMode === "api_key" && /^sf[ro]_/.test(bearer(c.req.header("Authorization")) ?? ""),
  tenantAuth,
);

export const operatorAuth = createMiddleware<AppEnv>(async (c, next) => {
  const token = c.var.config.adminToken;
  if (token && bearer(c.req.header("Authorization")) !== token) throw unauthorized("admin routes need the operator token");
  return next();
});

/** `none` mode says so on every response (5), errors included. */
export const authModeHeader = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  if (c.var.config.authMode === "none") c.header("X-EdgeSfM-Auth", "none");
});

/**
 * @module Operator routes for API keys (spec 4.17, reference-only): issue, list, revoke.
 * Outside the tenant key check; guarded by SVC_ADMIN_TOKEN when it is set.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ApiKey, ApiKeyIssue, Id } from "../../protocol";
import { notFound } from "../errors";
import { json, problemResponses } from "../openapi";
import { newRouter } from "../router";
import { keyRegistry } from "../services/stores";

export const admin = newRouter();

admin.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/api-keys",
    tags: ["admin"],
    request: { body: { content: { "application/json": { schema: ApiKeyIssue } }, required: true } },
    responses: { 201: json(ApiKey, "issued; raw_key appears only here"), ...problemResponses(400, 401, 422) },
  }),
  async (c) => {
    const body = c.req.valid("json");
    return c.json(await keyRegistry(c.env).issue(body.tenant_id, body.name ?? null), 201);
  },
);

admin.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/api-keys",
    tags: ["admin"],
    responses: { 200: json(z.array(ApiKey), "every key, raw_key null"), ...problemResponses(401) },
  }),
  async (c) =>
    c.json(
      (await keyRegistry(c.env).list()).map((k) => ({ ...k, raw_key: null })),
      200,
    ),
);

admin.openapi(
  createRoute({
    method: "delete",
    path: "/v1/admin/api-keys/{kid}",
    tags: ["admin"],
    request: { params: z.object({ kid: Id }) },
    responses: { 200: json(ApiKey, "revoked; the key stops working"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const row = await keyRegistry(c.env).revoke(c.req.valid("param").kid);
    if (!row) throw notFound("API key");
    return c.json({ ...row, raw_key: null }, 200);
  },
);

/**
 * @module Operator routes (spec 4.17, reference-only): API keys (issue, list, revoke), the plugin
 * registry of compute providers (enable, disable, doctor, install plans) and routing profiles
 * with their default, workspace and project rules. Outside the tenant key check; guarded by
 * SVC_ADMIN_TOKEN when it is set.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  ApiKey,
  ApiKeyIssue,
  Id,
  Page,
  PageQuery,
  PluginDoctor,
  PluginInstallPlan,
  PluginInstallRequest,
  PluginItem,
  RoutingAssign,
  RoutingOut,
  RoutingProfile,
} from "../../protocol";
import { ApiError, notFound } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import {
  assignProfile,
  detectTools,
  doctor,
  entryPoints,
  installPlan,
  plugin,
  plugins,
  putProfile,
  setPluginEnabled,
} from "../services/backend";
import { paginateArray } from "../services/pages";
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

// ---- plugins (the compute providers) ----

const PluginParams = z.object({ plugin_id: z.string().min(1).max(128) });

admin.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/plugins",
    tags: ["admin"],
    request: { query: PageQuery.extend({ query: z.string().max(256).optional().describe("matches id, name or description") }) },
    responses: { 200: json(Page(PluginItem, "PluginRegistryItemPage"), "the plugin registry"), ...problemResponses(401, 422) },
  }),
  async (c) => {
    const q = c.req.valid("query");
    const needle = q.query?.toLowerCase();
    const all = (await plugins(c.env)).filter(
      (p) => !needle || [p.plugin_id, p.display_name, p.description].some((t) => t.toLowerCase().includes(needle)),
    );
    return c.json(
      paginateArray(all, (p) => p.plugin_id, q),
      200,
    );
  },
);

admin.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/plugins/detect-tools",
    tags: ["admin"],
    responses: {
      200: json(
        z.object({
          runners: z.number().int(),
          tools: z.array(z.object({ name: z.string(), detected: z.boolean(), runners: z.number().int(), detail: z.string() })),
        }),
        "what the connected runners report",
      ),
      ...problemResponses(401),
    },
  }),
  async (c) => c.json(await detectTools(c.env), 200),
);

admin.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/plugins/entry-points",
    tags: ["admin"],
    request: {
      query: z.object({
        load: z
          .enum(["true", "false"])
          .default("false")
          .transform((v) => v === "true")
          .describe("ask whether a connected runner loaded each"),
      }),
    },
    responses: {
      200: json(
        z.array(z.object({ plugin_id: z.string(), group: z.string(), entry_point: z.string(), loaded: z.boolean().nullable() })),
        "the providers' entry points in the runner bundle",
      ),
      ...problemResponses(401, 422),
    },
  }),
  async (c) => c.json(await entryPoints(c.env, c.req.valid("query").load), 200),
);

admin.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/plugins/{plugin_id}",
    tags: ["admin"],
    request: { params: PluginParams },
    responses: { 200: json(PluginItem, "manifest and local state"), ...problemResponses(401, 404) },
  }),
  async (c) => c.json(await plugin(c.env, c.req.valid("param").plugin_id), 200),
);

admin.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/admin/plugins/{plugin_id}:install",
    tags: ["admin"],
    description:
      "A plan, never an execution (4.17 rule 2): the Worker runs no processes, and the providers ship inside the runner bundle. `allow_unsafe_execution: true` with `dry_run: false` is refused (403).",
    request: { params: PluginParams, ...jsonBody(PluginInstallRequest) },
    responses: { 200: json(PluginInstallPlan, "the install plan"), ...problemResponses(401, 403, 404, 422) },
  }),
  (c) => {
    const { plugin_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const plan = installPlan(plugin_id, body);
    if (!body.dry_run) {
      throw new ApiError(
        403,
        "tenant_violation",
        body.allow_unsafe_execution
          ? "this service never executes install commands, even with allow_unsafe_execution: it runs on Cloudflare Workers, which have no processes or file system to install into, and its providers ship inside the runner bundle; run the plan's command on a runner host yourself"
          : "a real install needs allow_unsafe_execution: true (4.17 rule 2), and this service refuses it anyway: it never executes install commands",
        { plan },
      );
    }
    return c.json(plan, 200);
  },
);

for (const verb of ["enable", "disable"] as const) {
  admin.openapi(
    createActionRoute({
      method: "post",
      path: `/v1/admin/plugins/{plugin_id}:${verb}`,
      tags: ["admin"],
      request: { params: PluginParams },
      responses: { 200: json(PluginItem, "the plugin's state"), ...problemResponses(401, 404, 409) },
    }),
    async (c) => c.json(await setPluginEnabled(c.env, c.req.valid("param").plugin_id, verb === "enable"), 200),
  );
}

admin.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/admin/plugins/{plugin_id}:doctor",
    tags: ["admin"],
    request: { params: PluginParams },
    responses: { 200: json(PluginDoctor, "diagnostics: connected runners, adapters, builds"), ...problemResponses(401, 404) },
  }),
  async (c) => c.json(await doctor(c.env, c.req.valid("param").plugin_id), 200),
);

// ---- routing ----

const routingState = { 200: json(RoutingOut, "routing state"), ...problemResponses(401, 404, 422) };

admin.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/routing/profiles",
    tags: ["admin"],
    request: jsonBody(RoutingProfile),
    responses: routingState,
  }),
  async (c) => {
    const body = c.req.valid("json");
    return c.json(await putProfile(c.env, body.name, body.routes as Record<string, string>), 200);
  },
);

admin.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/routing/default",
    tags: ["admin"],
    request: jsonBody(RoutingAssign),
    responses: routingState,
  }),
  async (c) => c.json(await assignProfile(c.env, "default", c.req.valid("json").profile), 200),
);

admin.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/routing/workspaces",
    tags: ["admin"],
    request: jsonBody(RoutingAssign),
    responses: routingState,
  }),
  async (c) => c.json(await assignProfile(c.env, "workspace", c.req.valid("json").profile), 200),
);

admin.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/routing/projects/{project_id}",
    tags: ["admin"],
    request: { params: z.object({ project_id: Id }), ...jsonBody(RoutingAssign) },
    responses: routingState,
  }),
  async (c) => c.json(await assignProfile(c.env, `project:${c.req.valid("param").project_id}`, c.req.valid("json").profile), 200),
);

/**
 * @module Backend extensions (spec 4.16, reference-only): the backend's identity and runtime
 * versions, its actions (the stages and pipelines it runs, validated and run as ordinary jobs),
 * the config schemas of `backend_options`, artifact contracts, providers and routing. Every
 * descriptor is generated from protocol/ and the services (services/backend.ts), never written twice.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  BackendAction,
  BackendArtifactContract,
  BackendConfigSchema,
  BackendOut,
  Id,
  JobAccepted,
  Page,
  PageQuery,
  ProviderOut,
  RoutingOut,
} from "../../protocol";
import { notFound } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { artifactContracts, backendOut, configSchemas, operatorRouting, providerList, routingOut } from "../services/backend";
import { actionOf, actions, runAction, validateAction } from "../services/backend-actions";
import { BACKEND } from "../services/capabilities";
import { paginateArray } from "../services/pages";
import { tenantStore } from "../services/stores";

export const backend = newRouter();

const Flag = (fallback: "true" | "false") =>
  z
    .enum(["true", "false"])
    .default(fallback)
    .transform((v) => v === "true");
const ActionParams = z.object({ action_id: z.string().min(1).max(128) });
const FieldErrors = z.array(z.object({ path: z.string(), message: z.string(), code: z.string() }));

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend",
    tags: ["backend"],
    responses: { 200: json(BackendOut, "the backend"), ...problemResponses(401) },
  }),
  (c) => c.json(backendOut(c.env), 200),
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/actions",
    tags: ["backend"],
    request: { query: PageQuery.extend({ include_schemas: Flag("false") }) },
    responses: { 200: json(Page(BackendAction, "BackendActionPage"), "the actions"), ...problemResponses(401, 422) },
  }),
  (c) => {
    const q = c.req.valid("query");
    return c.json(
      paginateArray(actions(c.env, q.include_schemas), (a) => a.action_id, q),
      200,
    );
  },
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/actions/{action_id}",
    tags: ["backend"],
    request: { params: ActionParams },
    responses: { 200: json(BackendAction, "the action with its schemas"), ...problemResponses(401, 404) },
  }),
  (c) => c.json(actionOf(c.env, c.req.valid("param").action_id), 200),
);

backend.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/backend/actions/{action_id}:validate",
    tags: ["backend"],
    request: { params: ActionParams, ...jsonBody(z.object({ inputs: z.unknown() })) },
    responses: {
      200: json(
        z.object({ action_id: z.string(), valid: z.boolean(), errors: FieldErrors, normalized_inputs: z.unknown() }),
        "the validation; runs no job",
      ),
      ...problemResponses(401, 404, 422),
    },
  }),
  async (c) => c.json(await validateAction(c.env, c.var.tenantId, c.req.valid("param").action_id, c.req.valid("json").inputs), 200),
);

backend.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/backend/actions/{action_id}:run",
    tags: ["backend"],
    description:
      "Submits the job the action's route would (same validation, tasks and cache keys) on a dataset of `project_id`. Its tasks are reported " +
      "with kind `backend_action`, each naming the stage it runs as `x-stage_kind`; runners lease them as that stage.",
    request: { params: ActionParams, ...jsonBody(z.object({ project_id: Id, inputs: z.unknown() })) },
    responses: {
      202: {
        ...json(
          JobAccepted.extend({ action_id: z.string(), backend: z.string() }),
          "an ordinary job whose tasks are of kind backend_action",
        ),
        headers: z.object({ Location: z.string() }),
      },
      ...problemResponses(401, 404, 422, 501),
    },
  }),
  async (c) => {
    const { action_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const accepted = await runAction(c.env, c.var.tenantId, action_id, body.project_id, body.inputs);
    return c.json({ ...accepted, action_id, backend: BACKEND.name }, 202, { Location: `/v1/jobs/${accepted.job_id}` });
  },
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/config-schemas",
    tags: ["backend"],
    request: { query: PageQuery.extend({ include_schemas: Flag("true") }) },
    responses: { 200: json(Page(BackendConfigSchema, "BackendConfigSchemaPage"), "the config schemas"), ...problemResponses(401, 422) },
  }),
  (c) => {
    const q = c.req.valid("query");
    return c.json(
      paginateArray(configSchemas(q.include_schemas), (s) => s.config_id, q),
      200,
    );
  },
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/config-schemas/{config_id}",
    tags: ["backend"],
    request: { params: z.object({ config_id: z.string().min(1).max(128) }) },
    responses: { 200: json(BackendConfigSchema, "the config schema"), ...problemResponses(401, 404) },
  }),
  (c) => {
    const s = configSchemas(true).find((x) => x.config_id === c.req.valid("param").config_id);
    if (!s) throw notFound("config schema");
    return c.json(s, 200);
  },
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/artifact-contracts",
    tags: ["backend"],
    request: { query: PageQuery },
    responses: { 200: json(Page(BackendArtifactContract, "BackendArtifactContractPage"), "the contracts"), ...problemResponses(401, 422) },
  }),
  (c) =>
    c.json(
      paginateArray(artifactContracts(c.env), (x) => x.contract_id, c.req.valid("query")),
      200,
    ),
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/artifact-contracts/{contract_id}",
    tags: ["backend"],
    request: { params: z.object({ contract_id: z.string().min(1).max(128) }) },
    responses: { 200: json(BackendArtifactContract, "the contract"), ...problemResponses(401, 404) },
  }),
  (c) => {
    const x = artifactContracts(c.env).find((k) => k.contract_id === c.req.valid("param").contract_id);
    if (!x) throw notFound("artifact contract");
    return c.json(x, 200);
  },
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/providers",
    tags: ["backend"],
    request: { query: PageQuery },
    responses: { 200: json(Page(ProviderOut, "ProviderPage"), "the compute providers"), ...problemResponses(401, 422) },
  }),
  async (c) =>
    c.json(
      paginateArray(await providerList(c.env), (p) => p.provider_id, c.req.valid("query")),
      200,
    ),
);

backend.openapi(
  createRoute({
    method: "get",
    path: "/v1/backend/routing",
    tags: ["backend"],
    responses: { 200: json(RoutingOut, "provider priority and routing profiles"), ...problemResponses(401) },
  }),
  async (c) => {
    const out = routingOut(await operatorRouting(c.env));
    // Project rules are the operator's across tenants: a tenant sees those of its own projects only (5.3).
    const tenant = tenantStore(c.env, c.var.tenantId);
    const own = await Promise.all(Object.keys(out.project_profiles).map(async (pid) => ((await tenant.getProject(pid)) ? pid : null)));
    out.project_profiles = Object.fromEntries(Object.entries(out.project_profiles).filter(([pid]) => own.includes(pid)));
    return c.json(out, 200);
  },
);

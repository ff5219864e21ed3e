/**
 * @module A router with the project's validation hook: a path that does not parse names no
 * resource (404, as 7 says of absent ones: clients probe with placeholder ids); every other schema
 * failure is a 422 problem.
 */
import { OpenAPIHono, type RouteConfig, createRoute, z } from "@hono/zod-openapi";
import type { ZodError, ZodObject, ZodType } from "zod";
import type { AppEnv } from "./context";
import { ApiError, type FieldError, validation } from "./errors";

/** Zod issues as the 422 `errors[]` items: field path, message, code (7). */
export function fieldErrors(error: ZodError, prefix = ""): FieldError[] {
  return error.issues.map((i) => ({
    path: [prefix, ...i.path.map(String)].filter(Boolean).join("."),
    message: i.message,
    code: i.code,
  }));
}

/** The OpenAPI entries of custom-method routes, registered under their spec path (see `createActionRoute`). */
const actionDocs = new WeakMap<object, RouteConfig>();

/** The validation hook of every route: a path that does not parse is 404, anything else 422. */
export function validationHook(result: { success: boolean; error?: ZodError; target: string }): void {
  if (result.success || !result.error) return;
  if (result.target === "param") {
    const what = fieldErrors(result.error).map((e) => `${e.path}: ${e.message}`);
    throw new ApiError(404, "not_found", `no resource at this path (${what.join("; ")})`);
  }
  const where = result.target === "json" ? "body" : result.target;
  throw validation(`invalid request ${where}`, fieldErrors(result.error, where === "body" ? "" : where));
}

export function newRouter() {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  const openapi = router.openapi;
  router.openapi = ((route, handler, hook) => {
    const doc = actionDocs.get(route);
    if (doc) router.openAPIRegistry.registerPath(doc);
    return openapi(route, handler, hook);
  }) as typeof openapi;
  return router;
}

/**
 * A route for a custom method, `.../{id}:verb` or `.../collection:verb` (spec 4 notation: colon
 * suffixes are literal parts of the last segment). Hono reads a colon as the start of a path
 * parameter, so the last segment is matched whole (see `suffixedRoute`).
 */
export function createActionRoute<R extends RouteConfig>(config: R): R {
  const m = /^(.*)\/(\{\w+\}|[\w-]+)(:[\w-]+)$/.exec(config.path);
  if (!m) throw new Error(`not a custom-method path: ${config.path}`);
  return suffixedRoute(config, m[1]!, m[2]!, m[3]!);
}

/**
 * A route to a file named by a parameter, `.../{z}.bin` (4.9 tiles). Hono takes a parameter to be
 * the whole segment, so the segment is matched whole (see `suffixedRoute`).
 */
export function createFileRoute<R extends RouteConfig>(config: R): R {
  const m = /^(.*)\/(\{\w+\})(\.\w+)$/.exec(config.path);
  if (!m) throw new Error(`not a {param}.ext path: ${config.path}`);
  return suffixedRoute(config, m[1]!, m[2]!, m[3]!);
}

/**
 * The last segment, `segment` + a literal `suffix`, matched whole by a regex parameter; for a
 * `{param}` segment the parameter's schema strips the suffix before validating the value.
 * `openapi()` routes by the config's `path`, so the returned config carries the Hono path, hidden
 * from the document, and `newRouter` documents the spec path instead.
 */
function suffixedRoute<R extends RouteConfig>(config: R, base: string, segment: string, suffix: string): R {
  const honoBase = base.replace(/\/\{(\w+)\}/g, "/:$1");
  const literal = suffix.replace(/[.]/g, "\\.");
  const param = /^\{(\w+)\}$/.exec(segment)?.[1];
  const doc = createRoute(config);
  if (!param) return routedAt(doc, `${honoBase}/:_action{${segment}${literal}}`);
  const params = config.request?.params as ZodObject | undefined;
  // Path parameters are strings, whatever their schema makes of them.
  const inner = params?.shape[param] as ZodType<unknown, string> | undefined;
  if (!params || !inner) throw new Error(`${config.path}: request.params must define '${param}'`);
  const stripped = params.extend({
    [param]: z
      .string()
      .refine((s) => s.endsWith(suffix))
      .transform((s) => s.slice(0, -suffix.length))
      .pipe(inner),
  });
  return routedAt({ ...doc, request: { ...config.request, params: stripped } }, `${honoBase}/:${param}{[^/]+${literal}}`, doc);
}

function routedAt<R extends RouteConfig>(route: R, honoPath: string, doc: RouteConfig = route): R {
  const routed = { ...route, path: honoPath, hide: true };
  // The document describes the route, not the middleware that serves it.
  const { middleware: _serving, ...documented } = doc;
  actionDocs.set(routed, documented);
  return routed;
}

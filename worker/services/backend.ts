/**
 * @module The backend's descriptors (spec 2.15, 4.16) and the operator's plugin registry and
 * routing (4.17), generated from protocol/ (providers, config schemas, the artifact vocabulary)
 * and the operator state in the KeyRegistry. Also the two rules every stage submission obeys:
 * `backend_options` checked against a published config schema, and each routed stage given a
 * provider by the request, the project's, workspace's or default profile (4.16 rule 4).
 */
import { z } from "zod";
import {
  CONFIG_SCHEMAS,
  CONVERSIONS,
  CORE_ARTIFACT_FORMATS,
  CORE_ROLES,
  MEASURED,
  PROVIDERS,
  PROVIDER_IDS,
  type BackendStage,
  type PluginDoctor,
  type PluginItem,
  type ProviderId,
  type ProviderOut,
  type RoutingOut,
  BUILTIN_PROFILE,
  configSchemaFor,
  routedStages,
} from "../../protocol";
import { DEFAULT_TENANT } from "../context";
import { type FieldError, conflict, notFound, validation } from "../errors";
import type { OperatorRouting, RoutingScope } from "../storage/key-registry";
import { BACKEND, implemented } from "./capabilities";
import { readConfig } from "../config";
import { type DispatchScope, dispatchers, keyRegistry, tenantStore } from "./stores";
import { runtimeVersions } from "./runtime";

const isProvider = (p: string): p is ProviderId => (PROVIDER_IDS as readonly string[]).includes(p);

export const jsonSchemaOf = (schema: z.ZodType, io: "input" | "output" = "input") => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
};

// ---- operator state ----

export const operatorRouting = (env: Env): Promise<OperatorRouting> => keyRegistry(env).routing();

const enabled = (state: OperatorRouting, p: ProviderId) => state.plugins[p]?.enabled ?? true;

/** Every profile: the built-in one and the operator's (an operator profile of the same name replaces it). */
function profiles(state: OperatorRouting) {
  const own = new Map(state.profiles.map((p) => [p.name, p.routes]));
  const all: { name: string; routes: Record<string, string>; builtin: boolean }[] = [
    { name: BUILTIN_PROFILE.name, routes: { ...BUILTIN_PROFILE.routes }, builtin: true },
  ];
  for (const [name, routes] of own) {
    if (name === BUILTIN_PROFILE.name) all[0] = { name, routes, builtin: false };
    else all.push({ name, routes, builtin: false });
  }
  return all;
}

/** The default rule: the built-in profile until the operator sets another or removes it (a row with null). */
const defaultProfile = (state: OperatorRouting) => ("default" in state.rules ? state.rules.default! : BUILTIN_PROFILE.name);

export function routingOut(state: OperatorRouting): RoutingOut {
  return {
    profiles: profiles(state),
    default_profile: defaultProfile(state),
    workspace_profile: state.rules.workspace ?? null,
    project_profiles: Object.fromEntries(
      Object.entries(state.rules)
        .filter(([scope, p]) => scope.startsWith("project:") && p !== null)
        .map(([scope, p]) => [scope.slice("project:".length), p!]),
    ),
    priority: [],
    routed_stages: routedStages(),
    providers: Object.fromEntries(PROVIDER_IDS.map((p) => [p, { enabled: enabled(state, p), stages: [...PROVIDERS[p].stages] }])),
  };
}

/** `POST /v1/admin/routing/profiles`: every route names a provider that computes its stage, or `measured` where several do. */
export async function putProfile(env: Env, name: string, routes: Record<string, string>): Promise<RoutingOut> {
  const errors: FieldError[] = [];
  for (const [stage, target] of Object.entries(routes)) {
    const able = PROVIDER_IDS.filter((p) => PROVIDERS[p].stages.includes(stage as BackendStage));
    if (target === MEASURED ? able.length < 2 : !able.includes(target as ProviderId)) {
      errors.push({
        path: `routes.${stage}`,
        message:
          target === MEASURED
            ? `only ${able.join(", ") || "no provider"} computes ${stage}: nothing to measure`
            : `'${target}' does not compute ${stage}; providers that do: ${able.join(", ") || "none"}`,
        code: "unknown_provider",
      });
    }
  }
  if (errors.length > 0) throw validation("the profile routes a stage to no provider that computes it", errors);
  const registry = keyRegistry(env);
  await registry.putProfile(name, routes);
  return routingOut(await registry.routing());
}

/** Sets (or with null removes) the rule of a scope; the profile must exist. */
export async function assignProfile(env: Env, scope: RoutingScope, profile: string | null): Promise<RoutingOut> {
  const registry = keyRegistry(env);
  if (scope.startsWith("project:")) await requireProject(env, scope.slice("project:".length));
  if (profile !== null && !profiles(await registry.routing()).some((p) => p.name === profile)) {
    throw validation(`no routing profile '${profile}'`, [
      { path: "profile", message: "create it first (POST /v1/admin/routing/profiles)", code: "unknown_profile" },
    ]);
  }
  await registry.setRule(scope, profile);
  return routingOut(await registry.routing());
}

/**
 * A project of some tenant (an operator's rule names a project deployment-wide, outside any tenant):
 * 404 when no tenant with a key, nor the default one, has it.
 */
async function requireProject(env: Env, projectId: string): Promise<void> {
  const tenants = new Set([DEFAULT_TENANT, ...(await keyRegistry(env).list()).map((k) => k.tenant_id)]);
  for (const t of tenants) if (await tenantStore(env, t).getProject(projectId)) return;
  throw notFound("project");
}

// ---- plugins (4.17): the providers, built into the runner bundle ----

function pluginItem(state: OperatorRouting, p: ProviderId): PluginItem {
  const info = PROVIDERS[p];
  return {
    plugin_id: p,
    display_name: info.display_name,
    description: info.description,
    provides: [p],
    stages: [...info.stages],
    capabilities: [...info.capabilities],
    builtin: true,
    enabled: enabled(state, p),
    updated_at: state.plugins[p]?.updated_at ?? null,
    entry_point: info.entry_point,
  };
}

export async function plugins(env: Env): Promise<PluginItem[]> {
  const state = await operatorRouting(env);
  return PROVIDER_IDS.map((p) => pluginItem(state, p));
}

export async function plugin(env: Env, pluginId: string): Promise<PluginItem> {
  if (!isProvider(pluginId)) throw notFound("plugin");
  return pluginItem(await operatorRouting(env), pluginId);
}

/**
 * Enables or disables a provider. A provider that is the only one of some stage stays enabled
 * (409): disabling it would leave that stage with nothing to run it.
 */
export async function setPluginEnabled(env: Env, pluginId: string, on: boolean): Promise<PluginItem> {
  if (!isProvider(pluginId)) throw notFound("plugin");
  const registry = keyRegistry(env);
  if (!on) {
    const state = await registry.routing();
    const alone = PROVIDERS[pluginId].stages.filter(
      (s) => !PROVIDER_IDS.some((q) => q !== pluginId && enabled(state, q) && PROVIDERS[q].stages.includes(s)),
    );
    if (alone.length > 0)
      throw conflict(`'${pluginId}' is the only enabled provider of ${alone.join(", ")}: disabling it would leave them unrunnable`);
  }
  await registry.setPluginEnabled(pluginId, on);
  return pluginItem(await registry.routing(), pluginId);
}

/** Where the deployment's runners register: the operator's and the pool's queues, and the default tenant's in `none` mode. */
function runnerScopes(env: Env): { label: string; scope: DispatchScope }[] {
  const config = readConfig(env);
  return [
    ...(config.authMode === "none" ? [{ label: "tenant/default", scope: { tenant: DEFAULT_TENANT } }] : []),
    ...(config.operatorRunnerToken ? [{ label: "operator", scope: "operator" as const }] : []),
    { label: "pool", scope: "pool" as const },
  ];
}

/** A runner is connected when it asked for work within this window (its long polls last at most 25 s). */
const LIVE_WINDOW_MS = 120_000;

/** `:doctor`: the runners that could run the provider now, their adapters and builds against the service's. */
export async function doctor(env: Env, pluginId: string): Promise<PluginDoctor> {
  if (!isProvider(pluginId)) throw notFound("plugin");
  const info = PROVIDERS[pluginId];
  const state = await operatorRouting(env);
  const serviceVersion = runtimeVersions(env)[info.runtime_version_key] ?? null;
  const since = Date.now() - LIVE_WINDOW_MS;
  const runners = (
    await Promise.all(
      runnerScopes(env).flatMap(({ label, scope }) =>
        dispatchers(env, scope).map(async (d) => (await d.liveRunners(since)).map((r) => ({ r, label }))),
      ),
    )
  ).flat();
  const able = runners.filter(({ r }) => info.requires === "nothing" || r.abilities.webgpu !== null);
  const rows = able.map(({ r, label }) => ({
    runner_id: r.runner_id,
    name: r.name,
    scope: label,
    last_seen_at: r.last_seen_at,
    adapter: r.abilities.webgpu ? r.abilities.webgpu.adapter.description || r.abilities.webgpu.adapter.vendor || "unnamed adapter" : null,
    is_fallback_adapter: r.abilities.webgpu ? r.abilities.webgpu.adapter.is_fallback_adapter : null,
    runtime_version: r.runtime_versions[info.runtime_version_key] ?? null,
    current: (r.runtime_versions[info.runtime_version_key] ?? null) === serviceVersion,
  }));
  const current = rows.filter((r) => r.current);
  const checks = [
    { name: "enabled", ok: enabled(state, pluginId), detail: enabled(state, pluginId) ? "enabled" : "disabled by the operator" },
    {
      name: "runners_connected",
      ok: rows.length > 0,
      detail: `${rows.length} runner(s) seen in the last ${LIVE_WINDOW_MS / 1000} s that can run it (${info.requires === "webgpu_adapter" ? "with a WebGPU adapter" : "any runner"}), of ${runners.length} connected`,
    },
    {
      name: "runtime_version",
      ok: current.length > 0,
      detail: `service build ${info.runtime_version_key}=${serviceVersion ?? "unset"}; ${current.length} of ${rows.length} runner(s) run it`,
    },
  ];
  if (info.requires === "webgpu_adapter") {
    const hardware = rows.filter((r) => r.is_fallback_adapter === false && !/swiftshader|llvmpipe|software/i.test(r.adapter ?? ""));
    checks.push({
      name: "hardware_adapter",
      ok: hardware.length > 0,
      detail: `${hardware.length} of ${rows.length} adapter(s) are hardware; software adapters run the kernels slower than the wasm engine`,
    });
  }
  const essential = checks.filter((c) => c.name !== "hardware_adapter");
  const status = essential.every((c) => c.ok)
    ? checks.every((c) => c.ok)
      ? "ok"
      : "degraded"
    : current.length > 0
      ? "degraded"
      : "unavailable";
  return { plugin_id: pluginId, status, checks, runners: rows };
}

/** `GET /v1/admin/plugins/detect-tools`: what the connected runners report of the tools the providers need. */
export async function detectTools(env: Env) {
  const since = Date.now() - LIVE_WINDOW_MS;
  const runners = (
    await Promise.all(runnerScopes(env).flatMap(({ scope }) => dispatchers(env, scope).map((d) => d.liveRunners(since))))
  ).flat();
  const count = (f: (r: (typeof runners)[number]) => boolean) => runners.filter(f).length;
  return {
    runners: runners.length,
    tools: [
      {
        name: "webassembly",
        detected: runners.length > 0,
        runners: runners.length,
        detail: "every runner loads the engine as WebAssembly",
      },
      { name: "wasm_simd", detected: count((r) => r.abilities.wasm.simd) > 0, runners: count((r) => r.abilities.wasm.simd), detail: "" },
      {
        name: "wasm_threads",
        detected: count((r) => r.abilities.wasm.threads) > 0,
        runners: count((r) => r.abilities.wasm.threads),
        detail: "",
      },
      {
        name: "webgpu",
        detected: count((r) => r.abilities.webgpu !== null) > 0,
        runners: count((r) => r.abilities.webgpu !== null),
        detail: [
          ...new Set(
            runners.flatMap((r) =>
              r.abilities.webgpu ? [r.abilities.webgpu.adapter.description || r.abilities.webgpu.adapter.vendor] : [],
            ),
          ),
        ].join(", "),
      },
    ],
  };
}

/** `GET /v1/admin/plugins/entry-points`: the providers' entry points in the runner bundle, and whether a connected runner loaded them. */
export async function entryPoints(env: Env, load: boolean) {
  const tools = load ? await detectTools(env) : null;
  return PROVIDER_IDS.map((p) => ({
    plugin_id: p,
    group: "edgesfm.providers",
    entry_point: PROVIDERS[p].entry_point,
    loaded: tools ? (p === "webgpu" ? tools.tools.find((t) => t.name === "webgpu")!.runners > 0 : tools.runners > 0) : null,
  }));
}

/**
 * `:install` plans and never executes (4.17 rule 2): the Worker has no processes to run a command
 * in, and the providers ship inside the runner bundle, so there is nothing to install beside it.
 */
export function installPlan(
  pluginId: string,
  body: { method: "uv" | "docker" | "external_tool"; github_url?: string; ref?: string; package_name?: string },
) {
  if (!isProvider(pluginId)) throw notFound("plugin");
  const warnings: string[] = [
    `'${pluginId}' is built into the runner bundle (${PROVIDERS[pluginId].entry_point}): runners load it, so no install is needed`,
  ];
  if (body.ref && !/^[0-9a-f]{40}$/.test(body.ref)) warnings.push(`ref '${body.ref}' is mutable (a branch or tag): pin a commit id`);
  if (body.github_url && !body.ref) warnings.push("no ref given: the default branch is mutable");
  const pkg = body.package_name ?? (body.github_url ? `git+${body.github_url}${body.ref ? `@${body.ref}` : ""}` : null);
  const runnable_command = body.method === "uv" && pkg ? `uv pip install ${pkg}` : null;
  const steps =
    body.method === "uv"
      ? [
          runnable_command ? `on a runner host: ${runnable_command}` : "name package_name or github_url for a uv command",
          "restart the runner",
        ]
      : body.method === "docker"
        ? [
            "recorded as a runtime choice: run the runner image (`npm run runner` in a container) beside the service; never run by job submission",
          ]
        : ["recorded as a runtime choice: the tool must exist on the runner host; never run by job submission"];
  return { plugin_id: pluginId, method: body.method, dry_run: true as const, executed: false as const, runnable_command, steps, warnings };
}

// ---- descriptors (4.16) ----

export function backendOut(env: Env) {
  return {
    ...BACKEND,
    capabilities: [...implemented(env)].sort(),
    runtime_versions: runtimeVersions(env),
    _links: {
      self: { href: "/v1/backend" },
      actions: { href: "/v1/backend/actions" },
      config_schemas: { href: "/v1/backend/config-schemas" },
      artifact_contracts: { href: "/v1/backend/artifact-contracts" },
      providers: { href: "/v1/backend/providers" },
      routing: { href: "/v1/backend/routing" },
    },
  };
}

export const configSchemas = (includeSchemas: boolean) =>
  CONFIG_SCHEMAS.map((s) => ({
    config_id: s.config_id,
    stage: s.stage,
    capability: s.capability,
    display_name: s.display_name,
    ...(includeSchemas ? { option_schema: jsonSchemaOf(s.options) } : {}),
  }));

/** One contract per stage the engine runs, from the core roles (2.11) and the conversion graph (4.10). */
export function artifactContracts(env: Env) {
  const has = implemented(env);
  const fmt = (k: keyof typeof CORE_ARTIFACT_FORMATS) => CORE_ARTIFACT_FORMATS[k];
  const contract = (
    contract_id: string,
    stage: string,
    capability: string,
    display_name: string,
    accepts: (keyof typeof CORE_ARTIFACT_FORMATS)[],
    emits: (keyof typeof CORE_ARTIFACT_FORMATS)[],
  ) => ({
    contract_id,
    stage,
    capability,
    display_name,
    accepts,
    emits,
    accepts_formats: accepts.map(fmt),
    emits_formats: emits.map(fmt),
    preferred: emits[0]!,
    preferred_format: fmt(emits[0]!),
    conversions: CONVERSIONS.filter((c) => emits.some((k) => fmt(k) === c.from_format)).map((c) => ({
      from_format: c.from_format,
      to_format: c.to_format,
      lossless: c.lossless,
      description: "export" in c.via ? `the ${c.via.export} exporter` : "a COLMAP text model read back",
    })),
  });
  const all = [
    contract("edgesfm.features.sift", "features", "features.extract.sift", "SIFT features", [], [...CORE_ROLES.features.kinds]),
    contract(
      "edgesfm.matcher.nn",
      "matcher",
      "matchers.nn-mutual",
      "descriptor matching",
      [...CORE_ROLES.features.kinds],
      [...CORE_ROLES.matches.kinds],
    ),
    contract(
      "edgesfm.verify",
      "verify",
      "matches.verify",
      "two-view verification",
      [...CORE_ROLES.features.kinds, ...CORE_ROLES.matches.kinds],
      [...CORE_ROLES.verified_matches.kinds],
    ),
    contract(
      "edgesfm.mapping.incremental",
      "mapping",
      "map.incremental",
      "incremental mapping",
      [...CORE_ROLES.features.kinds, ...CORE_ROLES.verified_matches.kinds],
      ["reconstruction.snapshot", "reconstruction.sparse.v1", "reconstruction.submodel"],
    ),
  ];
  return all.filter((c) => (has as ReadonlySet<string>).has(c.capability));
}

export async function providerList(env: Env): Promise<ProviderOut[]> {
  const state = await operatorRouting(env);
  const versions = runtimeVersions(env);
  return PROVIDER_IDS.map((p) => ({
    provider_id: p,
    plugin_id: p,
    display_name: PROVIDERS[p].display_name,
    description: PROVIDERS[p].description,
    stages: [...PROVIDERS[p].stages],
    capabilities: [...PROVIDERS[p].capabilities],
    requires: PROVIDERS[p].requires,
    enabled: enabled(state, p),
    runtime_version: versions[PROVIDERS[p].runtime_version_key] ?? "unset",
  }));
}

// ---- the rules of a stage submission ----

/** A stage spec of a submission as the rules see it: where it sits in the body, the stage and capability it runs. */
export interface RoutedSpec {
  path: string;
  stage: BackendStage;
  capability: string;
  spec: { provider?: string; backend_options?: Record<string, unknown> };
}

/**
 * Before any job exists: `backend_options` against the stage's config schema (2.15), then each
 * stage's provider: the request's own (known, enabled, computing the stage), else the project's,
 * the workspace's or the default profile's rule; with none and several enabled providers, a
 * validation error (4.16 rule 4). A chosen provider is pinned in the spec (its runner must use
 * it); `measured` over several enabled providers leaves it to the runner.
 */
export async function applyBackendRules(env: Env, projectId: string, specs: RoutedSpec[]): Promise<void> {
  const errors: FieldError[] = [];
  for (const s of specs) {
    const schema = configSchemaFor(s.stage, s.capability);
    if (!schema) continue;
    const parsed = schema.options.safeParse(s.spec.backend_options ?? {});
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const keys = issue.code === "unrecognized_keys" ? issue.keys : [issue.path.join(".")];
        for (const key of keys)
          errors.push({
            path: [s.path, "backend_options", key].filter(Boolean).join("."),
            message: issue.code === "unrecognized_keys" ? `unknown option (config schema ${schema.config_id})` : issue.message,
            code: issue.code === "unrecognized_keys" ? "unknown_backend_option" : "invalid_backend_option",
          });
      }
    }
  }
  if (errors.length > 0)
    throw validation("backend_options do not match the stage's config schema (GET /v1/backend/config-schemas)", errors);

  const state = await operatorRouting(env);
  const rule = (stage: BackendStage) => {
    for (const scope of [`project:${projectId}`, "workspace", "default"] as const) {
      const name = scope === "default" ? defaultProfile(state) : state.rules[scope];
      if (!name) continue;
      const target = profiles(state).find((p) => p.name === name)?.routes[stage];
      if (target) return { target, profile: name, scope };
    }
    return null;
  };
  for (const s of specs) {
    const able = PROVIDER_IDS.filter(
      (p) => PROVIDERS[p].stages.includes(s.stage) && (PROVIDERS[p].capabilities as readonly string[]).includes(s.capability),
    );
    const on = able.filter((p) => enabled(state, p));
    const path = [s.path, "provider"].filter(Boolean).join(".");
    if (s.spec.provider !== undefined) {
      if (!on.includes(s.spec.provider as ProviderId)) {
        const why = able.includes(s.spec.provider as ProviderId) ? "is disabled" : `does not compute ${s.capability}`;
        errors.push({
          path,
          message: `provider '${s.spec.provider}' ${why}; enabled providers of it: ${on.join(", ") || "none"}`,
          code: "unknown_provider",
        });
      }
      continue;
    }
    if (on.length <= 1) {
      if (on.length === 1 && able.length > 1) s.spec.provider = on[0]; // the others are disabled: pin the one left
      continue;
    }
    const r = rule(s.stage);
    if (!r) {
      errors.push({
        path,
        message: `several enabled providers compute ${s.stage} (${on.join(", ")}) and no routing rule selects one: name a provider, or set a routing profile (POST /v1/admin/routing/default)`,
        code: "ambiguous_provider",
      });
    } else if (r.target !== MEASURED) {
      if (!on.includes(r.target as ProviderId)) {
        errors.push({
          path,
          message: `the ${r.scope} routing profile '${r.profile}' routes ${s.stage} to '${r.target}', which is disabled`,
          code: "unknown_provider",
        });
      } else s.spec.provider = r.target;
    }
  }
  if (errors.length > 0) throw validation("no provider can be chosen for a stage of this request (4.16)", errors);
}

/** The specs of a job's stages the rules apply to, at their body paths (`paths` renames a params key, e.g. a stage route's `spec`). */
export function routedSpecsOf(
  stages: { kind: string; params: Record<string, unknown> }[],
  paths: Record<string, string> = {},
): RoutedSpec[] {
  const out: RoutedSpec[] = [];
  const add = (
    params: Record<string, unknown>,
    key: string,
    stage: BackendStage,
    capability: (spec: Record<string, unknown>) => string,
  ) => {
    const spec = params[key] as Record<string, unknown> | null | undefined;
    if (spec && typeof spec === "object") out.push({ path: paths[key] ?? key, stage, capability: capability(spec), spec });
  };
  for (const { kind, params } of stages) {
    if (kind === "extract") add(params, "features", "features", (s) => `features.extract.${String(s.type)}`);
    if (kind === "match") add(params, "matcher", "matcher", (s) => `matchers.${String(s.type)}`);
    if (kind === "verify") add(params, "verify", "verify", () => "matches.verify");
    if (kind === "map") {
      add(params, "spec", "mapping", (s) => `map.${String(s.kind)}`);
      add(params, "ba", "bundle_adjustment", (s) => `ba.${String(s.mode)}`);
    }
  }
  return out;
}

import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunnerClient } from "../../client/runner";
import { DigestRunner } from "../../scripts/digest-runner";
import { keyRegistry } from "../services/stores";
import {
  BASE,
  call,
  deployment,
  expectFieldError,
  expectProblem,
  expectStatus,
  selfFetch,
  tenantClient,
  uploadBlob,
  type Call,
} from "../test/helpers";

vi.setConfig({ testTimeout: 30_000 });

let salt = 0;
async function dataset(via: Call = call) {
  const p = await expectStatus(via("POST", "/v1/projects", { name: "backend" }), 201);
  const d = await expectStatus(
    via("POST", `/v1/projects/${p.json.project_id}/datasets`, { name: "d", source: { kind: "upload", entries: [] } }),
    201,
  );
  salt++;
  for (let i = 0; i < 2; i++) {
    const sha = await uploadBlob(new TextEncoder().encode(`backend image ${i} ${salt} ${Math.random()}`), {}, via);
    await expectStatus(via("POST", `/v1/datasets/${d.json.dataset_id}/images`, { name: `img${i}.jpg`, blob_sha: sha }), 201);
  }
  return { pid: p.json.project_id as string, did: d.json.dataset_id as string };
}

/** Restores the operator state each test may change (the KeyRegistry outlives a test). */
afterEach(async () => {
  await runInDurableObject(keyRegistry(env), (_o, state) => {
    for (const t of ["plugin_state", "routing_profiles", "routing_rules"]) state.storage.sql.exec(`DELETE FROM ${t}`);
  });
});

describe("backend descriptors (4.16)", () => {
  it("GET /v1/backend: identity, capabilities, runtime versions and links", async () => {
    const r = await expectStatus(call("GET", "/v1/backend"), 200);
    expect(r.json).toMatchObject({ name: "edgesfm-browser", vendor: "EdgeSfM" });
    expect(r.json.capabilities).toContain("features.extract.sift");
    expect(r.json.capabilities).not.toContain("dense.patch_match_stereo");
    expect(Object.keys(r.json.runtime_versions)).toEqual(["engine-wasm", "shaders"]);
    expect(r.json._links.actions.href).toBe("/v1/backend/actions");
  });

  it("actions are the stages and pipelines that run, schemas only on request or by id", async () => {
    const list = await expectStatus(call("GET", "/v1/backend/actions"), 200);
    const ids = list.json.items.map((a: any) => a.action_id);
    expect(ids).toEqual(
      expect.arrayContaining([
        "edgesfm.stage.features",
        "edgesfm.pipeline.incremental",
        "edgesfm.pipeline.spherical",
        "edgesfm.pipeline.global",
        "edgesfm.pipeline.hierarchical",
      ]),
    );
    expect(list.json.items[0].input_schema).toBeUndefined();
    const withSchemas = await expectStatus(call("GET", "/v1/backend/actions?include_schemas=true&page_size=1"), 200);
    expect(withSchemas.json.items[0].input_schema.type).toBe("object");
    expect(withSchemas.json.next_page_token).toBeTruthy();
    const one = await expectStatus(call("GET", `/v1/backend/actions/${encodeURIComponent("edgesfm.stage.features")}`), 200);
    expect(one.json.input_schema.required).toContain("dataset_id");
    expect(one.json).toMatchObject({ stability: "stable", side_effects: "write", required_capabilities: ["features.extract.sift"] });
    expectProblem(await call("GET", "/v1/backend/actions/edgesfm.pipeline.dense"), 404, "not_found");
  });

  it(":validate normalises the inputs and reports errors, creating no job", async () => {
    const { did } = await dataset();
    const before = (await call("GET", "/v1/jobs")).json.total;
    const ok = await expectStatus(
      call("POST", "/v1/backend/actions/edgesfm.stage.features:validate", { inputs: { dataset_id: did, spec: { max_num_features: 100 } } }),
      200,
    );
    expect(ok.json).toMatchObject({ valid: true, errors: [] });
    expect(ok.json.normalized_inputs.spec).toMatchObject({ type: "sift", max_num_features: 100, use_gpu: true, backend_options: {} });
    const bad = await expectStatus(
      call("POST", "/v1/backend/actions/edgesfm.stage.features:validate", {
        inputs: { dataset_id: did, spec: { backend_options: { peak_threshhold: 0.01 } } },
      }),
      200,
    );
    expect(bad.json.valid).toBe(false);
    expect(bad.json.errors).toEqual([
      expect.objectContaining({ path: "inputs.spec.backend_options.peak_threshhold", code: "unknown_backend_option" }),
    ]);
    const shape = await expectStatus(call("POST", "/v1/backend/actions/edgesfm.stage.features:validate", { inputs: { spec: 3 } }), 200);
    expect(shape.json.valid).toBe(false);
    expect(shape.json.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(["inputs.dataset_id", "inputs.spec"]));
    expect((await call("GET", "/v1/jobs")).json.total).toBe(before);
  });

  it(":run submits the stage's ordinary job, its tasks of kind backend_action, and answers 202 with action_id and backend", async () => {
    const tenant = await tenantClient("backend-run");
    const { pid, did } = await dataset(tenant.call);
    const run = (body: unknown) => tenant.call("POST", "/v1/backend/actions/edgesfm.stage.features:run", body);
    const r = await expectStatus(run({ project_id: pid, inputs: { dataset_id: did } }), 202);
    expect(r.json).toMatchObject({ action_id: "edgesfm.stage.features", backend: "edgesfm-browser", recon_id: null });
    expect(r.headers.get("Location")).toBe(`/v1/jobs/${r.json.job_id}`);
    const job = await expectStatus(tenant.call("GET", `/v1/jobs/${r.json.job_id}`), 200);
    expect(job.json).toMatchObject({ recipe: "features", status: "pending" });
    // 4.16: "a normal job with task kind backend_action"; the stage it runs is x-stage_kind, its cache key the route's job's.
    expect(job.json.tasks).toMatchObject([{ kind: "backend_action", "x-stage_kind": "extract" }]);
    const progress = (await tenant.call("GET", `/v1/jobs/${r.json.job_id}/progress`)).json;
    expect(progress).toMatchObject({ current_task_kind: "backend_action", tasks: [{ kind: "backend_action", "x-stage_kind": "extract" }] });
    const direct = await expectStatus(tenant.call("POST", `/v1/datasets/${did}/features`, {}), 202);
    const routeTask = (await tenant.call("GET", `/v1/jobs/${direct.json.job_id}`)).json.tasks[0];
    expect(routeTask).toMatchObject({ kind: "extract", cache_key: job.json.tasks[0].cache_key });
    expect(routeTask["x-stage_kind"]).toBeUndefined();
    await expectStatus(tenant.call("POST", `/v1/jobs/${direct.json.job_id}:cancel?force=true`), 200);
    // A runner leases it as the stage it computes and the job ends as any job (rule 2).
    const runner = new DigestRunner({ base: BASE, fetch: tenant.fetch, name: "action-runner", stages: ["extract"] });
    await runner.register();
    for (let lease = await runner.lease(); lease; lease = await runner.lease()) {
      expect(lease.task).toMatchObject({ job_id: r.json.job_id, kind: "extract" });
      expect(await runner.work(lease)).toBe("completed");
    }
    const done = (await tenant.call("GET", `/v1/jobs/${r.json.job_id}`)).json;
    expect(done).toMatchObject({
      status: "succeeded",
      tasks: [{ kind: "backend_action", "x-stage_kind": "extract", status: "succeeded" }],
    });
    // A dataset of another project is not found; bad inputs are a 422 before any job.
    const other = await dataset(tenant.call);
    expectProblem(await run({ project_id: pid, inputs: { dataset_id: other.did } }), 404);
    expectFieldError(await run({ project_id: pid, inputs: { dataset_id: did, spec: { type: "orb" } } }), "inputs.spec.type");
  });

  it("config schemas close backend_options: unknown keys and wrong types are refused before a job; read options pass", async () => {
    const list = await expectStatus(call("GET", "/v1/backend/config-schemas"), 200);
    const sift = list.json.items.find((s: any) => s.config_id === "edgesfm.features.sift");
    expect(sift).toMatchObject({ stage: "features", capability: "features.extract.sift" });
    expect(sift.option_schema.additionalProperties).toBe(false);
    expect(Object.keys(sift.option_schema.properties)).toEqual(
      expect.arrayContaining(["max_image_size", "peak_threshold", "first_octave"]),
    );
    expect((await call("GET", "/v1/backend/config-schemas?include_schemas=false")).json.items[0].option_schema).toBeUndefined();
    await expectStatus(call("GET", "/v1/backend/config-schemas/edgesfm.features.sift"), 200);
    expectProblem(await call("GET", "/v1/backend/config-schemas/nope"), 404);

    const { pid, did } = await dataset();
    const before = (await call("GET", "/v1/jobs")).json.total;
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/features`, { spec: { backend_options: { nope: 1 } } }),
      "spec.backend_options.nope",
      "unknown_backend_option",
    );
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/features`, { spec: { backend_options: { max_image_size: "big" } } }),
      "spec.backend_options.max_image_size",
      "invalid_backend_option",
    );
    expectFieldError(
      await call("POST", `/v1/projects/${pid}/pipelines/incremental`, {
        dataset_id: did,
        spec: { kind: "incremental" },
        matcher: { backend_options: { x: 1 } },
      }),
      "matcher.backend_options.x",
      "unknown_backend_option",
    );
    expect((await call("GET", "/v1/jobs")).json.total).toBe(before);
    // The options the runner reads, and the legacy alias folded into them, still pass.
    await expectStatus(
      call("POST", `/v1/datasets/${did}/features`, {
        spec: { sift_first_octave: 0, backend_options: { max_image_size: 1600, normalization: "L2" } },
      }),
      202,
    );
  });

  it("artifact contracts and providers come from the vocabulary and the provider list", async () => {
    const contracts = await expectStatus(call("GET", "/v1/backend/artifact-contracts"), 200);
    const features = contracts.json.items.find((c: any) => c.contract_id === "edgesfm.features.sift");
    expect(features).toMatchObject({
      emits: ["features.local.v1"],
      emits_formats: ["svc.features.local.v1"],
      preferred: "features.local.v1",
    });
    const mapping = (await expectStatus(call("GET", "/v1/backend/artifact-contracts/edgesfm.mapping.incremental"), 200)).json;
    expect(mapping.conversions.some((c: any) => c.to_format === "colmap.model.text.v1" && c.lossless)).toBe(true);
    const providers = await expectStatus(call("GET", "/v1/backend/providers"), 200);
    expect(providers.json.items.map((p: any) => [p.provider_id, p.enabled, p.stages])).toEqual([
      ["wasm", true, ["features", "matcher", "verify", "mapping", "bundle_adjustment"]],
      ["webgpu", true, ["features", "matcher"]],
    ]);
  });
});

describe("routing (4.16 rule 4) and the dispatcher", () => {
  it("the shipped default profile routes the stages two providers compute; without it a request naming no provider is a validation error", async () => {
    const routing = await expectStatus(call("GET", "/v1/backend/routing"), 200);
    expect(routing.json).toMatchObject({ default_profile: "measured", routed_stages: ["features", "matcher"] });
    const { pid, did } = await dataset();
    await expectStatus(call("POST", `/v1/datasets/${did}/features`, {}), 202);

    await expectStatus(call("POST", "/v1/admin/routing/default", { profile: null }), 200);
    const before = (await call("GET", "/v1/jobs")).json.total;
    expectFieldError(await call("POST", `/v1/datasets/${did}/features`, {}), "spec.provider", "ambiguous_provider");
    expectFieldError(
      await call("POST", `/v1/projects/${pid}/pipelines/incremental`, { dataset_id: did, spec: { kind: "incremental" } }),
      "matcher.provider",
      "ambiguous_provider",
    );
    expect((await call("GET", "/v1/jobs")).json.total).toBe(before);
    // A request-level provider decides; an unknown one is refused.
    await expectStatus(call("POST", `/v1/datasets/${did}/features`, { spec: { provider: "wasm" } }), 202);
    expectFieldError(
      await call("POST", `/v1/datasets/${did}/features`, { spec: { provider: "cuda" } }),
      "spec.provider",
      "unknown_provider",
    );
    // A project rule decides for its project.
    await expectStatus(call("POST", "/v1/admin/routing/profiles", { name: "cpu", routes: { features: "wasm", matcher: "wasm" } }), 200);
    const set = await expectStatus(call("POST", `/v1/admin/routing/projects/${pid}`, { profile: "cpu" }), 200);
    expect(set.json.project_profiles[pid]).toBe("cpu");
    // A project no tenant has gets no rule.
    await expectStatus(call("POST", "/v1/admin/routing/projects/01ARZ3NDEKTSV4RRFFQ69G5FAV", { profile: "cpu" }), 404);
    await expectStatus(call("POST", `/v1/datasets/${did}/features`, {}), 202);
  });

  it("profiles must route a stage to a provider that computes it, and rules name existing profiles", async () => {
    expectFieldError(
      await call("POST", "/v1/admin/routing/profiles", { name: "x", routes: { verify: "webgpu" } }),
      "routes.verify",
      "unknown_provider",
    );
    expectFieldError(
      await call("POST", "/v1/admin/routing/profiles", { name: "x", routes: { verify: "measured" } }),
      "routes.verify",
      "unknown_provider",
    );
    expectFieldError(await call("POST", "/v1/admin/routing/profiles", { name: "x", routes: { meshing: "wasm" } }), "routes");
    expectFieldError(await call("POST", "/v1/admin/routing/workspaces", { profile: "nope" }), "profile", "unknown_profile");
    const ws = await expectStatus(call("POST", "/v1/admin/routing/workspaces", { profile: "measured" }), 200);
    expect(ws.json.workspace_profile).toBe("measured");
  });

  it("a task routed to webgpu is leased only by a runner with a WebGPU adapter; the runner is told the provider", async () => {
    const tenant = await tenantClient("backend-routing");
    const { did } = await dataset(tenant.call);
    const r = await expectStatus(tenant.call("POST", `/v1/datasets/${did}/features`, { spec: { provider: "webgpu" } }), 202);
    const cpu = new DigestRunner({ base: BASE, fetch: tenant.fetch, name: "cpu-only", stages: ["extract"] });
    await cpu.register();
    expect(await cpu.lease()).toBeNull();
    const gpuClient = new RunnerClient({ baseUrl: BASE, fetch: tenant.fetch });
    const gpu = await gpuClient.register({
      name: "with-adapter",
      stages: ["extract"],
      runtime_versions: await gpuClient.serviceRuntimeVersions(),
      abilities: {
        webgpu: {
          adapter: { vendor: "google", architecture: "swiftshader", device: "", description: "SwiftShader", is_fallback_adapter: true },
          features: [],
          limits: {},
        },
        wasm: { simd: true, threads: false },
        memory_bytes: null,
        hardware_concurrency: 2,
      },
    });
    const lease = await gpuClient.lease(gpu.runner_id);
    expect(lease?.task.job_id).toBe(r.json.job_id);
    expect((lease!.task.params.features as any).provider).toBe("webgpu");
  });
});

describe("admin plugins (4.17)", () => {
  it("lists the providers as plugins, filters by query, shows one, 404s unknown ids", async () => {
    const all = await expectStatus(call("GET", "/v1/admin/plugins"), 200);
    expect(all.json.items.map((p: any) => [p.plugin_id, p.builtin, p.enabled])).toEqual([
      ["wasm", true, true],
      ["webgpu", true, true],
    ]);
    expect((await call("GET", "/v1/admin/plugins?query=WGSL")).json.items.map((p: any) => p.plugin_id)).toEqual(["webgpu"]);
    await expectStatus(call("GET", "/v1/admin/plugins/wasm"), 200);
    expectProblem(await call("GET", "/v1/admin/plugins/cuda"), 404);
    const entry = await expectStatus(call("GET", "/v1/admin/plugins/entry-points"), 200);
    expect(entry.json.map((e: any) => [e.plugin_id, e.loaded])).toEqual([
      ["wasm", null],
      ["webgpu", null],
    ]);
    const tools = await expectStatus(call("GET", "/v1/admin/plugins/detect-tools"), 200);
    expect(tools.json.tools.map((t: any) => t.name)).toEqual(["webassembly", "wasm_simd", "wasm_threads", "webgpu"]);
  });

  it("disabling webgpu pins the routed stages to wasm; the last provider of a stage cannot be disabled", async () => {
    const off = await expectStatus(call("POST", "/v1/admin/plugins/webgpu:disable"), 200);
    expect(off.json.enabled).toBe(false);
    expectProblem(await call("POST", "/v1/admin/plugins/wasm:disable"), 409, "conflict");
    const tenant = await tenantClient("backend-disabled");
    const { did } = await dataset(tenant.call);
    await expectStatus(tenant.call("POST", `/v1/datasets/${did}/features`, {}), 202);
    expectFieldError(
      await tenant.call("POST", `/v1/datasets/${did}/features`, { spec: { provider: "webgpu" } }),
      "spec.provider",
      "unknown_provider",
    );
    const runner = new DigestRunner({ base: BASE, fetch: tenant.fetch, name: "pinned", stages: ["extract"] });
    await runner.register();
    const lease = await runner.lease();
    expect((lease!.task.params.features as any).provider).toBe("wasm");
    expect((await expectStatus(call("POST", "/v1/admin/plugins/webgpu:enable"), 200)).json.enabled).toBe(true);
  });

  it(":doctor reports the connected runners, their adapters and builds", async () => {
    const runner = new DigestRunner({ base: BASE, fetch: selfFetch, name: "doctor-patient", stages: ["extract"] });
    await runner.register();
    await runner.lease();
    const wasm = await expectStatus(call("POST", "/v1/admin/plugins/wasm:doctor"), 200);
    expect(wasm.json.runners.some((r: any) => r.name === "doctor-patient" && r.current && r.adapter === null)).toBe(true);
    expect(wasm.json.checks.find((c: any) => c.name === "runners_connected").ok).toBe(true);
    const webgpu = await expectStatus(call("POST", "/v1/admin/plugins/webgpu:doctor"), 200);
    expect(webgpu.json.runners.some((r: any) => r.name === "doctor-patient")).toBe(false);
  });

  it(":install answers a plan and never executes, even with allow_unsafe_execution", async () => {
    const plan = await expectStatus(
      call("POST", "/v1/admin/plugins/webgpu:install", { method: "uv", github_url: "https://github.com/x/y", ref: "main" }),
      200,
    );
    expect(plan.json).toMatchObject({ dry_run: true, executed: false, runnable_command: "uv pip install git+https://github.com/x/y@main" });
    expect(plan.json.warnings.some((w: string) => w.includes("mutable"))).toBe(true);
    expect((await call("POST", "/v1/admin/plugins/webgpu:install", { method: "docker" })).json.runnable_command).toBeNull();
    const refused = await call("POST", "/v1/admin/plugins/webgpu:install", {
      method: "uv",
      package_name: "x",
      dry_run: false,
      allow_unsafe_execution: true,
    });
    expectProblem(refused, 403);
    expect(refused.json.detail).toContain("never executes");
    expectFieldError(await call("POST", "/v1/admin/plugins/webgpu:install", { method: "pip" }), "method");
  });

  it("plugin and routing routes take the operator token when one is set", async () => {
    const guarded = deployment({ SVC_ADMIN_TOKEN: "operator-secret" });
    expectProblem(await guarded("GET", "/v1/admin/plugins"), 401, "auth");
    expectProblem(await guarded("POST", "/v1/admin/routing/default", { profile: null }), 401, "auth");
    await expectStatus(guarded("GET", "/v1/admin/plugins", undefined, { Authorization: "Bearer operator-secret" }), 200);
  });
});

/**
 * The API under a property-based fuzzer driven by its own /openapi.json (test/fuzz/): every
 * operation, valid requests on real rows (a sealed reconstruction, its job, artifacts, images,
 * uploads, a runner) mutated into invalid and hostile ones, in a tenant of its own (api_key mode).
 * Asserts no 5xx, every error a problem+json with the status its mutation calls for, no row or
 * blob changed by a rejected write (the tenant's Durable Objects' SQLite tables and its R2
 * objects, read directly), and a service that still answers afterwards. Answers the document does
 * not list for their operation are printed (a gap in /openapi.json), not failed.
 *
 * `npm test` runs a short seeded run; `npm run fuzz -- --requests 10000 [--seed N]` the long one
 * (FUZZ_REQUESTS, FUZZ_SEED reach this file as bindings, vitest.config.ts).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { type FuzzTarget, formatReport, fuzz } from "../test/fuzz/fuzz";
import type { OpenApiDocument } from "../test/fuzz/operations";
import { ABSENT_ID, type Fixture } from "../test/fuzz/requests";
import worker from "./index";
import { BASE, call, expectStatus, tenantClient, uploadBlob } from "./test/helpers";
import { LUND_01 } from "./test/photos";
import { scene, sealedReconstruction } from "./test/scene";
import { storageState } from "./test/storage-state";

const vars = env as unknown as Record<string, string | undefined>;
const REQUESTS = Number(vars.FUZZ_REQUESTS) || 300;
const SEED = vars.FUZZ_SEED ? Number(vars.FUZZ_SEED) : 20260422;

/** The fuzz runs in its own tenant (api_key mode), apart from other files' tenants and queues. */
const TENANT = "fuzz";

/** Job names a request could address: every id-like path segment, and the job part of lease ids. */
function jobNamesIn(target: string): string[] {
  const path = target.split("?")[0]!;
  return [...path.matchAll(/[0-9A-Z]{26}/g)].map((m) => m[0]);
}

function fuzzTarget(key: string, jobNames: Set<string>): FuzzTarget {
  const apiKey = { ...env, SVC_AUTH_MODE: "api_key" } as unknown as Env;
  const state = storageState(TENANT, jobNames);
  return {
    async send(r) {
      const headers = r.apiKeyMode ? r.headers : { ...r.headers, authorization: `Bearer ${key}` };
      for (const name of jobNamesIn(r.target)) jobNames.add(name);
      const req = new Request(`${BASE}${r.target}`, {
        method: r.method,
        headers,
        body: r.method === "GET" ? undefined : (r.body as BodyInit | undefined),
      });
      const ctx = createExecutionContext();
      const res = await worker.fetch(req, apiKey, ctx);
      await waitOnExecutionContext(ctx);
      const contentType = res.headers.get("Content-Type") ?? "";
      // An event stream stays open while its job runs: its headers are the answer. Bytes are read as bytes.
      const body = contentType.startsWith("text/event-stream")
        ? (await res.body?.cancel(), "")
        : /json|text/.test(contentType)
          ? await res.text()
          : (await res.arrayBuffer(), "");
      return { status: res.status, contentType, body };
    },
    state,
    async alive() {
      const as = (await tenantClient(TENANT)).call;
      const created = await as("POST", "/v1/projects", { name: "after the fuzz" });
      return (
        (await call("GET", "/healthz")).status === 200 &&
        created.status === 201 &&
        (await as("GET", `/v1/projects/${created.json.project_id}`)).status === 200
      );
    },
  };
}

describe("the API under a fuzzer driven by /openapi.json", () => {
  let doc: OpenApiDocument;
  let fixture: Fixture;
  let target: FuzzTarget;

  beforeAll(async () => {
    doc = (await call("GET", "/openapi.json")).json;
    const tenant = await tenantClient(TENANT);
    const as = tenant.call;
    const sealed = await sealedReconstruction(scene(30), tenant);
    const { pid, did, rid, jid } = sealed;
    const images = (await as("GET", `/v1/datasets/${did}/images`)).json.items as { image_id: string; name: string; content_sha: string }[];
    const photo = await uploadBlob(LUND_01, {}, as);
    const open = await expectStatus(as("POST", "/v1/uploads", { expected_size: 1000 }), 201);
    const job = (await as("GET", `/v1/jobs/${jid}`)).json;
    const submodels = (await as("GET", `/v1/reconstructions/${rid}/submodels`)).json.items as { submodel_id: string }[];
    const artifacts = (await as("GET", `/v1/jobs/${jid}/artifacts`)).json.items as { artifact_id: string }[];
    const key = await expectStatus(as("POST", "/v1/admin/api-keys", { tenant_id: `${TENANT}-other` }), 201);
    const token = await expectStatus(as("POST", "/v1/admin/runner-tokens", { name: "fuzz" }), 201);
    // A runner for a stage no job has: its leases (valid requests) find nothing, so no lease of the
    // fuzz's jobs expires later in the background, under a request it has nothing to do with.
    const versions = (await as("GET", "/version")).json.backend.runtime_versions;
    const idle = await expectStatus(as("POST", "/v1/runners", { name: "fuzz-idle", stages: ["segment"], runtime_versions: versions }), 201);
    const shas = [photo, ...images.map((i) => i.content_sha)];
    fixture = {
      params: {
        pid: [pid],
        did: [did],
        image_id: images.map((i) => i.image_id),
        "reconstructions.image_id": ["1", "2"],
        uid: [open.json.upload_id],
        jid: [jid],
        "reconstructions.rid": [rid],
        "runners.rid": [idle.json.runner_id],
        smid: submodels.map((s) => s.submodel_id),
        artifact_id: artifacts.map((a) => a.artifact_id),
        // Leases of the job's finished tasks, with a secret that is not theirs.
        lease_id: (job.tasks as { task_id: string }[]).map((t) => `${TENANT}.${jid}.${t.task_id}.notTheSecret`),
        sha: shas,
        seq: ["1"],
        idx: ["0"],
        name: [images[0]!.name],
        "reconstructions.name": ["cameras.json", "images.json", "points.bin", "summary.json"],
        "leases.name": ["two_view_geometries.json", "correspondence_graph.json"],
        level: ["0"],
        x: ["0"],
        y: ["0"],
        z: ["0"],
        file: ["0.bin"],
        point3d_id: ["10", "13"],
        recipe: ["incremental", "global"],
        slug: ["validation", "not_found"],
        kid: [key.json.api_key_id],
        token_id: [token.json.token_id],
      },
      named: {
        dataset_id: [did, ABSENT_ID],
        project_id: [pid],
        recon_id: [rid],
        target_recon_id: [rid],
        artifact_id: artifacts.map((a) => a.artifact_id),
        blob_sha: shas,
        pairs_blob_sha: shas,
      },
    };
    target = fuzzTarget(tenant.key, new Set([jid]));
  }, 60_000);

  it(
    `answers ${REQUESTS} fuzzed requests with no 5xx, every error a problem+json with the status its request calls for, no change from a rejected write, and still answers afterwards`,
    async () => {
      const report = await fuzz(doc, fixture, target, { requests: REQUESTS, seed: SEED });
      console.log(formatReport(report));
      expect(report.requests).toBe(REQUESTS);
      expect(report.serverErrors).toBe(0);
      expect(report.failures.map((f) => f.fault)).toEqual([]);
      expect(report.alive).toBe(true);
    },
    60_000 + REQUESTS * 500,
  );
});

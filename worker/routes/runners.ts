/**
 * @module The runner protocol (our reference-only extension; see runners.md): registration,
 * leasing, heartbeats, events, output blobs, checkpoints and completion, plus the operator
 * routes that issue the tokens of volunteer (pool) runners.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  BlobStored,
  Checkpoint,
  CompleteLeasesRequest,
  CompleteRequest,
  EventsPost,
  FailRequest,
  Id,
  Lease,
  LeaseQuery,
  LeaseCompleted,
  LeaseState,
  LeasesCompleted,
  ReleaseRequest,
  Runner,
  RunnerRegister,
  RunnerToken,
  RunnerTokenIssue,
  Sha256,
  TaskOutputs,
} from "../../protocol";
import type { AppEnv } from "../context";
import { conflict, notFound, payloadTooLarge, problemBody, validation } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { createActionRoute, fieldErrors, newRouter } from "../router";
import { SNIFF_BYTES, blobFacts, blobKey, sha256Hex } from "../services/blobs";
import { oneshotKey } from "../storage/job-rows";
import { serveBytes } from "../services/bytes";
import {
  credentialOf,
  issueRunnerToken,
  keylessRunnerToken,
  leaseScopeOf,
  leaseWaiting,
  leaseStore,
  registerRunner,
  runnerResource,
} from "../services/runners";
import { dispatcher, runnerDispatcher, tenantStore, unwrap } from "../services/stores";
import { completeLease, completeLeases } from "../services/validation";
import type { Context } from "hono";

export const runners = newRouter();

export const LeaseId = z
  .string()
  .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){3}$/, "not a lease id")
  .describe("opaque; the lease's secret: whoever holds it speaks for the lease");
const LeaseParams = z.object({ lease_id: LeaseId });
const RunnerParams = z.object({ rid: Id });
const done = { 204: { description: "done; the lease has ended" } };

const credential = (c: Context<AppEnv>) => credentialOf(c.env, c.req.header("Authorization"), c.var.tenantId);

/** The lease's JobStore and the caller's lease scope, after the scope checks of services/runners. */
async function lease(c: Context<AppEnv>, leaseId: string) {
  const cred = await credential(c);
  const s = cred.scope;
  return {
    ...leaseStore(c.env, s, leaseId),
    scope: leaseScopeOf(s),
    credential: cred,
    /** The runner no longer holds the lease, so its next lease request needs no check. */
    ended: (runnerId: string) => runnerDispatcher(c.env, s, runnerId, cred.tokenId).forgetLeases(runnerId, [leaseId]),
  };
}

runners.openapi(
  createRoute({
    method: "post",
    path: "/v1/runners",
    tags: ["runners"],
    request: jsonBody(RunnerRegister),
    responses: {
      201: json(Runner, "registered; lease with POST /v1/runners/{rid}:lease"),
      ...problemResponses(400, 401, 403, 413, 422, 429),
    },
  }),
  async (c) => {
    const runner = await registerRunner(c.env, await credential(c), c.req.valid("json"));
    return c.json(runner, 201, { Location: `/v1/runners/${runner.runner_id}` });
  },
);

runners.openapi(
  createRoute({
    method: "get",
    path: "/v1/runners/{rid}",
    tags: ["runners"],
    request: { params: RunnerParams },
    responses: { 200: json(Runner, "the runner"), ...problemResponses(401, 403, 404) },
  }),
  async (c) => {
    const { scope: s, tokenId } = await credential(c);
    const rid = c.req.valid("param").rid;
    const row = await runnerDispatcher(c.env, s, rid, tokenId).getRunner(rid);
    if (!row) throw notFound("runner");
    return c.json(runnerResource(row, s, c.env), 200);
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/runners/{rid}:lease",
    tags: ["runners"],
    request: { params: RunnerParams, query: LeaseQuery },
    responses: {
      200: json(Lease, "a task (or a shard of one), its inputs and the lease to hold with heartbeats"),
      204: { description: "no task this runner can compute is ready (within `wait` seconds); ask again" },
      ...problemResponses(401, 403, 404, 409),
    },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const granted = await leaseWaiting(c.env, await credential(c), c.req.valid("param").rid, query.wait * 1000, {
      max: query["x-max_leases"] ?? 1,
      inputsByRef: query["x-inputs_by_ref"],
    });
    // The Lease as the JobStore serialised it (its stored JSON spliced in, not parsed again here).
    return granted ? c.body(granted, 200, { "Content-Type": "application/json" }) : c.body(null, 204);
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/leases/{lease_id}:heartbeat",
    tags: ["runners"],
    request: { params: LeaseParams },
    responses: { 200: json(LeaseState, "held for another TTL; follow the directive"), ...problemResponses(401, 403, 404) },
  }),
  async (c) => {
    const { store, scope: ls } = await lease(c, c.req.valid("param").lease_id);
    return c.json(unwrap(await store.heartbeat(c.req.valid("param").lease_id, ls)), 200);
  },
);

runners.openapi(
  createRoute({
    method: "post",
    path: "/v1/leases/{lease_id}/events",
    tags: ["runners"],
    request: { params: LeaseParams, ...jsonBody(EventsPost) },
    responses: {
      200: json(LeaseState, "appended to the job's log, in order; the lease is held for another TTL"),
      ...problemResponses(401, 403, 404, 409, 413, 422),
    },
  }),
  async (c) => {
    const { lease_id } = c.req.valid("param");
    const { store, scope: ls } = await lease(c, lease_id);
    return c.json(unwrap(await store.postEvents(lease_id, ls, c.req.valid("json").events)), 200);
  },
);

const BlobParams = z.object({ lease_id: LeaseId, sha: Sha256 });

runners.openapi(
  createRoute({
    method: "put",
    path: "/v1/leases/{lease_id}/blobs/{sha}",
    tags: ["runners"],
    request: {
      params: BlobParams,
      body: { content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } }, required: true },
    },
    responses: {
      201: json(BlobStored, "stored content-addressed in the tenant's blob store"),
      ...problemResponses(401, 403, 404, 409, 413, 422),
    },
  }),
  async (c) => {
    const { lease_id, sha } = c.req.valid("param");
    const { store, scope: ls, tenant, job } = await lease(c, lease_id);
    const state = unwrap(await store.heartbeat(lease_id, ls));
    if (state.directive === "teardown") throw conflict("the lease is no longer held");
    const max = c.var.config.maxChunkBytes;
    if (Number(c.req.header("Content-Length") ?? 0) > max) throw payloadTooLarge(`output blobs are limited to ${max} bytes`);
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.byteLength > max) throw payloadTooLarge(`output blobs are limited to ${max} bytes`);
    const actual = await sha256Hex(bytes);
    if (actual !== sha)
      throw validation(`the body hashes to ${actual}`, [{ path: "sha", message: "SHA-256 mismatch", code: "sha_mismatch" }]);
    // A one-shot job's outputs stay beside it, out of the tenant's store, and go with its answer (4.15).
    const ephemeral = await store.ephemeral();
    const key = ephemeral ? oneshotKey(tenant, job, sha) : blobKey(tenant, sha);
    const mediaType = c.req.header("Content-Type") ?? "application/octet-stream";
    if (!(await c.env.BLOBS.head(key))) await c.env.BLOBS.put(key, bytes, { httpMetadata: { contentType: mediaType } });
    if (!ephemeral) {
      // Stage outputs are data, except the images a task derives (projections): those get an image's facts, as uploads do (2.5).
      const facts = mediaType.startsWith("image/")
        ? await blobFacts(bytes.subarray(0, SNIFF_BYTES), key, sha, bytes.byteLength, mediaType)
        : {
            sha,
            r2_key: key,
            size: bytes.byteLength,
            media_type: mediaType,
            width: null,
            height: null,
            focal_length_35mm: null,
            gps_json: null,
          };
      await tenantStore(c.env, tenant).retainJobBlob(job, facts);
    }
    unwrap(await store.recordBlob(lease_id, ls, sha, bytes.byteLength));
    return c.json({ blob_sha: sha, byte_size: bytes.byteLength }, 201);
  },
);

runners.openapi(
  createRoute({
    method: "get",
    path: "/v1/leases/{lease_id}/blobs/{sha}",
    tags: ["runners"],
    request: { params: BlobParams },
    responses: {
      200: {
        content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } },
        description: "an input of the leased task: a dataset image, an upstream output or the checkpoint",
      },
      ...problemResponses(401, 403, 404),
    },
  }),
  async (c) => {
    const { lease_id, sha } = c.req.valid("param");
    const { store, scope: ls, tenant, job } = await lease(c, lease_id);
    // An unknown or ended lease says so, as it does for any other tenant's lease id (isolation.test.ts compares the two).
    if (!(await store.mayRead(lease_id, ls, sha))) throw notFound((await store.leaseActive(lease_id)) ? "blob" : "lease");
    // The tenant's blob, else a one-shot job's own (its request's image, 4.15).
    const blob = await tenantStore(c.env, tenant).getBlob(sha);
    const own = blob ? null : await c.env.BLOBS.head(oneshotKey(tenant, job, sha));
    if (!blob && !own) throw notFound("blob");
    return serveBytes(c.env.BLOBS, c.req.raw, {
      key: blob?.r2_key ?? own!.key,
      size: blob?.size ?? own!.size,
      etag: `"${sha}"`,
      contentType: blob?.media_type ?? own?.httpMetadata?.contentType ?? "application/octet-stream",
      cache: { immutable: true, shared: false },
    });
  },
);

runners.openapi(
  createRoute({
    method: "put",
    path: "/v1/leases/{lease_id}/checkpoint",
    tags: ["runners"],
    request: { params: LeaseParams, ...jsonBody(Checkpoint) },
    responses: { 200: json(LeaseState, "stored; a resumed task is leased with it"), ...problemResponses(401, 403, 404, 409, 422) },
  }),
  async (c) => {
    const { lease_id } = c.req.valid("param");
    const { store, scope: ls } = await lease(c, lease_id);
    return c.json(unwrap(await store.putCheckpoint(lease_id, ls, c.req.valid("json"))), 200);
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/leases/{lease_id}:complete",
    tags: ["runners"],
    request: { params: LeaseParams, ...jsonBody(CompleteRequest) },
    responses: {
      ...done,
      200: json(LeaseCompleted, "done (`x-lease_next`): the lease has ended, and this is the runner's next one, or null"),
      ...problemResponses(401, 403, 404, 409, 422),
    },
  }),
  async (c) => {
    const { lease_id } = c.req.valid("param");
    const { store, scope: ls, ended, tenant, job, credential: cred } = await lease(c, lease_id);
    const body = c.req.valid("json");
    const parsed = TaskOutputs.safeParse(body.outputs_ref);
    if (!parsed.success) {
      // A malformed result fails the task (2.11 rule 3); nothing else of the job is touched.
      const errors = fieldErrors(parsed.error, "outputs_ref");
      await ended(
        unwrap(
          await store.fail(lease_id, ls, {
            error_class: "ValidationError",
            message: "the task's outputs_ref is invalid",
            detail: { errors },
          }),
        ).runner_id,
      );
      throw validation("outputs_ref rejected; the task failed with a validation error", errors);
    }
    // Weighed by who computed it (services/validation.ts); the JobStore has the tenant record the outputs (cache entry, artifacts) before it answers.
    const runnerId = await completeLease(c.env, { tenant, job, leaseId: lease_id, scope: ls, confirmed: cred.confirmed }, parsed.data);
    if (!body["x-lease_next"]) {
      await ended(runnerId);
      return c.body(null, 204);
    }
    // One request ends this lease and leases the next (runners.md "Batching"): one call to the runner's Dispatcher does both.
    // The completion stands whatever the lease attempt meets (say, a runner the Dispatcher forgot): null, and the runner asks again.
    const next = await leaseWaiting(c.env, cred, runnerId, 0, { ended: [lease_id] }).catch(() => null);
    return c.body(`{"x-lease":${next ?? "null"}}`, 200, { "Content-Type": "application/json" });
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/runners/{rid}:complete_leases",
    tags: ["runners"],
    description:
      'Completes several of the runner\'s leases in one request (runners.md "Batching"), each as its own `:complete` would be, and with `x-lease_next` leases its next work (up to `x-max_leases`) in the same request.',
    request: { params: RunnerParams, ...jsonBody(CompleteLeasesRequest) },
    responses: {
      200: json(LeasesCompleted, "each completion's outcome, in order, and the next lease when asked for"),
      ...problemResponses(401, 403, 404, 409, 422),
    },
  }),
  async (c) => {
    const cred = await credential(c);
    const { rid } = c.req.valid("param");
    const body = c.req.valid("json");
    const ids = body.completions.map((e) => e.lease_id);
    const dispatch = runnerDispatcher(c.env, cred.scope, rid, cred.tokenId);
    // The runner the path names must be the caller's, as on :lease (the completions name their leases, not it).
    unwrap(await dispatch.checkRunner(rid, cred.tokenId));
    const refusals = await completeLeases(
      c.env,
      {
        runnerId: rid,
        tenant: typeof cred.scope === "string" ? null : cred.scope.tenant,
        scope: leaseScopeOf(cred.scope),
        confirmed: cred.confirmed,
      },
      body.completions,
    );
    // As on :complete: the completions stand whatever the lease attempt meets (null, and the runner asks again).
    const next = body["x-lease_next"]
      ? await leaseWaiting(c.env, cred, rid, 0, {
          ended: ids,
          max: body["x-max_leases"] ?? 1,
          inputsByRef: body["x-inputs_by_ref"] === true,
        }).catch(() => null)
      : (await dispatch.forgetLeases(rid, ids), null);
    const base = c.var.config?.errorsBase ?? `${new URL(c.req.url).origin}/errors`;
    const completions = ids.map((id, i) => ({
      lease_id: id,
      problem: refusals[i] ? problemBody(refusals[i]!, `/v1/leases/${id}:complete`, base) : null,
    }));
    // The Lease as the JobStore serialised it, spliced in as text: the schema above types the answer, which text cannot (hence `never`).
    const text = `{"completions":${JSON.stringify(completions)},"x-lease":${next ?? "null"}}`;
    return c.body(text, 200, { "Content-Type": "application/json" }) as never;
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/leases/{lease_id}:fail",
    tags: ["runners"],
    request: { params: LeaseParams, ...jsonBody(FailRequest) },
    responses: { ...done, ...problemResponses(401, 403, 404, 409, 422) },
  }),
  async (c) => {
    const { lease_id } = c.req.valid("param");
    const { store, scope: ls, ended } = await lease(c, lease_id);
    await ended(unwrap(await store.fail(lease_id, ls, c.req.valid("json"))).runner_id);
    return c.body(null, 204);
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/leases/{lease_id}:release",
    tags: ["runners"],
    request: { params: LeaseParams, ...jsonBody(ReleaseRequest) },
    responses: { ...done, ...problemResponses(401, 403, 404, 409, 422) },
  }),
  async (c) => {
    const { lease_id } = c.req.valid("param");
    const { store, scope: ls, ended } = await lease(c, lease_id);
    await ended(unwrap(await store.release(lease_id, ls, c.req.valid("json").reason)).runner_id);
    return c.body(null, 204);
  },
);

runners.openapi(
  createRoute({
    method: "post",
    path: "/v1/runner-tokens",
    tags: ["runners"],
    description:
      'A volunteer token for a browser without a key (runners.md "Who may run what"), when the operator allows keyless volunteers (`SVC_POOL_KEYLESS_RUNNERS`): untrusted, it serves only projects that opted in to the pool. One per client address: asking again answers the same token.',
    responses: {
      201: json(RunnerToken, "issued to this address; register with it as `Authorization: Bearer <raw_token>`"),
      200: json(RunnerToken, "this address's token, issued before"),
      ...problemResponses(403),
    },
  }),
  async (c) => {
    // Cloudflare sets CF-Connecting-IP to the client's address (a client cannot choose it).
    const { token, issued } = await keylessRunnerToken(c.env, c.req.header("CF-Connecting-IP") ?? null);
    return c.json(token, issued ? 201 : 200);
  },
);

// ---- operator routes: runner tokens for the volunteer pool ----

runners.openapi(
  createRoute({
    method: "post",
    path: "/v1/admin/runner-tokens",
    tags: ["admin"],
    request: jsonBody(RunnerTokenIssue),
    responses: { 201: json(RunnerToken, "issued; raw_token appears only here"), ...problemResponses(400, 401, 422) },
  }),
  async (c) => c.json(await issueRunnerToken(c.env, c.req.valid("json").name ?? null), 201),
);

runners.openapi(
  createRoute({
    method: "get",
    path: "/v1/admin/runner-tokens",
    tags: ["admin"],
    responses: { 200: json(z.array(RunnerToken), "every runner token, raw_token null"), ...problemResponses(401) },
  }),
  async (c) =>
    c.json(
      (await dispatcher(c.env, "pool").listTokens()).map((t) => ({ ...t, raw_token: null })),
      200,
    ),
);

runners.openapi(
  createRoute({
    method: "delete",
    path: "/v1/admin/runner-tokens/{token_id}",
    tags: ["admin"],
    request: { params: z.object({ token_id: Id }) },
    responses: { 200: json(RunnerToken, "revoked; the token stops working"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const row = await dispatcher(c.env, "pool").revokeToken(c.req.valid("param").token_id);
    if (!row) throw notFound("runner token");
    return c.json({ ...row, raw_token: null }, 200);
  },
);

runners.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/admin/runner-tokens/{token_id}:reinstate",
    tags: ["admin"],
    request: { params: z.object({ token_id: Id }) },
    responses: {
      200: json(
        RunnerToken,
        "the quarantine is lifted (the operator judged it a false alarm): the token works again; its results are replicated as a new token's",
      ),
      ...problemResponses(401, 404),
    },
  }),
  async (c) => {
    const row = await dispatcher(c.env, "pool").reinstate(c.req.valid("param").token_id);
    if (!row) throw notFound("runner token");
    return c.json({ ...row, raw_token: null }, 200);
  },
);

/**
 * @module Deployment settings, read once per request from the Worker's vars (wrangler.toml
 * `[vars]`, `.dev.vars`, or the dashboard), with the defaults docs/operations.md documents.
 */
export interface Config {
  authMode: "none" | "api_key";
  /** When set, `/v1/admin/*` requires `Authorization: Bearer <SVC_ADMIN_TOKEN>` (4.17 says restrict them). */
  adminToken: string | null;
  specUrl: string | null;
  errorsBase: string | null;
  maxUploadBytes: number;
  maxChunkBytes: number;
  maxJsonBytes: number;
  oneshotMaxBytes: number;
  /** How long a one-shot request waits for a runner to lease its task before answering 503 (`SVC_ONESHOT_LEASE_WAIT_SECONDS`). */
  oneshotLeaseWaitMs: number;
  /** How long a one-shot request waits in all for its answer (`SVC_ONESHOT_TIMEOUT_SECONDS`). */
  oneshotTimeoutMs: number;
  uploadLifetimeMs: number;
  /** How long one R2 call may take before the request answers 503 (`SVC_BLOB_TIMEOUT_SECONDS`; services/bucket.ts). */
  blobTimeoutMs: number;
  /** How long a runner's lease lasts without a heartbeat (3.2.3). */
  leaseTtlMs: number;
  /** Interval of the keep-alive comments on SSE streams. */
  sseKeepAliveMs: number;
  /**
   * The deployment's own runners' credential (`sfo_...`): trusted, they lease every tenant's work
   * in both auth modes. `npm start` sets one for the runner it starts. Null: no operator runners.
   */
  operatorRunnerToken: string | null;
  /** Runners one volunteer (`sfr_`) token may register per minute (`SVC_POOL_REGISTRATIONS_PER_MINUTE`); 429 beyond. */
  poolRegistrationsPerMinute: number;
  /**
   * Whether a browser without a key may obtain a volunteer (pool) token for its address
   * (`SVC_POOL_KEYLESS_RUNNERS`, default off): untrusted, serving only projects that opted in.
   */
  poolKeylessRunners: boolean;
  /** How long a signed link to a sealed snapshot file is honoured at least, in `api_key` mode (`SVC_SIGNED_URL_SECONDS`; services/signed-urls.ts). */
  signedUrlSeconds: number;
  /** Dispatcher objects of the pool and the operator scopes (`SVC_DISPATCH_SHARDS`, 1..64; storage/stubs.ts). */
  dispatchShards: number;
}

const int = (v: string | undefined, d: number) => {
  const n = Number(v);
  return v !== undefined && v !== "" && Number.isSafeInteger(n) && n > 0 ? n : d;
};

export function readConfig(env: Env): Config {
  const vars = env as unknown as Record<string, string | undefined>;
  return {
    authMode: vars.SVC_AUTH_MODE === "api_key" ? "api_key" : "none",
    adminToken: vars.SVC_ADMIN_TOKEN || null,
    specUrl: vars.SVC_SPEC_URL || null,
    errorsBase: vars.SVC_ERRORS_BASE || null,
    maxUploadBytes: int(vars.SVC_MAX_UPLOAD_BYTES, 2 * 1024 ** 3),
    maxChunkBytes: int(vars.SVC_MAX_CHUNK_BYTES, 100 * 1024 ** 2),
    maxJsonBytes: int(vars.SVC_MAX_JSON_BYTES, 1024 ** 2),
    oneshotMaxBytes: int(vars.SVC_ONESHOT_MAX_REQUEST_BYTES, 50 * 1024 ** 2),
    oneshotLeaseWaitMs: int(vars.SVC_ONESHOT_LEASE_WAIT_SECONDS, 10) * 1000,
    oneshotTimeoutMs: int(vars.SVC_ONESHOT_TIMEOUT_SECONDS, 120) * 1000,
    uploadLifetimeMs: int(vars.SVC_UPLOAD_LIFETIME_SECONDS, 24 * 3600) * 1000,
    blobTimeoutMs: int(vars.SVC_BLOB_TIMEOUT_SECONDS, 60) * 1000,
    leaseTtlMs: int(vars.SVC_LEASE_TTL_SECONDS, 30) * 1000,
    sseKeepAliveMs: int(vars.SVC_SSE_KEEPALIVE_SECONDS, 15) * 1000,
    poolRegistrationsPerMinute: int(vars.SVC_POOL_REGISTRATIONS_PER_MINUTE, 10),
    poolKeylessRunners: ["true", "1"].includes(vars.SVC_POOL_KEYLESS_RUNNERS ?? ""),
    signedUrlSeconds: int(vars.SVC_SIGNED_URL_SECONDS, 3600),
    dispatchShards: Math.min(64, int(vars.SVC_DISPATCH_SHARDS, 4)),
    operatorRunnerToken: /^sfo_[A-Za-z0-9_-]{16,}$/.test(vars.SVC_OPERATOR_RUNNER_TOKEN ?? "") ? vars.SVC_OPERATOR_RUNNER_TOKEN! : null,
  };
}

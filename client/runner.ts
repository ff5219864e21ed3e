/**
 * @module The runner protocol (worker/routes/runners.md): register, lease, heartbeat, post
 * events, read inputs and write outputs as content-addressed blobs, checkpoint, seal snapshots,
 * complete, fail, release. What a compute runner (browser-runtime/runner) speaks.
 */
import { type Api, createApi, unwrap } from "./api.js";
import { type Problem, ProblemError, Transport, type TransportOptions } from "./http.js";
import type { components, input } from "./schema.js";
import { sha256Hex } from "./sha256.js";

type Schemas = components["schemas"];
export type Runner = Schemas["Runner"];
export type RunnerToken = Schemas["RunnerToken"];
export type RunnerRegister = Schemas["RunnerRegister"];
export type Lease = Schemas["Lease"];
export type LeaseState = Schemas["LeaseState"];
export type RunnerEvent = Schemas["RunnerEvent"];
export type Checkpoint = Schemas["Checkpoint"];
export type SnapshotSeal = Schemas["SnapshotSeal"];
export type SnapshotSealed = Schemas["SnapshotSealed"];
export type TaskOutputs = Schemas["TaskOutputs"];
/** As a request takes it: fields with a default may be left out. */
export type DerivedDatasetRegister = input.components["schemas"]["DerivedDatasetRegister"];
export type Dataset = Schemas["Dataset"];
export type ServiceVersion = Schemas["VersionResponse"];
export type ReconstructionFileName = "two_view_geometries.json" | "correspondence_graph.json";

const lease = (lease_id: string) => ({ path: { lease_id } });

/**
 * The leases of one answer, each whole: the Lease, then those of its `x-more_leases` (each a Lease
 * of its own), a further lease's inputs by reference (`{"x-inputs_of": <lease_id>}`, runners.md
 * "Inputs by reference") filled back with the inputs of the earlier lease it names, shared, not copied.
 * A reference to no earlier lease of the answer is the service's error: thrown (the leases it
 * granted expire and are leased again).
 */
export const unbatched = (first: Lease | null): Lease[] => {
  if (!first) return [];
  const { "x-more_leases": more = [], ...one } = first;
  const inputs = new Map<string, Lease["inputs"]>([[one.lease_id, one.inputs]]);
  const leases: Lease[] = [one];
  for (const lease of more) {
    const ref = (lease.inputs as { "x-inputs_of"?: unknown })["x-inputs_of"];
    const whole = ref === undefined ? (lease.inputs as Lease["inputs"]) : inputs.get(String(ref));
    if (!whole)
      throw new Error(`lease ${lease.lease_id} names the inputs of lease ${String(ref)}, which is not an earlier lease of the same answer`);
    inputs.set(lease.lease_id, whole);
    leases.push({ ...lease, inputs: whole });
  }
  return leases;
};

/**
 * Every call goes through the client's transport: a network failure is retried, and so is a
 * transient 502/503/504 where the protocol makes a repeat harmless (reads, PUTs of content-addressed
 * blobs and checkpoints, heartbeats, a seal re-sent under the same lease).
 */
export class RunnerClient {
  private readonly transport: Transport;
  private readonly api: Api;
  /** The keyless volunteer token the service gave this runner (`register` with `keyless`), used from then on. */
  private volunteer: RunnerToken | null = null;

  /** Whether multi-shard leases are asked with their inputs by reference (`x-inputs_by_ref`); `unbatched` fills them back. */
  private readonly inputsByRef: boolean;

  /**
   * A runner's own transport (`{baseUrl, authorization}`), or a client's. `inputsByRef: false` asks
   * for every further lease whole, as runners that predate `x-inputs_by_ref` do (the Leases it
   * answers are whole either way).
   */
  constructor(transport: Transport | TransportOptions, { inputsByRef = true }: { inputsByRef?: boolean } = {}) {
    this.inputsByRef = inputsByRef;
    this.transport =
      transport instanceof Transport
        ? transport
        : new Transport({
            ...transport,
            authorization: () =>
              this.volunteer
                ? `Bearer ${this.volunteer.raw_token}`
                : typeof transport.authorization === "function"
                  ? transport.authorization()
                  : transport.authorization,
          });
    this.api = createApi(this.transport);
  }

  /**
   * Where this runner's requests go and its credential now, for another thread to send heartbeats
   * with (the runner's keep-alive worker); null where a relative origin has no page to resolve against.
   */
  target(): { baseUrl: string; authorization: string | null } | null {
    if (!this.transport.baseUrl && typeof location === "undefined") return null;
    return { baseUrl: this.transport.baseUrl, authorization: this.transport.authorization() };
  }

  /** The service's `/version`: what it runs, and the runner protocol it speaks (`x-runner_protocol`). */
  serviceVersion(): Promise<ServiceVersion> {
    return unwrap(this.api.GET("/version"));
  }

  /** The runtime-version map the service expects runners of this build to report. */
  async serviceRuntimeVersions(): Promise<Record<string, string>> {
    return (await this.serviceVersion()).backend?.runtime_versions ?? {};
  }

  /**
   * Registers the runner. With `keyless`, a runner without a credential that the service refuses
   * (401: `api_key` mode) asks for a volunteer token of its own (`POST /v1/runner-tokens`, when the
   * operator allows keyless volunteers) and registers with it, in the pool (untrusted; it serves
   * only projects that opted in). Answers the service's refusal of the token when it does not.
   */
  async register(body: RunnerRegister, { keyless = false } = {}): Promise<Runner> {
    try {
      return await unwrap(this.api.POST("/v1/runners", { body }));
    } catch (e) {
      if (!keyless || this.transport.authorization() || !(e instanceof ProblemError && e.status === 401)) throw e;
      this.volunteer = await this.keylessToken();
      return unwrap(this.api.POST("/v1/runners", { body }));
    }
  }

  /** This address's keyless volunteer token (runners.md "Who may run what"); 403 when the operator allows none. */
  keylessToken(): Promise<RunnerToken> {
    return unwrap(this.api.POST("/v1/runner-tokens", {}));
  }

  /**
   * The next task (or shard of one) this runner can compute, or null when none is ready (204) within
   * `waitSeconds`: the service holds the request open that long (long poll, at most 25 s).
   */
  async lease(runnerId: string, waitSeconds = 0): Promise<Lease | null> {
    return (await this.leaseBatch(runnerId, waitSeconds, 1))[0] ?? null;
  }

  /**
   * Up to `max` tasks or shards in one request (`x-max_leases`, runners.md "Batching"), each its
   * own lease; none when nothing is ready within `waitSeconds`. With `max` 1, the plain lease request.
   */
  async leaseBatch(runnerId: string, waitSeconds = 0, max = 1): Promise<Lease[]> {
    const byRef = this.inputsByRef ? ({ "x-inputs_by_ref": "true" } as const) : {};
    const query = max > 1 ? { wait: waitSeconds, "x-max_leases": max, ...byRef } : { wait: waitSeconds };
    const leased = await unwrap(this.api.POST("/v1/runners/{rid}:lease", { params: { path: { rid: runnerId }, query } }));
    // openapi-fetch widens tuples (a pose's translation) to arrays in what it answers: the schema's type is the exact one.
    return unbatched((leased as Lease | undefined) ?? null);
  }

  heartbeat(leaseId: string): Promise<LeaseState> {
    return unwrap(this.api.POST("/v1/leases/{lease_id}:heartbeat", { params: lease(leaseId), fetch: this.transport.sendIdempotent }));
  }

  postEvents(leaseId: string, events: RunnerEvent[]): Promise<LeaseState> {
    return unwrap(this.api.POST("/v1/leases/{lease_id}/events", { params: lease(leaseId), body: { events } }));
  }

  /** An input of the leased task (an image, an upstream output, the checkpoint). */
  async readBlob(leaseId: string, sha: string): Promise<Uint8Array> {
    const bytes = await unwrap(
      this.api.GET("/v1/leases/{lease_id}/blobs/{sha}", { params: { path: { lease_id: leaseId, sha } }, parseAs: "arrayBuffer" }),
    );
    return new Uint8Array(bytes);
  }

  /**
   * Stores an output; answers its content address. An image goes with its media type, so the
   * service reads its size; anything else as octet-stream (a JSON type would meet the service's
   * JSON request limit, 1 MiB, which an images.json output can pass).
   */
  async writeBlob(leaseId: string, bytes: Uint8Array, mediaType?: string): Promise<{ blob_sha: string; byte_size: number }> {
    const sha = await sha256Hex(bytes);
    await unwrap(
      this.api.PUT("/v1/leases/{lease_id}/blobs/{sha}", {
        params: { path: { lease_id: leaseId, sha } },
        headers: { "Content-Type": mediaType?.startsWith("image/") ? mediaType : "application/octet-stream" },
        body: bytes,
        bodySerializer: (b) => b,
      }),
    );
    return { blob_sha: sha, byte_size: bytes.byteLength };
  }

  putCheckpoint(leaseId: string, checkpoint: Checkpoint): Promise<LeaseState> {
    return unwrap(this.api.PUT("/v1/leases/{lease_id}/checkpoint", { params: lease(leaseId), body: checkpoint }));
  }

  /** Seals the next snapshot of the job's reconstruction from files uploaded under the lease. */
  sealSnapshot(leaseId: string, seal: SnapshotSeal): Promise<SnapshotSealed> {
    return unwrap(
      this.api.POST("/v1/leases/{lease_id}/snapshots", { params: lease(leaseId), body: seal, fetch: this.transport.sendIdempotent }),
    );
  }

  /** Sets a reconstruction-level file (two_view_geometries.json, correspondence_graph.json). */
  async putReconstructionFile(leaseId: string, name: ReconstructionFileName, file: { blob_sha: string; byte_size: number }): Promise<void> {
    await unwrap(
      this.api.PUT("/v1/leases/{lease_id}/reconstruction-files/{name}", { params: { path: { lease_id: leaseId, name } }, body: file }),
    );
  }

  /** Registers the dataset the task derives (4.14 rule 4); a repeat answers the dataset registered first. */
  registerDataset(leaseId: string, body: DerivedDatasetRegister): Promise<{ dataset: Dataset; reused: boolean }> {
    return unwrap(this.api.POST("/v1/leases/{lease_id}/datasets", { params: lease(leaseId), body, fetch: this.transport.sendIdempotent }));
  }

  /**
   * Completes the lease. With `leaseNext` the same request leases the runner's next task or shard
   * (the `x-lease_next` extension, runners.md "Batching"): answers it, or null when nothing is
   * ready now (then ask `lease` as usual); without, answers null.
   */
  async complete(leaseId: string, outputs: TaskOutputs, { leaseNext = false } = {}): Promise<Lease | null> {
    const answer = await unwrap(
      this.api.POST("/v1/leases/{lease_id}:complete", {
        params: lease(leaseId),
        body: leaseNext ? { outputs_ref: outputs, "x-lease_next": true } : { outputs_ref: outputs },
      }),
    );
    // openapi-fetch widens tuples to arrays in what it answers (as in `lease`): the schema's type is the exact one.
    return ((answer as { "x-lease"?: Lease | null } | undefined)?.["x-lease"] as Lease | undefined) ?? null;
  }

  /**
   * Completes several of the runner's leases in one request (runners.md "Batching"); with
   * `leaseNext` the same request leases its next work, up to `maxLeases`. Answers each completion's
   * problem (null: completed), in order, and the leases that came along.
   */
  async completeLeases(
    runnerId: string,
    completions: { lease_id: string; outputs: TaskOutputs }[],
    { leaseNext = false, maxLeases = 1 } = {},
  ): Promise<{ problems: (Problem | null)[]; next: Lease[] }> {
    const answer = await unwrap(
      this.api.POST("/v1/runners/{rid}:complete_leases", {
        params: { path: { rid: runnerId } },
        body: {
          completions: completions.map((c) => ({ lease_id: c.lease_id, outputs_ref: c.outputs })),
          ...(leaseNext ? { "x-lease_next": true, "x-max_leases": maxLeases } : {}),
          ...(leaseNext && maxLeases > 1 && this.inputsByRef ? { "x-inputs_by_ref": true } : {}),
        },
      }),
    );
    return { problems: answer.completions.map((c) => c.problem), next: unbatched(answer["x-lease"] as Lease | null) };
  }

  async fail(leaseId: string, error: { error_class: string; message: string; detail: Record<string, unknown> | null }): Promise<void> {
    await unwrap(this.api.POST("/v1/leases/{lease_id}:fail", { params: lease(leaseId), body: error }));
  }

  async release(leaseId: string, reason: string): Promise<void> {
    await unwrap(this.api.POST("/v1/leases/{lease_id}:release", { params: lease(leaseId), body: { reason } }));
  }
}

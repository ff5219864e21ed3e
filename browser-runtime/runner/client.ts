/**
 * @module The runner protocol over HTTP (worker/routes/runners.ts): register, lease, heartbeat,
 * post events, read inputs and write outputs as content-addressed blobs, checkpoint, complete,
 * fail, release. Plain `fetch`, so it runs in browser tabs, Web Workers, Node and workerd tests.
 */
import type { Checkpoint, Dataset, DerivedDatasetRegister, Lease, LeaseState, ReconstructionFileName, Runner, RunnerEvent, RunnerRegister, SnapshotSeal, TaskOutputs } from "../../protocol";

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** How many times a request is sent again after a failure that says nothing about the request itself. */
const RETRIES = 3;

/**
 * Answers of the infrastructure in front of the service (workerd or Cloudflare's edge: an isolate
 * or Durable Object restarting, an overloaded proxy), never a verdict of the service on the request.
 */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

export interface RunnerClientOptions {
  /** The service's origin, e.g. `http://127.0.0.1:8787` ("" for same-origin pages). */
  base: string;
  /** `Bearer <API key>` in api_key mode, or `Bearer <runner token>` for a volunteer (pool) runner. */
  authorization?: string | undefined;
  fetch?: FetchLike;
}

/** A non-2xx answer: the problem+json body's title and detail, with its status. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
  constructor(readonly status: number, readonly problem: { title?: string; detail?: string; type?: string } | null, what: string) {
    super(`${what}: ${status} ${problem?.title ?? ""}${problem?.detail ? `: ${problem.detail}` : ""}`);
  }
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as BufferSource);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * One request, sent again when the connection failed before any answer (a network error, e.g.
 * a kept-alive socket the server had just closed: such a request never reached the service) and,
 * when `idempotent`, when the infrastructure answered with a transient 502/503/504 (sending it
 * twice changes nothing). Backs off 200 ms, 400 ms, 800 ms, or as `Retry-After` says (up to 5 s).
 */
export async function sendRetrying(fetchFn: FetchLike, url: string, init: RequestInit, idempotent = false): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetchFn(url, init);
    } catch (e) {
      if (!(e instanceof TypeError) || attempt >= RETRIES) throw e;
      await sleep(200 * 2 ** attempt);
      continue;
    }
    if (!idempotent || !TRANSIENT_STATUSES.has(res.status) || attempt >= RETRIES) return res;
    await res.body?.cancel();
    const retryAfter = Number(res.headers.get("Retry-After"));
    await sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, 5000) : 200 * 2 ** attempt);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class RunnerClient {
  private readonly fetchFn: FetchLike;

  constructor(private readonly o: RunnerClientOptions) {
    this.fetchFn = o.fetch ?? ((input, init) => fetch(input, init));
  }

  /**
   * `idempotent`: the protocol makes a repeat harmless (reads, PUTs of content-addressed blobs and
   * checkpoints, heartbeats, a seal re-sent under the same lease), so a transient answer is retried.
   */
  private async call(method: string, path: string, body?: unknown, ok: number[] = [200], idempotent = method === "GET" || method === "PUT", contentType = "application/octet-stream"): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.o.authorization) headers.Authorization = this.o.authorization;
    let payload: BodyInit | undefined;
    if (body instanceof Uint8Array) {
      payload = body as BodyInit;
      headers["Content-Type"] = contentType;
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["Content-Type"] = "application/json";
    }
    const res = await sendRetrying(this.fetchFn, `${this.o.base}${path}`, { method, headers, body: payload }, idempotent);
    if (!ok.includes(res.status)) {
      const problem = /json/.test(res.headers.get("Content-Type") ?? "") ? await res.json().catch(() => null) : null;
      throw new ProtocolError(res.status, problem as ProtocolError["problem"], `${method} ${path}`);
    }
    return res;
  }

  /** The runtime-version map the service expects runners of this build to report. */
  async serviceRuntimeVersions(): Promise<Record<string, string>> {
    const v = (await (await this.call("GET", "/version")).json()) as { backend: { runtime_versions: Record<string, string> } | null };
    return v.backend?.runtime_versions ?? {};
  }

  async register(body: RunnerRegister): Promise<Runner> {
    return (await (await this.call("POST", "/v1/runners", body, [201])).json()) as Runner;
  }

  /** The next task this runner can compute, or null when none is ready. */
  async lease(runnerId: string): Promise<Lease | null> {
    const res = await this.call("POST", `/v1/runners/${runnerId}:lease`, undefined, [200, 204]);
    return res.status === 204 ? null : ((await res.json()) as Lease);
  }

  async heartbeat(leaseId: string): Promise<LeaseState> {
    return (await (await this.call("POST", `/v1/leases/${leaseId}:heartbeat`, undefined, [200], true)).json()) as LeaseState;
  }

  async postEvents(leaseId: string, events: RunnerEvent[]): Promise<LeaseState> {
    return (await (await this.call("POST", `/v1/leases/${leaseId}/events`, { events })).json()) as LeaseState;
  }

  /** An input of the leased task (an image, an upstream output, the checkpoint). */
  async readBlob(leaseId: string, sha: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.call("GET", `/v1/leases/${leaseId}/blobs/${sha}`)).arrayBuffer());
  }

  /** Stores an output (an image media type has the service read its size); answers its content address. */
  async writeBlob(leaseId: string, bytes: Uint8Array, mediaType?: string): Promise<{ blob_sha: string; byte_size: number }> {
    const sha = await sha256Hex(bytes);
    await this.call("PUT", `/v1/leases/${leaseId}/blobs/${sha}`, bytes, [201], true, mediaType);
    return { blob_sha: sha, byte_size: bytes.byteLength };
  }

  async putCheckpoint(leaseId: string, checkpoint: Checkpoint): Promise<LeaseState> {
    return (await (await this.call("PUT", `/v1/leases/${leaseId}/checkpoint`, checkpoint)).json()) as LeaseState;
  }

  /** Seals the next snapshot of the job's reconstruction from files uploaded under the lease. */
  async sealSnapshot(leaseId: string, seal: SnapshotSeal): Promise<{ recon_id: string; snapshot_seq: number }> {
    return (await (await this.call("POST", `/v1/leases/${leaseId}/snapshots`, seal, [200, 201], true)).json()) as { recon_id: string; snapshot_seq: number };
  }

  /** Sets a reconstruction-level file (two_view_geometries.json, correspondence_graph.json). */
  async putReconstructionFile(leaseId: string, name: ReconstructionFileName, file: { blob_sha: string; byte_size: number }): Promise<void> {
    await this.call("PUT", `/v1/leases/${leaseId}/reconstruction-files/${name}`, file, [204]);
  }

  /** Registers the dataset the task derives (4.14 rule 4); a repeat answers the dataset registered first. */
  async registerDataset(leaseId: string, body: DerivedDatasetRegister): Promise<{ dataset: Dataset; reused: boolean }> {
    return (await (await this.call("POST", `/v1/leases/${leaseId}/datasets`, body, [200, 201], true)).json()) as { dataset: Dataset; reused: boolean };
  }

  async complete(leaseId: string, outputs: TaskOutputs): Promise<void> {
    await this.call("POST", `/v1/leases/${leaseId}:complete`, { outputs_ref: outputs }, [204]);
  }

  async fail(leaseId: string, error: { error_class: string; message: string; detail: Record<string, unknown> | null }): Promise<void> {
    await this.call("POST", `/v1/leases/${leaseId}:fail`, error, [204]);
  }

  async release(leaseId: string, reason: string): Promise<void> {
    await this.call("POST", `/v1/leases/${leaseId}:release`, { reason }, [204]);
  }
}

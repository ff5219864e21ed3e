/**
 * @module The runner protocol over HTTP (worker/routes/runners.ts): register, lease, heartbeat,
 * post events, read inputs and write outputs as content-addressed blobs, checkpoint, complete,
 * fail, release. Plain `fetch`, so it runs in browser tabs, Web Workers, Node and workerd tests.
 */
import type { Checkpoint, Lease, LeaseState, ReconstructionFileName, Runner, RunnerEvent, RunnerRegister, SnapshotSeal, TaskOutputs } from "../../protocol";

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** How many times a request that failed on the network is sent again. */
const NETWORK_RETRIES = 3;

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
 * a kept-alive socket the server had just closed): such a request never reached the service.
 */
export async function sendRetryingNetworkFailures(fetchFn: FetchLike, url: string, init: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetchFn(url, init);
    } catch (e) {
      if (!(e instanceof TypeError) || attempt >= NETWORK_RETRIES) throw e;
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
  }
}

export class RunnerClient {
  private readonly fetchFn: FetchLike;

  constructor(private readonly o: RunnerClientOptions) {
    this.fetchFn = o.fetch ?? ((input, init) => fetch(input, init));
  }

  private async call(method: string, path: string, body?: unknown, ok: number[] = [200]): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.o.authorization) headers.Authorization = this.o.authorization;
    let payload: BodyInit | undefined;
    if (body instanceof Uint8Array) {
      payload = body as BodyInit;
      headers["Content-Type"] = "application/octet-stream";
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["Content-Type"] = "application/json";
    }
    const res = await this.send(`${this.o.base}${path}`, { method, headers, body: payload });
    if (!ok.includes(res.status)) {
      const problem = /json/.test(res.headers.get("Content-Type") ?? "") ? await res.json().catch(() => null) : null;
      throw new ProtocolError(res.status, problem as ProtocolError["problem"], `${method} ${path}`);
    }
    return res;
  }

  private send(url: string, init: RequestInit): Promise<Response> {
    return sendRetryingNetworkFailures(this.fetchFn, url, init);
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
    return (await (await this.call("POST", `/v1/leases/${leaseId}:heartbeat`)).json()) as LeaseState;
  }

  async postEvents(leaseId: string, events: RunnerEvent[]): Promise<LeaseState> {
    return (await (await this.call("POST", `/v1/leases/${leaseId}/events`, { events })).json()) as LeaseState;
  }

  /** An input of the leased task (an image, an upstream output, the checkpoint). */
  async readBlob(leaseId: string, sha: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.call("GET", `/v1/leases/${leaseId}/blobs/${sha}`)).arrayBuffer());
  }

  /** Stores an output; answers its content address. */
  async writeBlob(leaseId: string, bytes: Uint8Array): Promise<{ blob_sha: string; byte_size: number }> {
    const sha = await sha256Hex(bytes);
    await this.call("PUT", `/v1/leases/${leaseId}/blobs/${sha}`, bytes, [201]);
    return { blob_sha: sha, byte_size: bytes.byteLength };
  }

  async putCheckpoint(leaseId: string, checkpoint: Checkpoint): Promise<LeaseState> {
    return (await (await this.call("PUT", `/v1/leases/${leaseId}/checkpoint`, checkpoint)).json()) as LeaseState;
  }

  /** Seals the next snapshot of the job's reconstruction from files uploaded under the lease. */
  async sealSnapshot(leaseId: string, seal: SnapshotSeal): Promise<{ recon_id: string; snapshot_seq: number }> {
    return (await (await this.call("POST", `/v1/leases/${leaseId}/snapshots`, seal, [200, 201])).json()) as { recon_id: string; snapshot_seq: number };
  }

  /** Sets a reconstruction-level file (two_view_geometries.json, correspondence_graph.json). */
  async putReconstructionFile(leaseId: string, name: ReconstructionFileName, file: { blob_sha: string; byte_size: number }): Promise<void> {
    await this.call("PUT", `/v1/leases/${leaseId}/reconstruction-files/${name}`, file, [204]);
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

/**
 * @module Heartbeats from a thread the engine never blocks (issue 17: a map task keeps its lease
 * while the mapper runs). The runner's own thread runs the executors, and some of their engine
 * calls are single synchronous calls that can outlast a lease's TTL: the global mapper's
 * positioning and refinement, a bundle adjustment of a merged model. A timer on that thread waits
 * for them, the lease expires and the task is leased again from its start. So each runner has a
 * keep-alive worker (a worker thread in Node, a nested dedicated Web Worker in a browser: the host
 * starts it, node-host.ts and browser-host.ts) that heartbeats the runner's open leases on its own
 * timer. Its answers (a directive, a lost lease) are messages the runner reads once its thread is
 * free again, at the executor's next cancel point.
 */
import * as Comlink from "comlink";
import { type LeaseState, ProblemError, RunnerClient } from "../../../client/index";
import type { WorkerHandle } from "../pool/engine-pool";

/** What a heartbeat of the keep-alive said about a lease; `at` is when (ms since the epoch). */
export type KeepAliveAnswer = { at: number } & ({ directive: LeaseState["directive"] } | { lost: true });

/** Where the keep-alive sends heartbeats: the service's origin and the runner's credential. */
export interface KeepAliveTarget {
  baseUrl: string;
  authorization: string | null;
}

export interface KeepAliveWorkerApi {
  /** Heartbeats `leaseId` every `intervalMs` until released (or lost), telling `answer` each outcome. */
  hold(leaseId: string, target: KeepAliveTarget, intervalMs: number, answer: (a: KeepAliveAnswer) => void): void;
  release(leaseId: string): void;
}

/** Serves the keep-alive on `endpoint` (default: this Web Worker's own scope). */
export function serveKeepAlive(endpoint?: Comlink.Endpoint): void {
  const timers = new Map<string, ReturnType<typeof setInterval>>();
  const api: KeepAliveWorkerApi = {
    hold(leaseId, target, intervalMs, answer) {
      api.release(leaseId);
      const client = new RunnerClient({ baseUrl: target.baseUrl, authorization: target.authorization ?? undefined });
      const beat = async () => {
        try {
          const { directive } = await client.heartbeat(leaseId);
          answer({ at: Date.now(), directive });
        } catch (e) {
          // 404/409: the lease is gone (expired and reclaimed, or the job deleted). Anything else
          // (the service unreachable) is the runner's own heartbeats' concern: they go on.
          if (e instanceof ProblemError && (e.status === 404 || e.status === 409)) {
            api.release(leaseId);
            answer({ at: Date.now(), lost: true });
          }
        }
      };
      timers.set(
        leaseId,
        setInterval(() => void beat(), intervalMs),
      );
    },
    release(leaseId) {
      clearInterval(timers.get(leaseId));
      timers.delete(leaseId);
    },
  };
  Comlink.expose(api, endpoint);
}

/**
 * The runner's side: starts the host's keep-alive worker on first use and holds leases in it.
 * A worker that fails to start or dies leaves the runner's own heartbeats in charge.
 */
export class KeepAlive {
  private worker: { handle: WorkerHandle; api: Comlink.Remote<KeepAliveWorkerApi> } | null = null;

  constructor(private readonly spawn: () => WorkerHandle) {}

  hold(leaseId: string, target: KeepAliveTarget, intervalMs: number, answer: (a: KeepAliveAnswer) => void): void {
    if (!this.worker) {
      const handle = this.spawn();
      this.worker = { handle, api: Comlink.wrap<KeepAliveWorkerApi>(handle.endpoint) };
      handle.onExit(() => (this.worker = null));
    }
    this.worker.api.hold(leaseId, target, intervalMs, Comlink.proxy(answer)).catch(() => {});
  }

  release(leaseId: string): void {
    this.worker?.api.release(leaseId).catch(() => {});
  }

  /** Ends the worker (the runner stopping or torn down); a later hold starts a new one. */
  end(): void {
    this.worker?.handle.terminate();
    this.worker = null;
  }
}

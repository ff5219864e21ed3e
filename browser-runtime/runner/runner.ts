/**
 * @module The runner: registers with what it can compute, leases tasks, holds each lease with
 * heartbeats, runs the task's executor and completes, fails or releases it. One implementation
 * for every host (a browser tab's Web Worker, headless Chromium, Node); the host supplies the
 * engine, the engine pool (one worker per core, pool/engine-pool.ts), the decoder and the blob
 * cache. A runner that vanishes costs at most its leases: the service reclaims each when the
 * heartbeats stop (spec 3.2.3).
 */
import type { Engine } from "../../engine-wasm/ts/engine";
import type { Projector } from "../gpu/projection-gpu";
import type { SiftStages } from "../gpu/select";
import {
  type Lease,
  type LeaseDirective,
  type Runner as RunnerResource,
  type RunnerAbilities,
  type TaskKind,
  MAX_LEASES,
  runnerProtocolMismatch,
} from "../../protocol";
import type { DecodedImage } from "../stages/extract";
import type { VideoFrames } from "../decode/video-browser";
import type { BlobCache } from "./blob-cache";
import type { EnginePool, WorkerHandle } from "./pool/engine-pool";
import { KeepAlive } from "./keep-alive/keep-alive";
import { type DerivedDatasetRegister, type Problem, ProblemError, type RunnerClient, type TaskOutputs } from "../../client/index";
import { EXECUTORS } from "./executors";
import { EventQueue, type TaskContext, TaskStopped } from "./task-context";

export interface RunnerHost {
  name: string;
  abilities: RunnerAbilities;
  runtimeVersions: Record<string, string>;
  engine(): Promise<Engine>;
  /** Engines for per-item work, one per core (pool/engine-pool.ts); released whenever the runner has no task. */
  engines: EnginePool;
  /** SIFT and matching on the faster path of this device (gpu/select.ts), chosen once; the WASM path computes on `engines`. */
  sift(): Promise<SiftStages>;
  decode(bytes: Uint8Array, options: { respectExifOrientation: boolean }): Promise<DecodedImage>;
  encode(image: DecodedImage, format: "jpeg" | "png", quality: number): Promise<Uint8Array>;
  /** Panorama projections on the faster path of this device (gpu/projection-gpu.ts), chosen once. */
  projector(): Promise<Projector>;
  /** Video frames (WebCodecs): only hosts that have a decoder offer `frame_extract`. */
  videoFrames?: VideoFrames;
  cache: BlobCache;
  /** Force cancel: drop GPU devices and workers (the host may restart itself). */
  teardown?(): Promise<void> | void;
  /** What the host can tell of its memory, logged with each completed task (Node: node-host.ts). */
  memory?(): Promise<HostMemory>;
  /** Starts the runner's keep-alive worker, which heartbeats its leases while an engine call blocks its thread (keep-alive/keep-alive.ts). */
  keepAlive?(): WorkerHandle;
}

/** A host's memory after a task: the runner thread's engine heap (never shrinks), the process's resident set and its peak. */
export interface HostMemory {
  engine_heap_bytes: number;
  rss_bytes: number;
  peak_rss_bytes: number;
}

const mib = (bytes: number) => `${Math.round(bytes / 1024 ** 2)} MiB`;

export type RunnerStatus =
  | { state: "idle" }
  | { state: "working"; task_id: string; kind: TaskKind; job_id: string }
  /**
   * `refused`: the service refused the runner's credential (revoked, or quarantined for a wrong result: runners.md "Trust"),
   * or now speaks another major version of the runner protocol.
   */
  | { state: "stopped"; refused?: string };

export interface RunnerOptions {
  /** Stages to offer; default every stage this build has an executor for. */
  stages?: TaskKind[];
  /**
   * Without a credential, in `api_key` mode: register as a keyless volunteer (a pool token for this
   * address, when the operator allows it: client/runner.ts `register`).
   */
  keyless?: boolean;
  /** How long one lease request is held open while nothing is ready (long poll, at most 25 s). */
  leaseWaitSeconds?: number;
  onStatus?: (s: RunnerStatus) => void;
  onLog?: (line: string) => void;
}

/** How often queued events are flushed while a task runs. */
const FLUSH_MS = 1000;
/**
 * A shard lease's bare heartbeat (nothing queued) at most this often, within the service's interval: a
 * shard is seconds of work whose progress the service counts itself (runners.md "Shards"), and a
 * heartbeat a second per lease cost the service and the runner's lane more than its shards' results
 * did (issue 17: `npm run bench -- scale --cpu`).
 */
const SHARD_HEARTBEAT_MS = 5000;
/** A lease request waits this long for work before the service answers "nothing" (long poll). */
const LEASE_WAIT_SECONDS = 25;
/** Pause after a failed lease request (the service unreachable), so a runner never spins. */
const RETRY_MS = 2000;
/**
 * Refusals of a completion after which the lease is over (runners.md "Routes", "Trust"): 422 failed
 * the task, or discarded a volunteer's result and queued its shard again; 404 and 409, the lease is
 * not (or no longer) the runner's. Any other failure of the completion (5xx, the network) leaves
 * the lease held, so the runner `:fail`s it.
 */
const LEASE_ENDED = new Set([404, 409, 422]);

/** The service speaks another major version of the runner protocol: this runner must not work for it. */
export class RunnerProtocolMismatch extends Error {
  override name = "RunnerProtocolMismatch";
}

export class Runner {
  resource: RunnerResource | null = null;
  /** The leases the last completion brought along (`x-lease_next`), taken before asking for more. */
  private following: Lease[] = [];
  private running = false;
  private wake: (() => void) | null = null;
  private readonly keepAlive: KeepAlive | null;

  constructor(
    private readonly client: RunnerClient,
    private readonly host: RunnerHost,
    private readonly o: RunnerOptions = {},
  ) {
    this.keepAlive = host.keepAlive ? new KeepAlive(() => host.keepAlive!()) : null;
  }

  /** Stages this runner computes. */
  get stages(): TaskKind[] {
    // A stage needs what its executor calls on the host: video frames need a video decoder.
    return this.o.stages ?? (Object.keys(EXECUTORS) as TaskKind[]).filter((k) => k !== "frame_extract" || this.host.videoFrames);
  }

  /** Registers, after checking the service speaks this runner's protocol (throws RunnerProtocolMismatch if not). */
  async register(): Promise<RunnerResource> {
    const mismatch = runnerProtocolMismatch((await this.client.serviceVersion())["x-runner_protocol"]);
    if (mismatch) {
      this.log(`cannot start: ${mismatch}`);
      throw new RunnerProtocolMismatch(mismatch);
    }
    this.resource = await this.client.register(
      { name: this.host.name, stages: this.stages, runtime_versions: this.host.runtimeVersions, abilities: this.host.abilities },
      { keyless: this.o.keyless },
    );
    if (this.resource.pool) this.log("a volunteer in the pool: computing for projects that opted in, results checked by other runners");
    this.log(`registered ${this.resource.runner_id} for ${this.stages.join(", ")}`);
    if (this.resource.rv_id !== this.resource.service_rv_id) {
      this.log(
        "warning: this runner's engine build differs from the service's, so it is offered only tasks submitted under its own build: update it (reload the page)",
      );
    }
    return this.resource;
  }

  /**
   * Leases and runs tasks until `stop()`. While nothing is ready each lease request is held open
   * by the service (long poll) and answered the moment work is offered: an idle runner sends one
   * quiet request per ~25 s and logs nothing.
   */
  async run(): Promise<void> {
    if (!this.resource) await this.register();
    this.running = true;
    let idle = false;
    while (this.running) {
      let leases: Lease[] = [];
      let failed = false;
      try {
        leases = this.takeFollowing();
        if (leases.length === 0) leases = await this.leases(this.o.leaseWaitSeconds ?? LEASE_WAIT_SECONDS);
      } catch (e) {
        failed = true;
        if (e instanceof ProblemError && (e.status === 401 || e.status === 403)) {
          // The credential is no longer accepted: asking again would only be refused again.
          this.stopRefused(e.message, `the service refuses this runner's credential: ${e.message}`);
          return;
        }
        if (e instanceof ProblemError && e.status === 404) {
          // The service forgot this runner (e.g. its state was reset, or it was upgraded): register
          // again, unless it now speaks another runner protocol.
          const mismatch = await this.register().then(
            () => null,
            (r: unknown) => (r instanceof RunnerProtocolMismatch ? r : null),
          );
          if (mismatch) {
            this.stopRefused(mismatch.message, mismatch.message);
            return;
          }
        } else this.log(`lease failed: ${(e as Error).message}`);
      }
      if (leases.length > 0) {
        idle = false;
        await this.runLeases(leases);
        continue;
      }
      if (!idle) {
        idle = true;
        this.o.onStatus?.({ state: "idle" });
        // Nothing to compute: the engine workers' memory goes back (they restart with the next task).
        this.host.engines.release();
        this.keepAlive?.end();
      }
      if (failed) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, RETRY_MS);
        });
      }
    }
    // Stopped while a completion brought the next leases along: they go back at once, not at their expiry.
    for (const unstarted of this.takeFollowing()) await this.client.release(unstarted.lease_id, "runner stopping").catch(() => {});
    this.o.onStatus?.({ state: "stopped" });
  }

  /** Leases and runs tasks until none is ready; answers how many ran. */
  async drain(): Promise<number> {
    if (!this.resource) await this.register();
    let n = 0;
    this.running = true;
    const next = async () => {
      const following = this.takeFollowing();
      return following.length > 0 ? following : await this.leases(0);
    };
    for (let leases = await next(); leases.length > 0; leases = await next()) {
      await this.runLeases(leases);
      n += leases.length;
    }
    this.running = false;
    this.host.engines.release();
    this.keepAlive?.end();
    return n;
  }

  private takeFollowing(): Lease[] {
    const leases = this.following;
    this.following = [];
    return leases;
  }

  /**
   * How many leases the runner takes at once: one per engine lane (runners.md "Batching"), so a
   * runner with N lanes computes N shards side by side; 1 asks as runners always did.
   */
  private get lanes(): number {
    return Math.max(1, Math.min(MAX_LEASES, this.host.engines.size ?? 1));
  }

  /** Work to do: up to `lanes` leases in one request (`x-max_leases`), or a plain lease request for one lane. */
  private async leases(waitSeconds: number): Promise<Lease[]> {
    const runnerId = this.resource!.runner_id;
    if (this.lanes > 1) return this.client.leaseBatch(runnerId, waitSeconds, this.lanes);
    const lease = await this.client.lease(runnerId, waitSeconds);
    return lease ? [lease] : [];
  }

  /**
   * Runs the leases side by side and completes them in one request (`:complete_leases`, which
   * leases the next ones while the runner goes on); one lease runs and completes as always.
   * Each lease keeps its heartbeats until its completion is sent, and ends on its own when it
   * fails, is stopped or lost.
   */
  private async runLeases(leases: Lease[]): Promise<void> {
    if (leases.length === 1 && this.lanes === 1) {
      await this.runTask(leases[0]!);
      return;
    }
    const ready: { lease_id: string; outputs: TaskOutputs }[] = [];
    let waiting = leases.length;
    let allArrived!: () => void;
    const sent = new Promise<void>((resolve) => (allArrived = resolve)).then(() => this.completeLeases(ready));
    const arrived = () => {
      if (--waiting === 0) allArrived();
    };
    await Promise.all(
      leases.map(async (lease) => {
        let collected = false;
        await this.runTask(lease, async (outputs) => {
          collected = true;
          ready.push({ lease_id: lease.lease_id, outputs });
          arrived();
          // This lease's refusal ends its task run as a refused `:complete` would.
          const refused = (await sent).get(lease.lease_id);
          if (refused) throw new ProblemError(refused);
        });
        if (!collected) arrived();
      }),
    );
    await sent.catch(() => {});
  }

  /** One request for the batch's results, bringing the next leases while the runner goes on; answers the refusals by lease. */
  private async completeLeases(ready: { lease_id: string; outputs: TaskOutputs }[]): Promise<Map<string, Problem>> {
    const refusals = new Map<string, Problem>();
    if (ready.length === 0) return refusals;
    const answer = await this.client.completeLeases(this.resource!.runner_id, ready, {
      leaseNext: this.running,
      maxLeases: this.lanes,
    });
    answer.problems.forEach((p, i) => {
      if (p) refusals.set(ready[i]!.lease_id, p);
    });
    this.following = answer.next;
    return refusals;
  }

  /** Stops after the current task (the lease is completed or released, never abandoned; a waiting lease request ends within its long poll). */
  stop(): void {
    this.running = false;
    this.wake?.();
  }

  /** Runs one leased task to completion (by `complete`, default its own `:complete`), failure or release. */
  async runTask(
    lease: Lease,
    complete?: (outputs: TaskOutputs) => Promise<void>,
  ): Promise<"completed" | "failed" | "released" | "dropped"> {
    const { task } = lease;
    this.o.onStatus?.({ state: "working", task_id: task.task_id, kind: task.kind, job_id: task.job_id });
    this.log(`leased ${task.kind} ${task.task_id} (attempt ${task.attempt})`);
    const events = new EventQueue();
    // Set from heartbeat answers (closures), so kept in an object TypeScript does not narrow;
    // `keptAt`: when the keep-alive last heartbeat the lease (ms since the epoch).
    const held = { directive: "continue" as LeaseDirective, lost: false, keptAt: 0 };
    const note = (d: LeaseDirective) => {
      if (d !== "continue") held.directive = d;
    };
    // Posts are chained, so batches reach the service in the order they were taken (the log's order).
    let posted = Promise.resolve();
    let postedAt = Date.now();
    const flush = () => (posted = posted.then(postQueued));
    const heartbeatMs = (this.resource?.heartbeat_interval_seconds ?? 10) * 1000;
    const interval = Math.min(FLUSH_MS, heartbeatMs);
    // Queued events go within a second; with none, a task's lease is held every second (its directive read as often), a
    // shard's every few seconds: by the keep-alive while it answers, else from here.
    const bare = lease.shard ? Math.min(SHARD_HEARTBEAT_MS, heartbeatMs) : interval;
    const postQueued = async () => {
      postedAt = Date.now();
      const batch = events.take();
      // The keep-alive heartbeats the lease (and brings its directives) while it answers: a heartbeat from here too would be one more request.
      if (batch.length === 0 && Date.now() - held.keptAt < 2 * bare) return;
      try {
        note(
          batch.length > 0
            ? (await this.client.postEvents(lease.lease_id, batch)).directive
            : (await this.client.heartbeat(lease.lease_id)).directive,
        );
      } catch (e) {
        // 404/409: the lease is gone (expired and reclaimed, or the job was deleted): stop working on it.
        if (e instanceof ProblemError && (e.status === 404 || e.status === 409)) {
          held.lost = true;
          held.directive = "teardown";
        } else this.log(`heartbeat failed: ${(e as Error).message}`);
      }
    };
    const timer = setInterval(() => {
      if (events.size > 0 || Date.now() - postedAt >= bare) void flush();
    }, interval);
    const target = this.keepAlive && this.client.target();
    if (target) {
      this.keepAlive!.hold(lease.lease_id, target, bare, (answer) => {
        held.keptAt = answer.at;
        if ("lost" in answer) {
          held.lost = true;
          held.directive = "teardown";
        } else note(answer.directive);
      });
    }
    const stopBeating = () => {
      clearInterval(timer);
      this.keepAlive?.release(lease.lease_id);
    };
    const ctx = this.context(lease, events, () => held.directive, flush);
    let completing = false;
    try {
      const executor = EXECUTORS[task.kind];
      if (!executor) throw new Error(`this runner has no executor for '${task.kind}'`);
      const outputs = await executor(ctx);
      await flush();
      if (held.lost) {
        stopBeating();
        return "dropped";
      }
      completing = true;
      if (complete) await complete(outputs);
      else {
        stopBeating();
        // A runner that goes on asks for its next work in the same request (runners.md "Batching").
        const following = await this.client.complete(lease.lease_id, outputs, { leaseNext: this.running });
        this.following = following ? [following] : [];
      }
      stopBeating();
      const memory = await this.host.memory?.();
      this.log(
        `completed ${task.kind} ${task.task_id}${memory ? ` (engine heap ${mib(memory.engine_heap_bytes)}, rss ${mib(memory.rss_bytes)}, peak rss ${mib(memory.peak_rss_bytes)})` : ""}`,
      );
      return "completed";
    } catch (e) {
      stopBeating();
      if (e instanceof TaskStopped || held.lost) {
        if (held.directive === "teardown") {
          this.log(`teardown of ${task.task_id}`);
          await this.host.teardown?.();
          return "dropped";
        }
        await flush();
        await this.client.release(lease.lease_id, "cancel requested").catch(() => {});
        this.log(`released ${task.task_id} (cancel)`);
        return "released";
      }
      if (completing && e instanceof ProblemError && LEASE_ENDED.has(e.status)) {
        // The refusal ended the lease (runners.md): a `:fail` now would only be refused (409).
        this.log(`the completion of ${task.kind} ${task.task_id} was refused: ${e.message}`);
        return "failed";
      }
      const err = e instanceof Error ? e : new Error(String(e));
      this.log(`failed ${task.kind} ${task.task_id}: ${err.message}`);
      await flush();
      await this.client
        .fail(lease.lease_id, {
          error_class: err.name === "Error" ? "RunnerError" : err.name,
          message: err.message.slice(0, 8000),
          // The service's problem says what went wrong (a completion's); otherwise where the runner failed.
          detail: err instanceof ProblemError ? { problem: err.problem } : err.stack ? { stack: err.stack.slice(0, 4000) } : null,
        })
        .catch((f) => this.log(`could not report the failure: ${(f as Error).message}`));
      return "failed";
    } finally {
      this.o.onStatus?.({ state: "idle" });
    }
  }

  /** `flush` posts the queued events, so an event the service appends itself comes after them. */
  private context(lease: Lease, events: EventQueue, directive: () => LeaseDirective, flush: () => Promise<void>): TaskContext {
    const { client, host } = this;
    return {
      lease,
      params: lease.task.params,
      resumeFrom: lease.checkpoint,
      engine: () => host.engine(),
      engines: host.engines,
      sift: () => host.sift(),
      decode: (bytes, options) => host.decode(bytes, options),
      encode: (image, format, quality) => host.encode(image, format, quality),
      projector: () => host.projector(),
      videoFrames: (bytes, wants, take, info) => {
        if (!host.videoFrames) throw new Error("this runner has no video decoder (WebCodecs)");
        return host.videoFrames(bytes, wants, take, info);
      },
      // The protocol's type names the camera model a string; the service checks it is one it knows.
      registerDataset: (body) =>
        client.registerDataset(lease.lease_id, body as DerivedDatasetRegister) as ReturnType<TaskContext["registerDataset"]>,
      async read(sha) {
        const hit = await host.cache.get(sha);
        if (hit) return hit;
        const bytes = await client.readBlob(lease.lease_id, sha);
        await host.cache.put(sha, bytes);
        return bytes;
      },
      async write(path, bytes, mediaType) {
        const stored = await client.writeBlob(lease.lease_id, bytes, mediaType);
        await host.cache.put(stored.blob_sha, bytes);
        return { path, ...stored, media_type: mediaType };
      },
      progress: (current, total, phase = lease.task.phase) => {
        // A shard's progress in its task's phase is the service's to say (shards done over shards, runners.md "Shards"):
        // it drops the runner's, so none is sent; a sub-phase's goes.
        if (lease.shard && phase === lease.task.phase) return;
        events.progress(phase, current, total);
      },
      log: (level, message) => events.push({ kind: "log_line", level, message }),
      metric: (key, value) => events.push({ kind: "metric", key, value }),
      async cancelPoint() {
        await new Promise((resolve) => setTimeout(resolve, 0));
        const d = directive();
        if (d !== "continue") throw new TaskStopped(d);
      },
      async sealSnapshot(seal) {
        // The seal appends snapshot_available: what the task reported before it goes first.
        await flush();
        return (await client.sealSnapshot(lease.lease_id, seal)).snapshot_seq;
      },
      async reconstructionFile(name, file) {
        try {
          await client.putReconstructionFile(lease.lease_id, name, { blob_sha: file.blob_sha, byte_size: file.byte_size });
          return true;
        } catch (e) {
          if (e instanceof ProblemError && e.status === 409) return false;
          throw e;
        }
      },
      async saveCheckpoint(bytes, summary) {
        const stored = await client.writeBlob(lease.lease_id, bytes);
        await client.putCheckpoint(lease.lease_id, { blob_sha: stored.blob_sha, byte_size: stored.byte_size, summary });
      },
    };
  }

  /** Stops leasing for good: the service refuses this runner (`reason`, as the status carries it). */
  private stopRefused(reason: string, line: string): void {
    this.log(`stopped: ${line}`);
    this.running = false;
    this.o.onStatus?.({ state: "stopped", refused: reason });
  }

  private log(line: string): void {
    this.o.onLog?.(`[runner ${this.host.name}] ${line}`);
  }
}

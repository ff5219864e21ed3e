/**
 * @module A runner's engines for the per-item work of extract (one image), match (one pair) and
 * verify (a few pairs): a pool of engine workers, each with its own wasm engine, so one runner
 * computes on every core its device reports (`hardware_concurrency` in its abilities).
 *
 * One implementation for every host: the host hands the pool a factory that starts one engine
 * worker (a nested dedicated Web Worker in a browser, a worker thread in Node) and the pool
 * drives it over comlink (engine-worker.ts). Workers start on first use, at most `size` of them;
 * a call waits for a free one. Callers keep their items' order themselves (executors/items.ts),
 * so what a task produces does not depend on which worker finished first. On a single core the
 * pool is the runner's own engine in its own thread (no worker), as before pooling.
 *
 * Memory: every engine grows its wasm memory to its largest call and keeps it. The pool gets
 * half of the device's memory, and `lanes(bytes)` says how many calls of that size fit in it at
 * once (SIFT on a 6 MP photo peaks near 1.2 GB per engine; matching and verification need
 * little). The runner calls `release()` whenever it has no task, which ends the workers and
 * returns their memory; back-to-back tasks keep them (a worker takes about a second to start
 * under Node's TypeScript loader).
 */
import * as Comlink from "comlink";
import type { Engine } from "../../../engine-wasm/ts/engine";
import type { RunnerAbilities } from "../../../protocol";
import { type EngineCalls, engineCalls } from "./engine-calls";
import type { EngineWorkerApi } from "./engine-worker";

export interface EnginePool extends EngineCalls {
  /** Engines computing at once; 1 is the runner's own thread. */
  readonly size: number;
  /** Engine workers computing now (0 on the single-thread path, whose engine is the runner's own). */
  readonly busy: number;
  /** How many calls that each need `bytes` of engine memory may run at once: 1 to `size`. */
  lanes(bytes: number): number;
  /** Ends the engine workers, freeing their memory (none may be computing); later calls start fresh ones. */
  release(): void;
}

/** One started worker (an engine worker, or the runner's keep-alive: keep-alive/keep-alive.ts), as the host made it. */
export interface WorkerHandle {
  endpoint: Comlink.Endpoint;
  terminate(): void;
  /** Called if the worker dies (an uncaught error, its thread exiting). */
  onExit(listener: (error: Error) => void): void;
}

export type EngineWorkerFactory = () => WorkerHandle;

/** Assumed when the device does not say (browsers without `navigator.deviceMemory`). */
const DEFAULT_DEVICE_MEMORY = 8 * 1024 ** 3;

export interface EnginePoolOptions {
  abilities: Pick<RunnerAbilities, "hardware_concurrency" | "memory_bytes">;
  /** The runner thread's own engine: the pool on a single core. */
  engine: () => Promise<Engine>;
  spawn: EngineWorkerFactory;
  /** The engine's wasm bytes for each worker; without them a worker loads its own (Node: from disk). */
  wasm?: Uint8Array;
  /** Overrides the core count (tests; `1` forces the single-thread path). */
  size?: number;
}

/** The pool for this device: `hardware_concurrency` engine workers, or the runner's own engine on one core. */
export function createEnginePool(o: EnginePoolOptions): EnginePool {
  const size = Math.max(1, Math.floor(o.size ?? o.abilities.hardware_concurrency ?? 1));
  const budget = (o.abilities.memory_bytes ?? DEFAULT_DEVICE_MEMORY) / 2;
  return size === 1 ? inThreadPool(o.engine) : new WorkerPool(size, budget, o.spawn, o.wasm);
}

/** The runner thread's own engine, one call at a time. */
function inThreadPool(engine: () => Promise<Engine>): EnginePool {
  let calls: Promise<EngineCalls> | undefined;
  const own = () => (calls ??= engine().then(engineCalls));
  return {
    size: 1,
    busy: 0,
    lanes: () => 1,
    release() {},
    extract: async (gray, width, height, options) => (await own()).extract(gray, width, height, options),
    match: async (descA, descB, options) => (await own()).match(descA, descB, options),
    verify: async (pairs) => (await own()).verify(pairs),
  };
}

interface Lane {
  handle: WorkerHandle;
  api: Comlink.Remote<EngineWorkerApi>;
  /** Settles when the engine is instantiated. */
  started: Promise<void>;
  /** Rejects when the worker dies, so a call in flight fails instead of waiting forever. */
  died: Promise<never>;
  dead: boolean;
}

class WorkerPool implements EnginePool {
  private lanesStarted: Lane[] = [];
  private idle: Lane[] = [];
  private waiting: Array<{ resolve: (lane: Lane) => void; reject: (e: Error) => void }> = [];

  constructor(
    readonly size: number,
    private readonly budgetBytes: number,
    private readonly spawn: EngineWorkerFactory,
    private readonly wasm: Uint8Array | undefined,
  ) {}

  get busy(): number {
    return this.lanesStarted.length - this.idle.length;
  }

  lanes(bytes: number): number {
    return Math.max(1, Math.min(this.size, Math.floor(this.budgetBytes / Math.max(1, bytes))));
  }

  extract: EngineCalls["extract"] = (gray, width, height, options) => this.call((api) => api.extract(gray, width, height, options));
  match: EngineCalls["match"] = (descA, descB, options) => this.call((api) => api.match(descA, descB, options));
  verify: EngineCalls["verify"] = (pairs) => this.call((api) => api.verify(pairs));

  release(): void {
    for (const lane of this.lanesStarted) {
      lane.api[Comlink.releaseProxy]();
      lane.handle.terminate();
    }
    this.lanesStarted = [];
    this.idle = [];
    for (const w of this.waiting.splice(0)) w.reject(new Error("the engine pool was released"));
  }

  private async call<R>(run: (api: Comlink.Remote<EngineWorkerApi>) => Promise<R>): Promise<R> {
    const lane = await this.acquire();
    try {
      await Promise.race([lane.started, lane.died]);
      return await Promise.race([run(lane.api), lane.died]);
    } finally {
      this.putBack(lane);
    }
  }

  private acquire(): Promise<Lane> {
    const free = this.idle.pop();
    if (free) return Promise.resolve(free);
    if (this.lanesStarted.length < this.size) return Promise.resolve(this.start());
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  private putBack(lane: Lane): void {
    if (lane.dead || !this.lanesStarted.includes(lane)) {
      // Its place goes to a fresh worker for whoever waits.
      const next = this.waiting.shift();
      if (next && this.lanesStarted.length < this.size) next.resolve(this.start());
      else if (next) this.waiting.unshift(next);
      return;
    }
    const next = this.waiting.shift();
    if (next) next.resolve(lane);
    else this.idle.push(lane);
  }

  private start(): Lane {
    const handle = this.spawn();
    const api = Comlink.wrap<EngineWorkerApi>(handle.endpoint);
    let fail: (e: Error) => void = () => {};
    const died = new Promise<never>((_, reject) => (fail = reject));
    died.catch(() => {}); // observed by the calls that race it
    const lane: Lane = { handle, api, started: api.start(this.wasm), died, dead: false };
    handle.onExit((error) => {
      if (lane.dead) return;
      lane.dead = true;
      this.lanesStarted = this.lanesStarted.filter((l) => l !== lane);
      this.idle = this.idle.filter((l) => l !== lane);
      fail(new Error(`an engine worker died: ${error.message}`));
    });
    this.lanesStarted.push(lane);
    return lane;
  }
}

/**
 * @module A runner in this page, computing in a Web Worker: what a site tab ("this tab
 * computes", "lend compute") and the headless runner page start. Restarts the worker after a
 * force cancel (teardown), which is how a GPU device and wasm memory are really freed.
 */
import * as Comlink from "comlink";
import type { RunnerStatus } from "./runner";
import type { WorkerRunnerApi } from "./worker";

export interface BrowserRunnerOptions {
  /** The service's origin; "" for the page's own. */
  base?: string;
  /** `Bearer <API key or runner token>`. */
  authorization?: string;
  /** Without `authorization`, in `api_key` mode: ask the service for a keyless volunteer token (runners.md "Who may run what"). */
  keyless?: boolean;
  name?: string;
  /** False: the plain engine even where the page could run the threaded one (browser-host.ts). */
  threads?: boolean;
  onStatus?: (s: RunnerStatus) => void;
  onLog?: (line: string) => void;
  onStarted?: (info: { runner_id: string; abilities: unknown; outdated: boolean }) => void;
}

export class BrowserRunner {
  private worker: Worker | null = null;
  private api: Comlink.Remote<WorkerRunnerApi> | null = null;
  private stopped = true;

  constructor(private readonly o: BrowserRunnerOptions = {}) {}

  async start(): Promise<void> {
    this.stopped = false;
    this.worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module", name: "edgesfm-runner" });
    this.api = Comlink.wrap<WorkerRunnerApi>(this.worker);
    const callbacks = Comlink.proxy({
      status: (s: RunnerStatus) => this.o.onStatus?.(s),
      log: (line: string) => this.o.onLog?.(line),
      teardown: () => void this.restart(),
    });
    const info = await this.api.start(
      {
        base: this.o.base ?? "",
        authorization: this.o.authorization,
        keyless: this.o.keyless,
        name: this.o.name ?? `browser-${Math.random().toString(36).slice(2, 8)}`,
        threads: this.o.threads,
      },
      callbacks,
    );
    this.o.onStarted?.(info);
  }

  /**
   * Finishes (or releases) the current task, stops leasing and ends the worker, so a paused
   * runner holds no wasm memory or GPU device; `start()` begins with a fresh one.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.api?.stop();
    this.endWorker();
  }

  private async restart(): Promise<void> {
    this.endWorker();
    this.o.onLog?.("[runner] worker ended after a force cancel; starting a fresh one");
    if (!this.stopped) await this.start();
  }

  private endWorker(): void {
    this.api?.[Comlink.releaseProxy]();
    this.worker?.terminate();
    this.worker = null;
    this.api = null;
  }
}

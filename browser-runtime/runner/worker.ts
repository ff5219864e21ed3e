/**
 * @module The runner inside a dedicated Web Worker, so computing never blocks a page. The page
 * drives it through comlink (browser.ts); a force cancel ends the worker, and the page starts a
 * fresh one with a fresh GPU device and wasm memory.
 */
import * as Comlink from "comlink";
import { RunnerClient } from "../../client/index";
import { browserRunnerHost } from "./browser-host";
import { Runner, type RunnerStatus } from "./runner";

export interface WorkerRunnerConfig {
  base: string;
  authorization?: string | undefined;
  /** Without `authorization`, in `api_key` mode: a keyless volunteer (Runner's `keyless`). */
  keyless?: boolean;
  name: string;
  /** False: the plain engine even on a cross-origin isolated page. */
  threads?: boolean | undefined;
}

export interface WorkerRunnerCallbacks {
  status(s: RunnerStatus): void;
  log(line: string): void;
  teardown(): void;
}

let runner: Runner | null = null;
/** The lease loop; settles once `stop()` has let the current task finish or be released. */
let loop: Promise<void> = Promise.resolve();

const api = {
  /** `outdated`: the service submits new tasks under another engine build than this runner's. */
  async start(
    config: WorkerRunnerConfig,
    callbacks: WorkerRunnerCallbacks,
  ): Promise<{ runner_id: string; abilities: unknown; outdated: boolean }> {
    const host = await browserRunnerHost(config.name, () => callbacks.teardown(), { threads: config.threads !== false });
    runner = new Runner(new RunnerClient({ baseUrl: config.base, authorization: config.authorization }), host, {
      keyless: config.keyless === true && !config.authorization,
      onStatus: (s) => callbacks.status(s),
      onLog: (line) => callbacks.log(line),
    });
    const resource = await runner.register();
    loop = runner.run().catch((e: unknown) => callbacks.log(`runner stopped: ${e instanceof Error ? e.message : String(e)}`));
    return { runner_id: resource.runner_id, abilities: host.abilities, outdated: resource.rv_id !== resource.service_rv_id };
  },
  /** Answers once the current task is completed or released. */
  async stop(): Promise<void> {
    runner?.stop();
    await loop;
  },
};

export type WorkerRunnerApi = typeof api;

Comlink.expose(api);

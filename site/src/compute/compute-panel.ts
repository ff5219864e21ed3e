/**
 * @module "This tab computes" and "lend compute": start and stop the runner (browser-runtime/
 * runner, run in a Web Worker) for this visitor's own jobs or for the volunteer pool, and show
 * which engine it uses (WebGPU on a real GPU, WASM otherwise, as the runner decides) and how
 * fast it goes.
 *
 * Integration point: `connectRunner` below. The runner module is not in the tree yet; until it
 * is, the switches stay disabled and say so. When it lands, `connectRunner` starts its worker
 * (e.g. `new Worker(new URL("./runner-worker.ts", import.meta.url), {type: "module"})` wrapping
 * the runner's lease loop with comlink) and returns the handle; nothing else here changes.
 */
import { byId, say } from "../ui/dom";

export type ComputeMode = "own" | "pool";

/** What the panel needs from a running runner. */
export interface RunnerControl {
  start(mode: ComputeMode, apiKey: string): Promise<void>;
  stop(mode: ComputeMode): Promise<void>;
  /** Called with the engine in use and the latest throughput, e.g. "SIFT 3.2 images/s". */
  onStats(listener: (stats: { engine: "webgpu" | "wasm"; speed: string | null }) => void): void;
}

async function connectRunner(): Promise<RunnerControl | null> {
  return null;
}

/** What this browser offers: a hardware WebGPU adapter, a software one, or none (then WASM). */
export async function detectEngine(): Promise<string> {
  const gpu = (navigator as Navigator & { gpu?: { requestAdapter(): Promise<unknown> } }).gpu;
  if (!gpu) return "WASM (this browser has no WebGPU)";
  try {
    const adapter = (await gpu.requestAdapter()) as { info?: { isFallbackAdapter?: boolean; vendor?: string }; isFallbackAdapter?: boolean } | null;
    if (!adapter) return "WASM (no WebGPU adapter)";
    const fallback = adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
    return fallback ? "WASM (WebGPU here is a software adapter, slower than WASM)" : `WebGPU (${adapter.info?.vendor || "GPU"})`;
  } catch {
    return "WASM (WebGPU unavailable)";
  }
}

export class ComputePanel {
  private readonly status = byId("compute-status");
  private readonly own = byId<HTMLInputElement>("compute-this-tab");
  private readonly pool = byId<HTMLInputElement>("compute-lend");

  constructor(private readonly apiKey: () => string) {}

  async init(): Promise<void> {
    const [engine, runner] = await Promise.all([detectEngine(), connectRunner()]);
    if (!runner) {
      this.own.disabled = this.pool.disabled = true;
      say(this.status, `Engine here: ${engine}. In-tab compute is not part of this build yet (the runner is still being built), so jobs wait for another runner.`);
      return;
    }
    runner.onStats(({ engine: e, speed }) => say(this.status, `Computing with ${e === "webgpu" ? "WebGPU" : "WASM"}${speed ? `, ${speed}` : ""}.`, "ok"));
    const bind = (box: HTMLInputElement, mode: ComputeMode) =>
      box.addEventListener("change", () => {
        const action = box.checked ? runner.start(mode, this.apiKey()) : runner.stop(mode);
        action.catch((e: unknown) => {
          box.checked = !box.checked;
          say(this.status, `Could not ${box.checked ? "stop" : "start"} computing: ${e instanceof Error ? e.message : String(e)}`, "error");
        });
      });
    bind(this.own, "own");
    bind(this.pool, "pool");
    // This tab computes its own jobs by default (issue 7); lending to the pool is opt-in.
    this.own.checked = true;
    this.own.dispatchEvent(new Event("change"));
    say(this.status, `Engine here: ${engine}. Waiting for work.`);
  }
}

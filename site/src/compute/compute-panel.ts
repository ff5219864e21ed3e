/**
 * @module "This tab computes": starts and stops browser-runtime's runner (BrowserRunner: the
 * lease loop in a Web Worker) for this visitor's own jobs, and shows the engine it has and how
 * fast its last task went. "Lend compute" (the volunteer pool) needs a runner token that an
 * operator issues (`/v1/admin/runner-tokens`) and runs in the runner page (/runner.html?key=);
 * this page cannot obtain one, so that switch stays off and says so.
 */
import { BrowserRunner } from "../../../browser-runtime/runner/browser";
import type { RunnerStatus } from "../../../browser-runtime/runner/runner";
import type { RunnerAbilities } from "../../../protocol/schemas/runner";
import { byId, say } from "../ui/dom";

/** The runner's abilities as one phrase: its stages compute with the wasm engine; WebGPU is reported. */
function describeAbilities(a: RunnerAbilities): string {
  const gpu = a.webgpu ? `WebGPU ${a.webgpu.adapter.description || a.webgpu.adapter.vendor}${a.webgpu.adapter.is_fallback_adapter ? " (software)" : ""}` : "no WebGPU";
  return `WASM${a.wasm.simd ? " SIMD" : ""}; ${gpu}`;
}

export class ComputePanel {
  private readonly status = byId("compute-status");
  private readonly own = byId<HTMLInputElement>("compute-this-tab");
  private readonly pool = byId<HTMLInputElement>("compute-lend");
  private runner: BrowserRunner | null = null;
  private engine = "";
  private taskStarted = 0;
  private lastTask = "";
  private startFailed = false;

  constructor(private readonly apiKey: () => string) {
    this.own.addEventListener("change", () => void (this.own.checked ? this.start() : this.stop()));
    this.pool.disabled = true;
    this.pool.title = "Lending compute to the pool needs a runner token from the operator; open /runner.html?key=<token> to lend.";
  }

  /** Computes by default (issue 7): the visitor's own jobs need a runner. */
  async init(): Promise<void> {
    this.own.checked = true;
    await this.start();
  }

  /** A new API key: the runner registers again under it (retrying a start the old key failed). */
  async keyChanged(): Promise<void> {
    if (!this.own.checked && !this.startFailed) return;
    await this.runner?.stop();
    this.own.checked = true;
    await this.start();
  }

  private async start(): Promise<void> {
    say(this.status, "Starting the runner…");
    try {
      const key = this.apiKey();
      this.runner = new BrowserRunner({
        authorization: key ? `Bearer ${key}` : undefined,
        name: "demo tab",
        onStatus: (s) => this.onStatus(s),
        onStarted: (info) => (this.engine = describeAbilities(info.abilities as RunnerAbilities)),
      });
      await this.runner.start();
      this.startFailed = false;
      say(this.status, `This tab computes with ${this.engine}. Waiting for work.`, "ok");
    } catch (e) {
      this.own.checked = false;
      this.startFailed = true;
      say(this.status, `This tab cannot compute: ${e instanceof Error ? e.message : String(e)}`, "error");
    }
  }

  private async stop(): Promise<void> {
    await this.runner?.stop();
    this.runner = null;
    say(this.status, "Paused: this tab computes nothing; jobs wait for another runner.");
  }

  private onStatus(s: RunnerStatus): void {
    if (s.state === "working") {
      this.taskStarted = performance.now();
      this.lastTask = s.kind;
      say(this.status, `Computing ${s.kind} for job ${s.job_id} with ${this.engine}…`, "ok");
    } else if (s.state === "idle" && this.taskStarted) {
      const seconds = (performance.now() - this.taskStarted) / 1000;
      this.taskStarted = 0;
      say(this.status, `Last task: ${this.lastTask} in ${seconds.toFixed(1)} s with ${this.engine}. Waiting for work.`, "ok");
    } else if (s.state === "stopped") {
      say(this.status, "Paused: this tab computes nothing; jobs wait for another runner.");
    }
  }
}

/**
 * @module The compute switches, each driving one browser-runtime runner (BrowserRunner: the
 * lease loop in a Web Worker): "This tab computes" serves the visitor's own jobs under their API
 * key (on by default, issue 7); "Lend compute" serves the volunteer pool under a runner token
 * the visitor pastes (an operator issues them, `/v1/admin/runner-tokens`), or without one under a
 * keyless volunteer token the service gives this address when its operator allows it
 * (`SVC_POOL_KEYLESS_RUNNERS`). Each can be paused; each shows its engine and how fast its last
 * task went.
 */
import { BrowserRunner } from "../../../browser-runtime/runner/browser";
import type { RunnerStatus } from "../../../browser-runtime/runner/runner";
import type { RunnerAbilities } from "../../../protocol/schemas/runner";
import { byId, say } from "../ui/dom";

const TOKEN_STORAGE = "edgesfm.runner_token";

/** The runner's abilities as one phrase: its stages compute with the wasm engine; WebGPU is reported. */
function describeAbilities(a: RunnerAbilities): string {
  const gpu = a.webgpu
    ? `WebGPU ${a.webgpu.adapter.description || a.webgpu.adapter.vendor}${a.webgpu.adapter.is_fallback_adapter ? " (software)" : ""}`
    : "no WebGPU";
  return `WASM${a.wasm.simd ? " SIMD" : ""}; ${gpu}`;
}

/** One checkbox and the runner it starts and pauses. */
class RunnerSwitch {
  private runner: BrowserRunner | null = null;
  private engine = "";
  /** The server submits new tasks under another engine build than this page's (a stale page). */
  private outdated = false;
  private taskStarted = 0;
  private lastTask = "";
  startFailed = false;

  constructor(
    readonly box: HTMLInputElement,
    private readonly status: HTMLElement,
    private readonly label: string,
    private readonly authorization: () => string,
    /** Without a credential, lend as a keyless volunteer (runners.md "Who may run what"). */
    private readonly keyless = false,
  ) {
    box.addEventListener("change", () => void (box.checked ? this.start() : this.stop()));
  }

  async start(): Promise<void> {
    this.box.checked = true;
    say(this.status, `${this.label}: starting…`);
    try {
      const auth = this.authorization();
      this.runner = new BrowserRunner({
        authorization: auth ? `Bearer ${auth}` : undefined,
        keyless: this.keyless,
        name: `demo tab (${this.label.toLowerCase()})`,
        onStatus: (s) => this.onStatus(s),
        onStarted: (info) => {
          this.engine = describeAbilities(info.abilities as RunnerAbilities);
          this.outdated = info.outdated;
        },
      });
      await this.runner.start();
      this.startFailed = false;
      if (this.outdated) {
        say(
          this.status,
          `${this.label}: on, but this page's engine differs from the server's, so it cannot take new jobs. Reload the page.`,
          "error",
        );
      } else say(this.status, `${this.label}: on, with ${this.engine}. Waiting for work.`, "ok");
    } catch (e) {
      this.box.checked = false;
      this.startFailed = true;
      say(this.status, `${this.label}: cannot start: ${e instanceof Error ? e.message : String(e)}`, "error");
    }
  }

  /** Finishes (or releases) the current task, then stops leasing. */
  async stop(): Promise<void> {
    await this.runner?.stop();
    this.runner = null;
    say(this.status, `${this.label}: paused.`);
  }

  /** New credentials: register again under them (also retrying a start the old ones failed). */
  async restart(): Promise<void> {
    if (!this.box.checked && !this.startFailed) return;
    await this.runner?.stop();
    await this.start();
  }

  private onStatus(s: RunnerStatus): void {
    if (s.state === "stopped" && s.refused) {
      // A revoked or quarantined credential: off until another is given (restart).
      this.box.checked = false;
      this.startFailed = true;
      void this.runner?.stop();
      this.runner = null;
      say(this.status, `${this.label}: stopped: ${s.refused}`, "error");
    } else if (s.state === "working") {
      this.taskStarted = performance.now();
      this.lastTask = s.kind;
      say(this.status, `${this.label}: computing ${s.kind} for job ${s.job_id} with ${this.engine}…`, "ok");
    } else if (s.state === "idle" && this.taskStarted) {
      const seconds = (performance.now() - this.taskStarted) / 1000;
      this.taskStarted = 0;
      say(
        this.status,
        `${this.label}: last task ${this.lastTask} took ${seconds.toFixed(1)} s with ${this.engine}. Waiting for work.`,
        "ok",
      );
    }
  }
}

export class ComputePanel {
  private readonly own: RunnerSwitch;
  private readonly pool: RunnerSwitch;
  private readonly token = byId<HTMLInputElement>("runner-token");

  constructor(apiKey: () => string) {
    this.own = new RunnerSwitch(byId("compute-this-tab"), byId("compute-status"), "This tab computes", apiKey);
    this.pool = new RunnerSwitch(byId("compute-lend"), byId("lend-status"), "Lending", () => this.token.value.trim(), true);
    this.token.value = localStorage.getItem(TOKEN_STORAGE) ?? "";
    this.showLendState();
    this.token.addEventListener("change", () => {
      const token = this.token.value.trim();
      if (token) localStorage.setItem(TOKEN_STORAGE, token);
      else localStorage.removeItem(TOKEN_STORAGE);
      this.showLendState();
      void this.pool.restart();
    });
  }

  /** Computes for the visitor by default (issue 7): their own jobs need a runner. */
  init(): Promise<void> {
    return this.own.start();
  }

  /** A new API key: this tab's own runner registers again under it. */
  keyChanged(): Promise<void> {
    return this.own.restart();
  }

  private showLendState(): void {
    if (this.token.value.trim() === "")
      say(
        byId("lend-status"),
        "Lending serves other people's jobs. Without a runner token from this server's operator, it works where the operator lets keyless volunteers in.",
      );
  }
}

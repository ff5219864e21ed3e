/**
 * The runner page: a tab that lends its compute to this server (and what `npm run runner` opens
 * in headless Chromium). `?key=` carries an API key (api_key mode) or a volunteer runner token;
 * without one, in `api_key` mode, the tab asks for a keyless volunteer token (when the operator
 * allows it) and serves the pool. `?name=` names the runner; `?threads=0` keeps the plain engine
 * where the page could run the threaded one. Log lines also go to the console, which the CLI relays.
 */
import { BrowserRunner } from "../../browser-runtime/runner/browser";

const params = new URLSearchParams(location.search);
const key = params.get("key");
const el = (id: string) => document.getElementById(id)!;
const log = el("log");

function line(text: string) {
  console.log(text);
  log.textContent = `${log.textContent}${new Date().toISOString().slice(11, 19)} ${text}\n`.split("\n").slice(-200).join("\n");
}

const runner = new BrowserRunner({
  authorization: key ? `Bearer ${key}` : undefined,
  keyless: !key,
  name: params.get("name") ?? undefined,
  threads: params.get("threads") !== "0",
  onLog: line,
  onStatus: (s) => {
    el("status").textContent = s.state === "working" ? `computing ${s.kind} (task ${s.task_id})` : s.state;
  },
  onStarted: (info) => {
    el("runner-id").textContent = info.runner_id;
    const a = info.abilities as {
      webgpu: { adapter: { description: string; is_fallback_adapter: boolean } } | null;
      wasm: { simd: boolean; threads: boolean };
    };
    el("abilities").textContent =
      `${a.webgpu ? `WebGPU (${a.webgpu.adapter.description}${a.webgpu.adapter.is_fallback_adapter ? ", software" : ""})` : "no WebGPU"}; WASM${a.wasm.simd ? " SIMD" : ""}${a.wasm.threads ? " + threads" : ""}`;
  },
});

runner.start().catch((e: unknown) => {
  const message = e instanceof Error ? e.message : String(e);
  el("status").textContent = `could not start: ${message}`;
  line(`[runner] could not start: ${message}`);
});

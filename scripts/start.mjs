#!/usr/bin/env node
// `npm start`: the whole stack locally in workerd (wrangler dev): the API and, once they exist,
// the web demo's assets and one headless-Chromium runner. State persists in EDGESFM_STATE_DIR
// (default .state/) across restarts. PORT overrides 8787.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
const port = process.env.PORT ?? "8787";
const host = process.env.HOST ?? "127.0.0.1";
const stateDir = process.env.EDGESFM_STATE_DIR ?? `${root}.state`;
mkdirSync(stateDir, { recursive: true });

// The runner page bundles the wasm engine, so build the engine, then the site.
for (const script of ["build:engine", "build:site"]) {
  const r = spawnSync("npm", ["run", "--silent", script], { cwd: root, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`[start] npm run ${script} failed`);
    process.exit(r.status ?? 1);
  }
}

const children = [];
function start(name, cmd, args, env = {}) {
  // Own process group, so stopping it also stops the workerd children it spawns.
  const child = spawn(cmd, args, { cwd: root, stdio: "inherit", detached: true, env: { ...process.env, ...env } });
  children.push(child);
  child.on("exit", (code, signal) => {
    console.log(`[start] ${name} exited (${signal ?? code})`);
    shutdown(code ?? 1);
  });
  return child;
}

let stopping = false;
function shutdown(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) {
    try {
      process.kill(-c.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  setTimeout(() => process.exit(code), 500);
}
process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));

start(
  "api",
  "npx",
  ["wrangler", "dev", "--ip", host, "--port", port, "--persist-to", stateDir, "--show-interactive-dev-session=false", "--live-reload=false"],
  { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
);
console.log(`[start] EdgeSfM on http://${host}:${port} (state in ${stateDir})`);

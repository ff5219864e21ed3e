#!/usr/bin/env node
// `npm start`: the whole stack locally: the API and the web demo in workerd (wrangler dev), and
// one headless-Chromium runner (EDGESFM_RUNNERS=N for more, 0 for none). State persists in
// EDGESFM_STATE_DIR (default .state/) across restarts. PORT overrides 8787. Service settings
// (docs/operations.md) may be given as SVC_* environment variables, e.g. SVC_AUTH_MODE=api_key;
// EDGESFM_BUILD=0 skips building the engine and the site (already built from these files).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
const port = process.env.PORT ?? "8787";
const host = process.env.HOST ?? "127.0.0.1";
const stateDir = process.env.EDGESFM_STATE_DIR ?? `${root}.state`;
mkdirSync(stateDir, { recursive: true });

// The runner page bundles the wasm engine, so build the engine (wasm only), then the site.
const builds =
  process.env.EDGESFM_BUILD === "0"
    ? []
    : [
        ["bash", "engine-wasm/build.sh", "--wasm-only"],
        ["npm", "run", "--silent", "build:site"],
      ];
for (const [cmd, ...args] of builds) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`[start] ${cmd} ${args.join(" ")} failed`);
    process.exit(r.status ?? 1);
  }
}

// The service expects runners built from these very files (browser-runtime/runtime-versions.ts).
const versions = spawnSync("npx", ["tsx", "scripts/runtime-versions.ts"], { cwd: root, encoding: "utf8" });
if (versions.status !== 0) {
  console.error(`[start] could not compute the runtime versions: ${versions.stderr}`);
  process.exit(1);
}
const runtimeVersions = versions.stdout.trim().split("\n").at(-1);

// The runners this script starts are the deployment's own: an operator runner token (new at each
// start) lets them lease every tenant's work in both auth modes (`none` and `api_key`).
const operatorToken = `sfo_${randomBytes(24).toString("base64url")}`;

// The service's settings from this environment, over wrangler.toml's [vars] and .dev.vars.
const settings = Object.entries(process.env)
  .filter(([name]) => name.startsWith("SVC_") && name !== "SVC_RUNTIME_VERSIONS" && name !== "SVC_OPERATOR_RUNNER_TOKEN")
  .flatMap(([name, value]) => ["--var", `${name}:${value}`]);

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
  [
    "wrangler",
    "dev",
    "--ip",
    host,
    "--port",
    port,
    "--persist-to",
    stateDir,
    "--show-interactive-dev-session=false",
    "--live-reload=false",
    "--var",
    `SVC_RUNTIME_VERSIONS:${runtimeVersions}`,
    "--var",
    `SVC_OPERATOR_RUNNER_TOKEN:${operatorToken}`,
    ...settings,
    // One line per request would be one line per idle runner every 25 s (the lease long poll): warnings and errors only.
    "--log-level",
    process.env.EDGESFM_LOG_LEVEL ?? "warn",
  ],
  { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
);
const base = `http://${host}:${port}`;
const runners = Number(process.env.EDGESFM_RUNNERS ?? 1);
if (runners > 0) {
  // Runners start once the API answers.
  (async () => {
    for (let i = 0; i < 120; i++) {
      const up = await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) {
        start("runner", "npx", ["tsx", "scripts/runner.ts", "--server", base, "--count", String(runners), "--key", operatorToken]);
        return;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    console.error("[start] the API did not come up; no runner started");
  })();
}
console.log(`[start] EdgeSfM on ${base} (state in ${stateDir})`);

#!/usr/bin/env node
// `npm test`: builds what the tests need, runs every suite, and ends with one line
// `N passed, M failed` summing them all (the form CI reads).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
const totals = { passed: 0, failed: 0, skipped: 0 };
let broken = false;

function run(cmd, args, opts = {}) {
  console.log(`\n> ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: opts.capture ? ["ignore", "pipe", "inherit"] : "inherit", encoding: "utf8" });
  if (opts.capture) process.stdout.write(r.stdout ?? "");
  return r;
}

// 1. The C++ engine: native unit tests (ctest) and the wasm build the Node tests load.
if (existsSync(`${root}engine-wasm/build.sh`)) {
  const build = run("bash", ["engine-wasm/build.sh"]);
  if (build.status !== 0) {
    broken = true;
    totals.failed += 1;
    console.error("engine build failed");
  }
}
if (!broken && existsSync(`${root}engine-wasm/test-native.sh`)) {
  const r = run("bash", ["engine-wasm/test-native.sh"], { capture: true });
  const m = /(\d+)% tests passed, (\d+) tests failed out of (\d+)/.exec(r.stdout ?? "");
  if (m) {
    totals.failed += Number(m[2]);
    totals.passed += Number(m[3]) - Number(m[2]);
  } else if (r.status !== 0) {
    totals.failed += 1;
  }
}

// 2. Whole-tree checks, each counted once: the types of every program (the Worker, Node-side code,
// the site); lint (ESLint with typescript-eslint, no import cycles); format (Prettier for TypeScript, clang-format for the
// engine's C++; `npm run format` applies them); the Worker's generated types (worker-configuration.d.ts) as `wrangler types`
// makes them from wrangler.toml (`npm run types` regenerates them).
for (const [name, script] of [
  ["typecheck", "typecheck"],
  ["lint", "lint"],
  ["format", "format:check"],
  ["generated Worker types", "types:check"],
]) {
  if (run("npm", ["run", "--silent", script]).status === 0) totals.passed += 1;
  else {
    totals.failed += 1;
    console.error(`${name} failed`);
  }
}

// 3. The site's static files: the Worker's [assets] directory must exist for workerd.
if (!broken && run("npm", ["run", "--silent", "build:site"]).status !== 0) {
  totals.failed += 1;
  console.error("site build failed");
}

// 4. Every vitest project (workerd and Node).
mkdirSync(`${root}test-output`, { recursive: true });
const report = `${root}test-output/vitest.json`;
const vt = run("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)]);
if (existsSync(report)) {
  const j = JSON.parse(readFileSync(report, "utf8"));
  totals.passed += j.numPassedTests;
  totals.failed += j.numFailedTests;
  totals.skipped += j.numPendingTests + (j.numTodoTests ?? 0);
  // A suite that failed to load counts as a failure even though no test in it ran.
  totals.failed += j.testResults.filter((t) => t.status === "failed" && t.assertionResults.length === 0).length;
} else if (vt.status !== 0) {
  totals.failed += 1;
}

console.log(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 || vt.status !== 0 ? 1 : 0);

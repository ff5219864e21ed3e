#!/usr/bin/env node
// `npm run bench -- NAME [args]`: runs bench/NAME.ts (each prints a table and writes
// bench/results/NAME.json). Without NAME, lists the benchmarks.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
const names = readdirSync(`${root}bench`)
  .filter((f) => f.endsWith(".ts") && !f.includes(".test.") && !f.startsWith("_"))
  .map((f) => f.slice(0, -3));
const [name, ...args] = process.argv.slice(2);
if (!name || !names.includes(name)) {
  console.log(`usage: npm run bench -- <${names.join("|")}> [args]`);
  process.exit(name ? 2 : 0);
}
const r = spawnSync("npx", ["tsx", `bench/${name}.ts`, ...args], { cwd: root, stdio: "inherit" });
process.exit(r.status ?? 1);

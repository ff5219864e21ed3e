#!/usr/bin/env node
// `npm run fuzz -- [--requests N] [--seed S]`: the long run of the API fuzzer (worker/fuzz.test.ts,
// test/fuzz/), inside workerd. It prints requests tried, the statuses, 5xx count and each distinct
// failure with a request that shows it; a run is replayed exactly by its seed. `npm test` runs 300.
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";

const root = new URL("..", import.meta.url).pathname;
const { values } = parseArgs({
  options: { requests: { type: "string", default: "10000" }, seed: { type: "string", default: String(Date.now() % 2 ** 31) } },
});
if (!/^\d+$/.test(values.requests) || !/^\d+$/.test(values.seed)) {
  console.error("usage: npm run fuzz -- [--requests N] [--seed S]");
  process.exit(2);
}
console.log(`fuzz: ${values.requests} requests, seed ${values.seed}`);
const r = spawnSync("npx", ["vitest", "run", "--project", "worker", "worker/fuzz.test.ts"], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, FUZZ_REQUESTS: values.requests, FUZZ_SEED: values.seed, CLOUDFLARE_CF_FETCH_ENABLED: "false" },
});
process.exit(r.status ?? 1);

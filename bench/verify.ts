/**
 * `npm run bench -- verify [--sets a,b] [--seed N] [--repeat N] [--cache HASH] [--compare FILE]`:
 * wall and CPU time of two-view verification alone (the `verify` executor's call on every pair,
 * WASM, one thread) on the cached features and raw matches of the mapping benchmark
 * (bench/_mapping-data.ts), with a digest of every pair's full result (type, inlier matches, E/F/H,
 * pose). `--compare` checks the digests against an earlier run's JSON, so that a change meant
 * to leave verification's results alone is shown to (exit code 1 and the differing pairs if not).
 * The input is the newest cache of each set whatever engine build wrote it (`--cache` picks one
 * by hash prefix), so runs of different engine builds verify the very same matches.
 * Writes bench/results/verify.json.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { loadEngine } from "../engine-wasm/ts/engine";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { arg, cpuSeconds, root } from "./_args";
import { cachedSetData, featuresAndMatches, setCameras, verifyPairs } from "./_mapping-data";

const sets = arg("sets", "sacre-coeur,sceaux-castle,opensfm-lund").split(",");
const seed = Number(arg("seed", "0"));
const repeat = Math.max(1, Number(arg("repeat", "1")));
const cacheHash = arg("cache", "");
const compareFile = arg("compare", "");

interface SetResult {
  set: string;
  input: string;
  pairs: number;
  wallSeconds: number;
  cpuSeconds: number;
  types: Record<string, number>;
  inliers: number;
  digest: string;
  pairDigests: string[];
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

const engine = await loadEngine();
const engineHash = (await localRuntimeVersions())["engine-wasm"]!;
const results: SetResult[] = [];
for (const set of sets) {
  const cached = cachedSetData(set, cacheHash || undefined);
  const input = cached?.file ?? `computed (engine ${engineHash.slice(0, 16)})`;
  const data = cached?.data ?? (await featuresAndMatches(engine, set, engineHash));
  const cameras = await setCameras(set, data);
  let best = { wallSeconds: Infinity, cpuSeconds: Infinity };
  let verified: ReturnType<typeof verifyPairs> = [];
  for (let run = 0; run < repeat; run += 1) {
    const wall = performance.now();
    const cpu = cpuSeconds();
    verified = verifyPairs(engine, data, cameras, seed);
    const time = { wallSeconds: (performance.now() - wall) / 1000, cpuSeconds: cpuSeconds() - cpu };
    if (time.wallSeconds < best.wallSeconds) best = time;
  }
  const pairDigests = verified.map((g) => sha256(JSON.stringify(g)));
  const types: Record<string, number> = {};
  for (const g of verified) types[g.type] = (types[g.type] ?? 0) + 1;
  results.push({
    set,
    input: input.replace(root, ""),
    pairs: data.pairs.length,
    ...best,
    types,
    inliers: verified.reduce((sum, g) => sum + g.num_inliers, 0),
    digest: sha256(pairDigests.join("")),
    pairDigests,
  });
}

console.log(
  `Verification alone (WASM, 1 thread, seed ${seed}, best of ${repeat}); engine ${engineHash.slice(0, 16)}; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log("set            | pairs | wall s | CPU s | inliers | digest           | types");
for (const r of results) {
  const types = Object.entries(r.types)
    .map(([t, n]) => `${t} ${n}`)
    .join(", ");
  console.log(
    `${r.set.padEnd(14)} | ${String(r.pairs).padStart(5)} | ${r.wallSeconds.toFixed(2).padStart(6)} | ${r.cpuSeconds.toFixed(2).padStart(5)} | ${String(r.inliers).padStart(7)} | ${r.digest.slice(0, 16)} | ${types}`,
  );
}

let differing = 0;
if (compareFile) {
  const earlier = JSON.parse(readFileSync(compareFile, "utf8")) as { results: SetResult[] };
  for (const r of results) {
    const e = earlier.results.find((x) => x.set === r.set);
    if (!e) {
      console.log(`${r.set}: not in ${compareFile}`);
      continue;
    }
    const pairs = r.pairDigests.flatMap((d, i) => (d === e.pairDigests[i] ? [] : [i]));
    differing += pairs.length + (e.pairs === r.pairs ? 0 : 1);
    console.log(
      pairs.length === 0 && e.pairs === r.pairs
        ? `${r.set}: identical to ${compareFile} (${r.wallSeconds.toFixed(2)} s vs ${e.wallSeconds.toFixed(2)} s)`
        : `${r.set}: ${pairs.length} of ${r.pairs} pairs differ from ${compareFile}: ${pairs.slice(0, 20).join(" ")}`,
    );
  }
}
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/verify.json"),
  JSON.stringify({ date: new Date().toISOString(), seed, engine: engineHash, loadAverage: loadavg(), results }, null, 2),
);
console.log("wrote bench/results/verify.json");
if (differing > 0) process.exitCode = 1;

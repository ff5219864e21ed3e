/**
 * `npm run bench -- matching [--sets a,b] [--images N] [--max-features N] [--wgsl]`:
 * exhaustive brute-force descriptor matching on the shared photo sets, the WASM path
 * against `colmap exhaustive_matcher` (COLMAP 3.8, CPU, --SiftMatching.use_gpu 0, 1 thread)
 * in the same invocation. Prints pairs/s, CPU seconds per pair and matches per pair for
 * both, and the ratios; writes bench/results/matching.json. `--wgsl` adds the WGSL matcher
 * (engineer C's bench/_gpu.ts).
 *
 * Each side matches its own features (ours from the WASM extractor, COLMAP's from its
 * feature_extractor, same max_num_features; the extraction is not timed). COLMAP 3.8's
 * exhaustive_matcher always runs geometric verification too, so its time includes that
 * RANSAC; its raw match counts are read from the `matches` table.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { extractSift, matchDescriptors, type SiftFeatures } from "../engine-wasm/ts/feature";
import { decodeImage } from "../browser-runtime/decode/node";
import { exhaustivePairs } from "../browser-runtime/stages/pairs";
import { toGray8 } from "../browser-runtime/stages/extract";
import { cpuSeconds, datasets, openSiftBench, root, siftBenchArgs } from "./_args";
import { queryDatabase, runTimed, writeImageList } from "./_colmap";

const { sets, maxImages, maxNumFeatures, withWgsl } = siftBenchArgs(10);

interface SetResult {
  set: string;
  images: number;
  pairs: number;
  wasm: { pairsPerSecond: number; cpuSecondsPerPair: number; matchesPerPair: number; featuresPerImage: number };
  colmap?: { pairsPerSecond: number; cpuSecondsPerPair: number; matchesPerPair: number; featuresPerImage: number };
  wgsl?: { pairsPerSecond: number; matchesPerPair: number; adapter: string };
}

const { engine, haveColmap, gpu } = await openSiftBench(withWgsl);
const results: SetResult[] = [];

for (const set of sets) {
  const dir = join(datasets, set, "images");
  const names = readdirSync(dir)
    .filter((f) => /\.(jpe?g|png|tiff?)$/i.test(f))
    .sort()
    .slice(0, maxImages);
  const features = new Map<string, SiftFeatures>();
  for (const name of names) {
    const image = await decodeImage(join(dir, name));
    features.set(name, extractSift(engine, toGray8(image), image.width, image.height, { maxNumFeatures }));
  }
  const pairs = exhaustivePairs(names);
  const [p0] = pairs;
  if (p0) matchDescriptors(engine, features.get(p0.imageName1)!.descriptors, features.get(p0.imageName2)!.descriptors); // warm-up
  let totalMatches = 0;
  const wallStart = performance.now();
  const cpuStart = cpuSeconds();
  for (const p of pairs)
    totalMatches += matchDescriptors(engine, features.get(p.imageName1)!.descriptors, features.get(p.imageName2)!.descriptors).length / 2;
  const wasmCpu = cpuSeconds() - cpuStart;
  const wasmWall = (performance.now() - wallStart) / 1000;
  const featureCount = [...features.values()].reduce((a, f) => a + f.keypoints.length / 4, 0);
  const result: SetResult = {
    set,
    images: names.length,
    pairs: pairs.length,
    wasm: {
      pairsPerSecond: pairs.length / wasmWall,
      cpuSecondsPerPair: wasmCpu / pairs.length,
      matchesPerPair: totalMatches / pairs.length,
      featuresPerImage: featureCount / names.length,
    },
  };

  if (haveColmap) {
    const work = mkdtempSync(join(tmpdir(), "bench-colmap-"));
    const db = join(work, "database.db");
    runTimed("colmap", [
      "feature_extractor",
      "--database_path",
      db,
      "--image_path",
      dir,
      "--image_list_path",
      writeImageList(work, names),
      "--SiftExtraction.use_gpu",
      "0",
      "--SiftExtraction.num_threads",
      "2",
      "--SiftExtraction.max_num_features",
      String(maxNumFeatures),
    ]);
    const timing = runTimed("colmap", [
      "exhaustive_matcher",
      "--database_path",
      db,
      "--SiftMatching.use_gpu",
      "0",
      "--SiftMatching.num_threads",
      "1",
    ]);
    const matchRows = queryDatabase(db, "SELECT rows FROM matches").map(([r]) => Number(r));
    const kp = queryDatabase(db, "SELECT rows FROM keypoints").map(([r]) => Number(r));
    rmSync(work, { recursive: true, force: true });
    result.colmap = {
      pairsPerSecond: pairs.length / timing.wallSeconds,
      cpuSecondsPerPair: timing.cpuSeconds / pairs.length,
      matchesPerPair: matchRows.reduce((a, b) => a + b, 0) / pairs.length,
      featuresPerImage: kp.reduce((a, b) => a + b, 0) / names.length,
    };
  }

  if (gpu && p0) {
    await gpu.match(features.get(p0.imageName1)!.descriptors, features.get(p0.imageName2)!.descriptors);
    const start = performance.now();
    let m = 0;
    for (const p of pairs)
      m += (await gpu.match(features.get(p.imageName1)!.descriptors, features.get(p.imageName2)!.descriptors)).length / 2;
    result.wgsl = {
      pairsPerSecond: pairs.length / ((performance.now() - start) / 1000),
      matchesPerPair: m / pairs.length,
      adapter: gpu.adapter,
    };
  }
  results.push(result);
}
gpu?.close();

const f = (v: number | undefined, digits = 2): string => (v === undefined ? "-" : v.toFixed(digits));
console.log(
  `\nExhaustive matching (cross check, ratio 0.8, distance 0.7), max_num_features ${maxNumFeatures} (WASM single thread vs COLMAP 3.8 CPU, 1 thread)`,
);
console.log(
  "set            | imgs | pairs | feat/img wasm | feat/img colmap | matches/pair wasm | matches/pair colmap | pairs/s wasm | pairs/s colmap | CPU s/pair wasm | CPU s/pair colmap | CPU ratio | pairs/s wgsl",
);
for (const r of results) {
  console.log(
    [
      r.set.padEnd(14),
      String(r.images).padStart(4),
      String(r.pairs).padStart(5),
      f(r.wasm.featuresPerImage, 0).padStart(13),
      f(r.colmap?.featuresPerImage, 0).padStart(15),
      f(r.wasm.matchesPerPair, 0).padStart(17),
      f(r.colmap?.matchesPerPair, 0).padStart(19),
      f(r.wasm.pairsPerSecond).padStart(12),
      f(r.colmap?.pairsPerSecond).padStart(14),
      f(r.wasm.cpuSecondsPerPair, 3).padStart(15),
      f(r.colmap?.cpuSecondsPerPair, 3).padStart(17),
      f(r.colmap ? r.wasm.cpuSecondsPerPair / r.colmap.cpuSecondsPerPair : undefined).padStart(9),
      f(r.wgsl?.pairsPerSecond).padStart(12),
    ].join(" | "),
  );
}
console.log("(COLMAP's time includes its geometric verification, which exhaustive_matcher 3.8 always runs)");
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/matching.json"),
  JSON.stringify({ date: new Date().toISOString(), maxNumFeatures, loadAverage: loadavg(), results }, null, 2),
);
console.log("wrote bench/results/matching.json");

/**
 * `npm run bench -- features [--sets a,b] [--images N] [--max-features N] [--wgsl]`:
 * SIFT extraction on the shared photo sets, the WASM path against `colmap feature_extractor`
 * (COLMAP 3.8, CPU, --SiftExtraction.use_gpu 0, the same max_num_features), run in the same
 * invocation. Prints images/s, CPU seconds per image and keypoints per image for both, and
 * the ratios; writes bench/results/features.json. `--wgsl` adds the WGSL path (engineer C's
 * bench/_gpu.ts; slow on software adapters).
 *
 * What is timed: WASM = SIFT on decoded 8-bit gray pixels (decoding and gray conversion are
 * timed apart, libvips through sharp); COLMAP = the whole feature_extractor process (its
 * FreeImage decoding, SIFT, database writes and start-up), with --SiftExtraction.num_threads 1
 * so CPU seconds compare one core against one core.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { extractSift, type SiftFeatures } from "../engine-wasm/ts/feature";
import { decodeImage } from "../browser-runtime/decode/node";
import { toGray8 } from "../browser-runtime/stages/extract";
import { cpuSeconds, datasets, openSiftBench, root, siftBenchArgs } from "./_args";
import { queryDatabase, runTimed, writeImageList } from "./_colmap";

const { sets, maxImages, maxNumFeatures, withWgsl } = siftBenchArgs(1000);

interface SetResult {
  set: string;
  images: number;
  wasm: { imagesPerSecond: number; cpuSecondsPerImage: number; decodeSecondsPerImage: number; keypointsPerImage: number };
  colmap?: { imagesPerSecond: number; cpuSecondsPerImage: number; keypointsPerImage: number };
  wgsl?: { imagesPerSecond: number; keypointsPerImage: number; adapter: string };
  perImage: Array<{ name: string; wasmKeypoints: number; colmapKeypoints?: number }>;
}

const { engine, haveColmap, gpu } = await openSiftBench(withWgsl);
const results: SetResult[] = [];

for (const set of sets) {
  const dir = join(datasets, set, "images");
  const names = readdirSync(dir)
    .filter((f) => /\.(jpe?g|png|tiff?)$/i.test(f))
    .sort()
    .slice(0, maxImages);
  // Decode once (timed apart), then SIFT on the gray pixels.
  const decodeStart = performance.now();
  const grays = [];
  for (const name of names) {
    const image = await decodeImage(join(dir, name));
    grays.push({ name, gray: toGray8(image), width: image.width, height: image.height });
  }
  const decodeSeconds = (performance.now() - decodeStart) / 1000;
  const first = grays[0]!;
  extractSift(engine, first.gray, first.width, first.height, { maxNumFeatures }); // warm-up (tier-up, buffers)
  const features: SiftFeatures[] = [];
  const wallStart = performance.now();
  const cpuStart = cpuSeconds();
  for (const g of grays) features.push(extractSift(engine, g.gray, g.width, g.height, { maxNumFeatures }));
  const wasmCpu = cpuSeconds() - cpuStart;
  const wasmWall = (performance.now() - wallStart) / 1000;
  const keypoints = features.map((f) => f.keypoints.length / 4);
  const result: SetResult = {
    set,
    images: names.length,
    wasm: {
      imagesPerSecond: names.length / wasmWall,
      cpuSecondsPerImage: wasmCpu / names.length,
      decodeSecondsPerImage: decodeSeconds / names.length,
      keypointsPerImage: keypoints.reduce((a, b) => a + b, 0) / names.length,
    },
    perImage: names.map((name, i) => ({ name, wasmKeypoints: keypoints[i]! })),
  };

  if (haveColmap) {
    const work = mkdtempSync(join(tmpdir(), "bench-colmap-"));
    const db = join(work, "database.db");
    const timing = runTimed("colmap", [
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
      "1",
      "--SiftExtraction.max_num_features",
      String(maxNumFeatures),
    ]);
    const counts = new Map(
      queryDatabase(db, "SELECT images.name, keypoints.rows FROM images JOIN keypoints USING (image_id)").map(([n, c]) => [n!, Number(c)]),
    );
    rmSync(work, { recursive: true, force: true });
    result.colmap = {
      imagesPerSecond: names.length / timing.wallSeconds,
      cpuSecondsPerImage: timing.cpuSeconds / names.length,
      keypointsPerImage: [...counts.values()].reduce((a, b) => a + b, 0) / names.length,
    };
    result.perImage.forEach((p) => (p.colmapKeypoints = counts.get(p.name)));
  }

  if (gpu) {
    await gpu.extract(first.gray, first.width, first.height, { maxNumFeatures });
    const start = performance.now();
    let total = 0;
    for (const g of grays) total += (await gpu.extract(g.gray, g.width, g.height, { maxNumFeatures })).keypoints.length / 4;
    result.wgsl = {
      imagesPerSecond: names.length / ((performance.now() - start) / 1000),
      keypointsPerImage: total / names.length,
      adapter: gpu.adapter,
    };
  }
  results.push(result);
}
gpu?.close();

const f = (v: number | undefined, digits = 2): string => (v === undefined ? "-" : v.toFixed(digits));
console.log(`\nSIFT extraction, max_num_features ${maxNumFeatures} (WASM single thread vs COLMAP 3.8 CPU, 1 thread)`);
console.log(
  "set            | imgs | kp/img wasm | kp/img colmap | img/s wasm | img/s colmap | CPU s/img wasm | CPU s/img colmap | CPU ratio wasm/colmap | img/s wgsl",
);
for (const r of results) {
  console.log(
    [
      r.set.padEnd(14),
      String(r.images).padStart(4),
      f(r.wasm.keypointsPerImage, 0).padStart(11),
      f(r.colmap?.keypointsPerImage, 0).padStart(13),
      f(r.wasm.imagesPerSecond).padStart(10),
      f(r.colmap?.imagesPerSecond).padStart(12),
      f(r.wasm.cpuSecondsPerImage).padStart(14),
      f(r.colmap?.cpuSecondsPerImage).padStart(16),
      f(r.colmap ? r.wasm.cpuSecondsPerImage / r.colmap.cpuSecondsPerImage : undefined).padStart(21),
      f(r.wgsl?.imagesPerSecond).padStart(10),
    ].join(" | "),
  );
}
console.log(
  "(WASM excludes decoding: sharp decode + gray took",
  results.map((r) => `${r.set} ${f(r.wasm.decodeSecondsPerImage)} s/img`).join(", "),
  "; COLMAP includes its own decoding and start-up)",
);
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/features.json"),
  JSON.stringify({ date: new Date().toISOString(), maxNumFeatures, loadAverage: (await import("node:os")).loadavg(), results }, null, 2),
);
console.log("wrote bench/results/features.json");

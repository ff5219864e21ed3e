/**
 * `npm run bench -- gpu [--set NAME] [--images N] [--max-size PX]`: the WGSL SIFT and matcher on
 * this machine's WebGPU adapter (SwiftShader here) against the WASM path, on the first N photos
 * of a shared set downscaled to PX (SwiftShader is slow: defaults 3 images, 640 px): images and
 * pairs per second for both, their ratio, and how well the two agree. Writes
 * bench/results/gpu.json.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { loadEngine } from "../engine-wasm/ts/engine";
import { extractSift, matchDescriptors, type SiftFeatures } from "../engine-wasm/ts/feature";
import { compareSift, matchAgreement } from "../protocol/agreement";
import { loadGrayPhoto, photoNames } from "../browser-runtime/gpu/test-images";
import { openGpuBench, timed } from "./_gpu";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const set = arg("set", "sacre-coeur");
const numImages = Number(arg("images", "3"));
const maxSize = Number(arg("max-size", "640"));
const options = { maxImageSize: maxSize };

const engine = await loadEngine();
const gpu = await openGpuBench();
const photos = await Promise.all((await photoNames(set)).slice(0, numImages).map((f) => loadGrayPhoto(set, f)));

const cpu: SiftFeatures[] = [];
const wgsl: SiftFeatures[] = [];
let cpuExtractSeconds = 0;
let gpuExtractSeconds = 0;
const agreements = [];
if (photos[0]) extractSift(engine, photos[0].gray, photos[0].width, photos[0].height, options); // warm-up
if (gpu && photos[0]) await gpu.extract(photos[0].gray, photos[0].width, photos[0].height, options);
for (const p of photos) {
  const c = await timed(() => extractSift(engine, p.gray, p.width, p.height, options));
  cpuExtractSeconds += c.seconds;
  cpu.push(c.result);
  if (gpu) {
    const g = await timed(() => gpu.extract(p.gray, p.width, p.height, options));
    gpuExtractSeconds += g.seconds;
    wgsl.push(g.result);
    agreements.push({ image: p.name, ...compareSift(c.result, g.result) });
  }
}

// Exhaustive pairs over the WASM descriptors (so both matchers see the same input).
let cpuMatchSeconds = 0;
let gpuMatchSeconds = 0;
let pairs = 0;
let identicalPairs = 0;
let minMatchAgreement = 1;
for (let i = 0; i < cpu.length; i++) {
  for (let j = i + 1; j < cpu.length; j++) {
    const a = cpu[i]!.descriptors;
    const b = cpu[j]!.descriptors;
    const c = await timed(() => matchDescriptors(engine, a, b));
    cpuMatchSeconds += c.seconds;
    pairs++;
    if (gpu) {
      const g = await timed(() => gpu.match(a, b));
      gpuMatchSeconds += g.seconds;
      const agreement = matchAgreement(c.result, g.result);
      minMatchAgreement = Math.min(minMatchAgreement, agreement);
      if (agreement === 1) identicalPairs++;
    }
  }
}

const rate = (n: number, s: number) => (s > 0 ? n / s : 0);
const result = {
  set,
  images: photos.length,
  maxImageSize: maxSize,
  adapter: gpu?.adapter ?? null,
  isFallbackAdapter: gpu?.isFallbackAdapter ?? null,
  features: {
    wasmImagesPerSecond: rate(photos.length, cpuExtractSeconds),
    wgslImagesPerSecond: gpu ? rate(photos.length, gpuExtractSeconds) : null,
    wgslOverWasmTime: gpu ? gpuExtractSeconds / cpuExtractSeconds : null,
    meanFeatures: cpu.reduce((s, f) => s + f.keypoints.length / 4, 0) / Math.max(1, cpu.length),
    agreement: agreements,
  },
  matching: {
    pairs,
    wasmPairsPerSecond: rate(pairs, cpuMatchSeconds),
    wgslPairsPerSecond: gpu ? rate(pairs, gpuMatchSeconds) : null,
    wgslOverWasmTime: gpu ? gpuMatchSeconds / cpuMatchSeconds : null,
    identicalPairs: gpu ? identicalPairs : null,
    minMatchAgreement: gpu ? minMatchAgreement : null,
  },
};

const f = (v: number | null, d = 2) => (v === null ? "-" : v.toFixed(d));
console.log(
  `\nWGSL (${result.adapter ?? "no adapter"}) vs WASM on ${set}: ${photos.length} images at <= ${maxSize} px, mean ${result.features.meanFeatures.toFixed(0)} features`,
);
console.log("| stage | WASM /s | WGSL /s | WGSL time / WASM time | agreement |");
console.log("|---|---|---|---|---|");
const worstMatched = agreements.length ? Math.min(...agreements.map((a) => Math.min(a.matchedA, a.matchedB))) : null;
const worstDesc = agreements.length ? Math.max(...agreements.map((a) => a.maxDescriptorByteDiff)) : null;
console.log(
  `| features (images) | ${f(result.features.wasmImagesPerSecond)} | ${f(result.features.wgslImagesPerSecond, 3)} | ${f(result.features.wgslOverWasmTime, 1)} | keypoints paired >= ${f(worstMatched, 4)}, descriptor bytes within ${worstDesc ?? "-"} |`,
);
console.log(
  `| matching (pairs) | ${f(result.matching.wasmPairsPerSecond)} | ${f(result.matching.wgslPairsPerSecond, 3)} | ${f(result.matching.wgslOverWasmTime, 1)} | identical match lists ${result.matching.identicalPairs ?? "-"}/${pairs} |`,
);
mkdirSync(new URL("results/", import.meta.url), { recursive: true });
writeFileSync(new URL("results/gpu.json", import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
console.log("written bench/results/gpu.json");
gpu?.close();

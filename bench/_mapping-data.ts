/**
 * @module The inputs of the mapping and verify benchmarks: keypoints and raw matches of a shared
 * set as the runner computes them (SIFT, exhaustive or sequential pairs, brute-force matching;
 * cached per engine build in bench/results/cache/, features apart from matches), and the `verify` executor's call on every pair.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Engine } from "../engine-wasm/ts/engine";
import { type TwoViewResult, verifyTwoView } from "../engine-wasm/ts/two-view";
import { IncrementalMapping, type MappingInput, extendModel } from "../engine-wasm/ts/mapping";
import { globalModelShortfall } from "../browser-runtime/runner/executors/map";
import { type DatasetCameras, datasetCameras, twoViewCamera } from "../browser-runtime/stages/cameras";
import { decodeImage } from "../browser-runtime/decode/node";
import { mappingPairs } from "../browser-runtime/stages/view-graph";
import { verifiedPair } from "../browser-runtime/runner/executors/verify";
import { extractFeatures } from "../browser-runtime/stages/extract";
import { matchFeatures } from "../browser-runtime/stages/match";
import { exhaustivePairs, sequentialPairs } from "../browser-runtime/stages/pairs";
import { decodeFeatures } from "../protocol/wire/features";
import { readFocalLength35mm } from "../worker/services/exif-tags";
import { INTRINSICS } from "../scripts/reference-sets";
import { datasets, root } from "./_args";

export interface SetData {
  images: Array<{ name: string; width: number; height: number; xy: number[] }>;
  pairs: Array<{ image1: number; image2: number; matches: number[] }>;
  /** Wall seconds of extraction and matching when they were computed (one thread); absent in caches older than this field. */
  timing?: { extractSeconds: number; matchSeconds: number };
}

/** The image pairs a set is matched on: every pair, or each photo with its next 10 in name order (the spec's default overlap). */
export type PairStrategy = "exhaustive" | "sequential";

const cacheDir = join(root, "bench/results/cache");
const cacheFile = (set: string, engineHash: string, strategy: PairStrategy) =>
  join(cacheDir, `${set}-${engineHash.slice(0, 16)}${strategy === "exhaustive" ? "" : `.${strategy}`}.json`);
/** Each image's features artifact, kept so that another pair strategy matches without extracting again. */
const featuresDir = (set: string, engineHash: string) => join(cacheDir, `${set}-${engineHash.slice(0, 16)}-features`);

/** SIFT features of every image of the set (artifact bytes, by name) and the wall seconds extraction took, cached per engine build. */
async function setFeatures(engine: Engine, set: string, engineHash: string) {
  const dir = featuresDir(set, engineHash);
  const timingFile = join(dir, "timing.json");
  const names = readdirSync(join(datasets, set, "images")).sort();
  const features = new Map<string, Uint8Array>();
  if (existsSync(timingFile)) {
    for (const name of names) features.set(name, new Uint8Array(readFileSync(join(dir, `${name}.feat`))));
    return { names, features, extractSeconds: (JSON.parse(readFileSync(timingFile, "utf8")) as { extractSeconds: number }).extractSeconds };
  }
  mkdirSync(dir, { recursive: true });
  const start = performance.now();
  for (const name of names) {
    const result = extractFeatures(engine, await decodeImage(join(datasets, set, "images", name)));
    features.set(name, result.bytes);
    writeFileSync(join(dir, `${name}.feat`), result.bytes);
  }
  const extractSeconds = (performance.now() - start) / 1000;
  writeFileSync(timingFile, JSON.stringify({ extractSeconds }));
  return { names, features, extractSeconds };
}

/** Keypoints and raw matches as the runner computes them (the pairs of `strategy`), cached per engine build. */
export async function featuresAndMatches(
  engine: Engine,
  set: string,
  engineHash: string,
  strategy: PairStrategy = "exhaustive",
): Promise<SetData> {
  const cache = cacheFile(set, engineHash, strategy);
  if (existsSync(cache)) return JSON.parse(readFileSync(cache, "utf8")) as SetData;
  const { names, features, extractSeconds } = await setFeatures(engine, set, engineHash);
  const images: SetData["images"] = names.map((name) => {
    const f = decodeFeatures(features.get(name)!);
    const xy: number[] = [];
    for (let k = 0; k < f.keypoints.length; k += 4) xy.push(f.keypoints[k]!, f.keypoints[k + 1]!);
    return { name, width: f.imageWidth, height: f.imageHeight, xy };
  });
  const index = new Map(names.map((n, i) => [n, i]));
  const start = performance.now();
  const pairs = strategy === "exhaustive" ? exhaustivePairs(names) : sequentialPairs(names);
  const matched = matchFeatures(engine, { features, pairs }).pairs;
  const data: SetData = {
    images,
    pairs: matched.map((p) => ({ image1: index.get(p.imageName1)!, image2: index.get(p.imageName2)!, matches: Array.from(p.matches) })),
    timing: { extractSeconds, matchSeconds: (performance.now() - start) / 1000 },
  };
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(cache, JSON.stringify(data));
  return data;
}

/**
 * A cached set whatever engine build wrote it (`hashPrefix` picks one; otherwise the newest):
 * verification alone can then be compared across engine builds on the very same input.
 */
export function cachedSetData(set: string, hashPrefix?: string): { file: string; data: SetData } | null {
  if (!existsSync(cacheDir)) return null;
  const files = readdirSync(cacheDir)
    .filter((f) => /^[0-9a-f]{16}\.json$/.test(f.slice(set.length + 1)) && f.startsWith(`${set}-${hashPrefix ?? ""}`))
    .map((f) => join(cacheDir, f));
  const file = files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  return file ? { file, data: JSON.parse(readFileSync(file, "utf8")) as SetData } : null;
}

/** The set's cameras as a job makes them: the tests' intrinsics mode, each photo's EXIF focal length as the service reads it. */
export async function setCameras(set: string, data: SetData): Promise<DatasetCameras> {
  const images = await Promise.all(
    data.images.map(async (im) => ({
      name: im.name,
      focal_length_35mm: await readFocalLength35mm(readFileSync(join(datasets, set, "images", im.name)), im.width, im.height),
    })),
  );
  return datasetCameras({ camera_model: "SIMPLE_RADIAL", intrinsics_mode: INTRINSICS[set] ?? "single_camera", images }, data.images);
}

/** The `verify` executor's call on every pair (default options): E as well as F/H where the cameras have a prior focal length. */
export function verifyPairs(engine: Engine, data: SetData, cameras: DatasetCameras, seed: number): TwoViewResult[] {
  const keypoints = data.images.map((im) => Float64Array.from(im.xy));
  const camera = (i: number) => twoViewCamera(cameras.cameras[cameras.cameraOfImage[i]!]!);
  return data.pairs.map((p) =>
    verifyTwoView(engine, {
      keypoints1: keypoints[p.image1]!,
      keypoints2: keypoints[p.image2]!,
      camera1: camera(p.image1),
      camera2: camera(p.image2),
      matches: p.matches,
      options: { seed },
    }),
  );
}

/**
 * The pairs the map stage gives the mapper from these verification results (`verifyPairs`, in
 * the order of `data.pairs`): its own path (stages/view-graph.ts mappingPairs, the view-graph
 * filter included), so that a benchmark maps what the service maps.
 */
export async function mapStagePairs(
  engine: Engine,
  data: SetData,
  cameras: DatasetCameras,
  results: TwoViewResult[],
  seed: number,
): ReturnType<typeof mappingPairs> {
  const file = results.map((g, i) => verifiedPair(data.pairs[i]!.image1, data.pairs[i]!.image2, g));
  const keypoints = data.images.map((im) => ({ xy: im.xy }));
  return mappingPairs(file, cameras, keypoints, seed, async (batch) => batch.map((b) => verifyTwoView(engine, b)));
}

/**
 * The global mapper on the map stage's pairs (rotations from the view-graph filter's averaging, global positioning, global
 * refinement) with why the map executor would fall back to the incremental mapper (`globalModelShortfall`; the model is
 * measured as it is).
 */
export async function mapGlobally(engine: Engine, input: MappingInput, rotations: ReadonlyMap<number, readonly number[]>, seed: number) {
  const options = { seed, snapshot_frames_freq: null };
  const mapping = new IncrementalMapping(engine, input, options);
  try {
    const reachable = mapping.progress().imagesReachable;
    // The view graph's image ids are the engine's image indices plus one.
    mapping.globalPosition(new Map([...rotations].map(([id, q]) => [id - 1, q])), "explicit_scale");
    mapping.globalRefine("explicit_scale");
    let model = mapping.models()[0];
    const shortfall = globalModelShortfall(model?.images.length ?? 0, reachable, model?.meanReprojectionError ?? Infinity);
    // As the map executor: the images a model that is not poor left out registered into it incrementally.
    if (model && !shortfall && model.images.length < reachable) model = (await extendModel(engine, input, options, model)) ?? model;
    return { models: model ? [model] : [], shortfall };
  } finally {
    mapping.free();
  }
}

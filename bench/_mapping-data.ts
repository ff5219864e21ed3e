/**
 * @module The inputs of the mapping and verify benchmarks: keypoints and raw matches of a shared
 * set as the runner computes them (SIFT, exhaustive pairs, brute-force matching; cached per
 * engine build in bench/results/cache/), and the `verify` executor's call on every pair.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Engine } from "../engine-wasm/ts/engine";
import { type TwoViewResult, verifyTwoView } from "../engine-wasm/ts/two-view";
import { type DatasetCameras, datasetCameras, twoViewCamera } from "../browser-runtime/stages/cameras";
import { decodeImage } from "../browser-runtime/decode/node";
import { mappingPairs } from "../browser-runtime/stages/view-graph";
import { verifiedPair } from "../browser-runtime/runner/executors/verify";
import type { MappingPair } from "../engine-wasm/ts/mapping";
import { extractFeatures } from "../browser-runtime/stages/extract";
import { matchFeatures } from "../browser-runtime/stages/match";
import { exhaustivePairs } from "../browser-runtime/stages/pairs";
import { readFocalLength35mm } from "../worker/services/exif-tags";
import { INTRINSICS } from "../scripts/reference-sets";
import { datasets, root } from "./_args";

export interface SetData {
  images: Array<{ name: string; width: number; height: number; xy: number[] }>;
  pairs: Array<{ image1: number; image2: number; matches: number[] }>;
}

const cacheDir = join(root, "bench/results/cache");
const cacheFile = (set: string, engineHash: string) => join(cacheDir, `${set}-${engineHash.slice(0, 16)}.json`);

/** Keypoints and raw matches as the runner computes them, cached per engine build. */
export async function featuresAndMatches(engine: Engine, set: string, engineHash: string): Promise<SetData> {
  const cache = cacheFile(set, engineHash);
  if (existsSync(cache)) return JSON.parse(readFileSync(cache, "utf8")) as SetData;
  const dir = join(datasets, set, "images");
  const names = readdirSync(dir).sort();
  const features = new Map<string, Uint8Array>();
  const images: SetData["images"] = [];
  for (const name of names) {
    const decoded = await decodeImage(join(dir, name));
    const result = extractFeatures(engine, decoded);
    features.set(name, result.bytes);
    const kp = result.features.keypoints;
    const xy: number[] = [];
    for (let k = 0; k < kp.length; k += 4) xy.push(kp[k]!, kp[k + 1]!);
    images.push({ name, width: decoded.width, height: decoded.height, xy });
  }
  const index = new Map(names.map((n, i) => [n, i]));
  const matched = matchFeatures(engine, { features, pairs: exhaustivePairs(names) }).pairs;
  const data: SetData = {
    images,
    pairs: matched.map((p) => ({ image1: index.get(p.imageName1)!, image2: index.get(p.imageName2)!, matches: Array.from(p.matches) })),
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
    .filter((f) => f.startsWith(`${set}-`) && f.endsWith(".json") && (!hashPrefix || f.startsWith(`${set}-${hashPrefix}`)))
    .map((f) => join(cacheDir, f));
  const file = files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  return file ? { file, data: JSON.parse(readFileSync(file, "utf8")) as SetData } : null;
}

/** The set's cameras as a job makes them: the tests' intrinsics mode, each photo's EXIF focal length as the service reads it. */
export async function setCameras(set: string, data: SetData): Promise<DatasetCameras> {
  const images = await Promise.all(
    data.images.map(async (im) => ({
      name: im.name,
      focal_length_35mm: await readFocalLength35mm(readFileSync(join(datasets, set, "images", im.name))),
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
): Promise<{ pairs: MappingPair[]; withInliers: number; dropped: number }> {
  const file = results.map((g, i) => verifiedPair(data.pairs[i]!.image1, data.pairs[i]!.image2, g));
  const keypoints = data.images.map((im) => ({ xy: im.xy }));
  return mappingPairs(file, cameras, keypoints, seed, async (batch) => batch.map((b) => verifyTwoView(engine, b)));
}

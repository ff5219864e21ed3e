/**
 * Issue 5's accuracy bars on the shared photo sets, with the COLMAP reference's own
 * observations standing in for our features until the SIFT path feeds the mapper: each
 * reference image's points2D are its keypoints, pairs are matched through shared
 * POINT3D_IDs, wrong matches are injected (10% per pair) and every pair is verified by
 * the two-view binding (two-view.ts) as the `verify` stage would. The mapper starts from
 * scratch: no reference pose is given and every camera starts as COLMAP does without
 * EXIF (SIMPLE_RADIAL, focal 1.2 x the larger side, principal point at the centre).
 * The result is aligned to the reference by a similarity (accuracy.ts).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { barFailures, compareToReference, parseColmapResultsTsv, referencePoses, type ImagePose } from "./accuracy";
import { readColmapTextModel, sharedObservations, type ColmapModel } from "./colmap-text";
import { loadEngine, type Engine } from "./engine";
import { IncrementalMapping, type MappedModel, type MappingInput } from "./mapping";
import { verifyTwoView } from "./two-view";

const DATASETS = new URL("../../../shared/datasets/", import.meta.url).pathname;
const OUTLIER_MATCH_RATIO = 0.1;

/** Deterministic pseudo-random numbers (mulberry32) for the injected outliers. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Mapping input from a reference model: its keypoints, true matches + outliers verified
 * by two-view geometry (inliers and type kept), default cameras.
 */
export function mappingInputFromReference(
  engine: Engine,
  reference: ColmapModel,
  outlierRatio = OUTLIER_MATCH_RATIO,
): { input: MappingInput; names: string[] } {
  const images = [...reference.images.values()].sort((a, b) => a.name.localeCompare(b.name));
  const cameraIds = [...new Set(images.map((im) => im.cameraId))];
  const cameras = cameraIds.map((id) => {
    const c = reference.cameras.get(id)!;
    return {
      model: "SIMPLE_RADIAL",
      width: c.width,
      height: c.height,
      params: [1.2 * Math.max(c.width, c.height), c.width / 2, c.height / 2, 0],
    };
  });
  const random = prng(5);
  const pairs: MappingInput["pairs"] = [];
  for (let i = 0; i < images.length; i += 1) {
    for (let j = i + 1; j < images.length; j += 1) {
      const matches = sharedObservations(images[i]!, images[j]!).flat();
      if (matches.length === 0) continue;
      const n1 = images[i]!.xys.length / 2,
        n2 = images[j]!.xys.length / 2;
      const numOutliers = Math.round((outlierRatio * matches.length) / 2);
      for (let k = 0; k < numOutliers; k += 1) matches.push(Math.floor(random() * n1), Math.floor(random() * n2));
      const size = (im: (typeof images)[number]) => reference.cameras.get(im.cameraId)!;
      const verified = verifyTwoView(engine, {
        keypoints1: images[i]!.xys,
        keypoints2: images[j]!.xys,
        camera1: { model: null, width: size(images[i]!).width, height: size(images[i]!).height },
        camera2: { model: null, width: size(images[j]!).width, height: size(images[j]!).height },
        matches,
        options: { seed: 1 },
      });
      pairs.push({ image1: i, image2: j, matches: Int32Array.from(verified.inlier_matches.flat()), type: verified.type });
    }
  }
  return {
    input: {
      cameras,
      images: images.map((im) => ({ camera: cameraIds.indexOf(im.cameraId), keypoints: im.xys })),
      pairs,
    },
    names: images.map((im) => im.name),
  };
}

export function posesOf(model: MappedModel, names: string[]): ImagePose[] {
  return model.images.map((im) => ({ name: names[im.image]!, qvec: im.qvec, tvec: im.tvec }));
}

async function colmapMeanReprojectionError(set: string): Promise<number> {
  const fs = await import("node:fs/promises");
  const rows = parseColmapResultsTsv(await fs.readFile(`${DATASETS}${set}/reference/colmap-3.8-results.tsv`, "utf8"));
  return rows[0]!.mean_reproj_px as number;
}

describe("incremental mapping on the shared sets (reference observations as features)", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
  });

  for (const set of ["sacre-coeur", "sceaux-castle"]) {
    it(`${set}: every image registered, within issue 5's bars`, async () => {
      const reference = await readColmapTextModel(`${DATASETS}${set}/reference`);
      const { input, names } = mappingInputFromReference(engine, reference);
      const mapping = new IncrementalMapping(engine, input, { seed: 1, snapshot_frames_freq: null });
      const started = performance.now();
      let models: MappedModel[];
      try {
        models = mapping.run();
      } finally {
        mapping.free();
      }
      const seconds = (performance.now() - started) / 1000;
      const model = models.reduce((a, b) => (b.images.length > a.images.length ? b : a));
      const report = compareToReference(posesOf(model, names), referencePoses(reference));
      const colmapError = await colmapMeanReprojectionError(set);
      console.log(
        `${set}: ${report.numRegistered}/${report.numReferenceImages} registered in ${seconds.toFixed(1)} s, ` +
          `${model.points.length / 3} points, rotation median ${report.medianRotationErrorDeg.toFixed(3)} / max ${report.maxRotationErrorDeg.toFixed(3)} deg, ` +
          `centre max ${(100 * report.maxCenterErrorFraction).toFixed(3)}% of extent, ` +
          `reprojection ${model.meanReprojectionError.toFixed(4)} px (COLMAP ${colmapError})`,
      );
      expect(barFailures(report, model.meanReprojectionError, colmapError)).toEqual([]);
    });
  }
});

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
import { barFailures, compareToReference, parseColmapResultsTsv, referencePoses } from "./accuracy";
import { readColmapTextModel } from "./colmap-text";
import { loadEngine, type Engine } from "./engine";
import { IncrementalMapping, type MappedModel } from "./mapping";
import { mappingInputFromReference, posesOf } from "./testing/reference-input";

const DATASETS = new URL("../../../shared/datasets/", import.meta.url).pathname;
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

/**
 * `npm run bench -- mapping [--sets a,b] [--seed N]`: wall and CPU time of two-view
 * verification and incremental mapping on the shared sets, ours (the WASM engine, one thread)
 * beside COLMAP 3.8 (CPU, one thread) in the same invocation, with the accuracy of every model
 * against the set's COLMAP reference (engine-wasm/ts/accuracy.ts, issue 5's bars). Writes
 * bench/results/mapping.json.
 *
 * Both sides start from our features and raw matches (bench/_mapping-data.ts):
 * - verify: our `verify` per pair vs `colmap matches_importer --match_type raw` (which imports
 *   and verifies);
 * - map: our mapper vs `colmap mapper` fed our verified matches (the same input: isolates the
 *   mapper), and `colmap mapper` on COLMAP's own verification of the same raw matches.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AccuracyReport,
  type ImagePose,
  barFailures,
  compareToReference,
  parseColmapResultsTsv,
  referencePoses,
} from "../engine-wasm/ts/accuracy";
import { readColmapTextModel } from "../engine-wasm/ts/colmap-text";
import { IncrementalMapping, type MappingInput } from "../engine-wasm/ts/mapping";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { arg, cpuSeconds, datasets, openSiftBench, root } from "./_args";
import { type ColmapDatabaseInput, largestColmapModel, runColmapMapper, runTimed, writeColmapDatabase, writeRawMatches } from "./_colmap";
import { featuresAndMatches, mapStagePairs, setCameras, verifyPairs } from "./_mapping-data";

const sets = arg("sets", "sacre-coeur,sceaux-castle,opensfm-lund").split(",");
const seed = Number(arg("seed", "0"));

interface Timed {
  wallSeconds: number;
  cpuSeconds: number;
}

function timed<T>(f: () => T): { value: T } & Timed {
  const wall = performance.now();
  const cpu = cpuSeconds();
  const value = f();
  return { value, wallSeconds: (performance.now() - wall) / 1000, cpuSeconds: cpuSeconds() - cpu };
}

interface Accuracy {
  registered: string;
  medianRotationDeg: number;
  maxCenterPercent: number;
  meanReprojPx: number;
  points: number;
  failures: string[];
}

function accuracyOf(report: AccuracyReport, meanReprojPx: number, points: number, colmapReproj: number): Accuracy {
  return {
    registered: `${report.numRegistered}/${report.numReferenceImages}`,
    medianRotationDeg: report.medianRotationErrorDeg,
    maxCenterPercent: 100 * report.maxCenterErrorFraction,
    meanReprojPx: meanReprojPx,
    points,
    failures: barFailures(report, meanReprojPx, colmapReproj),
  };
}

/** `colmap mapper` on a database: its time and its largest model's accuracy (null: no model). */
async function colmapMapper(db: string, set: string, work: string, referencePoses_: ImagePose[], colmapReproj: number) {
  const { sparse, timing } = runColmapMapper(db, join(datasets, set, "images"), work);
  if (!timing) return { timing: null, accuracy: null };
  const text = largestColmapModel(sparse);
  if (!text) return { timing, accuracy: null };
  const model = await readColmapTextModel(text);
  const errors = [...model.points3D.values()].map((p) => p.error);
  const reproj = errors.reduce((a, b) => a + b, 0) / Math.max(1, errors.length);
  return { timing, accuracy: accuracyOf(compareToReference(referencePoses(model), referencePoses_), reproj, errors.length, colmapReproj) };
}

const { engine, haveColmap } = await openSiftBench(false);
const engineHash = (await localRuntimeVersions())["engine-wasm"]!;
type Timing = { wallSeconds: number; cpuSeconds: number };
type ColmapRun = Awaited<ReturnType<typeof colmapMapper>>;
interface Row {
  set: string;
  images: number;
  pairs: number;
  verifiedPairs: number;
  ours: { verify: Timing; map: Timing; accuracy: Accuracy };
  colmap?: { verify: ReturnType<typeof runTimed>; mapOurVerified: ColmapRun; mapColmapVerified: ColmapRun };
}
const results: Row[] = [];
/** COLMAP 3.8's figures on the set: beside the reference, or (gum, whose reference is the authors') with COLMAP's model. */
const colmapResultsPath = (set: string) =>
  [join(datasets, set, "reference/colmap-3.8-results.tsv"), join(datasets, set, "reference/colmap-3.8/colmap-3.8-results.tsv")].find((f) =>
    existsSync(f),
  )!;
for (const set of sets) {
  const data = await featuresAndMatches(engine, set, engineHash);
  const setCams = await setCameras(set, data);
  const { cameras } = setCams;
  const cameraOf = (i: number) => setCams.cameraOfImage[i]!;
  const reference = await readColmapTextModel(join(datasets, set, "reference"), { points3D: false });
  const refPoses = referencePoses(reference);
  const colmapReproj = Number(parseColmapResultsTsv(readFileSync(colmapResultsPath(set), "utf8"))[0]!.mean_reproj_px);

  // Ours: verify (the `verify` executor's call per pair), then map.
  const verify = timed(() =>
    verifyPairs(engine, data, setCams, seed).map((g, i) => ({
      image1: data.pairs[i]!.image1,
      image2: data.pairs[i]!.image2,
      type: g.type,
      matches: g.inlier_matches.flat(),
      geometry: g,
    })),
  );
  const verified = verify.value.filter((p) => p.matches.length > 0);
  // The map stage's pairs (its view-graph filter, stages/view-graph.ts), timed with the mapping.
  const wallStart = performance.now();
  const cpuStart = cpuSeconds();
  const mapped = await mapStagePairs(
    engine,
    data,
    setCams,
    verify.value.map((v) => v.geometry),
    seed,
  );
  const input: MappingInput = {
    cameras: cameras.map((c) => ({ ...c })),
    images: data.images.map((im, i) => ({ camera: cameraOf(i), keypoints: Float64Array.from(im.xy) })),
    pairs: mapped.pairs,
  };
  const mapRun = timed(() => {
    const mapping = new IncrementalMapping(engine, input, { seed, snapshot_frames_freq: null });
    try {
      return mapping.run();
    } finally {
      mapping.free();
    }
  });
  const map = { ...mapRun, wallSeconds: (performance.now() - wallStart) / 1000, cpuSeconds: cpuSeconds() - cpuStart };
  const model = map.value.reduce((a, b) => (b.images.length > a.images.length ? b : a));
  const ours = accuracyOf(
    compareToReference(
      model.images.map((im) => ({ name: data.images[im.image]!.name, qvec: im.qvec, tvec: im.tvec })),
      refPoses,
    ),
    model.meanReprojectionError,
    model.points.length / 3,
    colmapReproj,
  );

  const row: Row = {
    set,
    images: data.images.length,
    pairs: data.pairs.length,
    verifiedPairs: verified.length,
    ours: {
      verify: { wallSeconds: verify.wallSeconds, cpuSeconds: verify.cpuSeconds },
      map: { wallSeconds: map.wallSeconds, cpuSeconds: map.cpuSeconds },
      accuracy: ours,
    },
  };
  if (haveColmap) {
    const work = mkdtempSync(join(tmpdir(), `bench-mapping-${set}-`));
    const names = data.images.map((im) => im.name);
    const dbInput: ColmapDatabaseInput = {
      cameras: cameras.map((c) => ({ width: c.width, height: c.height, params: c.params, hasPriorFocalLength: c.hasPriorFocalLength })),
      images: data.images.map((im, i) => ({ name: im.name, camera: cameraOf(i), keypoints: im.xy })),
      pairs: [],
    };
    // COLMAP verifies our raw matches, then maps its own verification.
    const ownDb = join(work, "colmap-verified.db");
    writeColmapDatabase(ownDb, dbInput);
    const rawFile = join(work, "matches.txt");
    writeRawMatches(rawFile, names, data.pairs);
    const colmapVerify = runTimed("colmap", [
      "matches_importer",
      "--database_path",
      ownDb,
      "--match_list_path",
      rawFile,
      "--match_type",
      "raw",
      "--SiftMatching.use_gpu",
      "0",
      "--SiftMatching.num_threads",
      "1",
    ]);
    const own = await colmapMapper(ownDb, set, work, refPoses, colmapReproj);
    // COLMAP maps our verified matches: the same input as our mapper.
    const sameDb = join(work, "our-verified.db");
    writeColmapDatabase(sameDb, {
      ...dbInput,
      pairs: verified.map((p) => ({ image1: p.image1, image2: p.image2, verified: { type: p.type, matches: p.matches } })),
    });
    const same = await colmapMapper(sameDb, set, work, refPoses, colmapReproj);
    rmSync(work, { recursive: true, force: true });
    row.colmap = { verify: colmapVerify, mapOurVerified: same, mapColmapVerified: own };
  }
  results.push(row);
  console.log(`${set}: done`);
}

const f = (v: number | undefined | null, digits = 1) => (v === undefined || v === null || !Number.isFinite(v) ? "-" : v.toFixed(digits));
const acc = (a: Accuracy | null | undefined) =>
  a
    ? `${a.registered} ${f(a.medianRotationDeg, 2)}deg ${f(a.maxCenterPercent, 2)}% ${f(a.meanReprojPx, 3)}px${a.failures.length ? " FAIL" : ""}`
    : "no model";
console.log(
  `\nVerify and map from the same features and raw matches (WASM, 1 thread, vs COLMAP 3.8 CPU, 1 thread); load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${process.env.HOSTNAME ?? "this machine"}`,
);
console.log(
  "set            | pairs | verify ours s | verify COLMAP s | ratio | map ours s | COLMAP map (our matches) s | ratio | COLMAP map (its verify) s | accuracy ours | COLMAP (our matches) | COLMAP (its verify)",
);
for (const r of results) {
  const c = r.colmap;
  console.log(
    [
      r.set.padEnd(14),
      String(r.pairs).padStart(5),
      f(r.ours.verify.wallSeconds).padStart(13),
      f(c?.verify.wallSeconds).padStart(15),
      f(c ? r.ours.verify.wallSeconds / c.verify.wallSeconds : undefined, 2).padStart(5),
      f(r.ours.map.wallSeconds).padStart(10),
      f(c?.mapOurVerified.timing?.wallSeconds).padStart(26),
      f(c?.mapOurVerified.timing ? r.ours.map.wallSeconds / c.mapOurVerified.timing.wallSeconds : undefined, 2).padStart(5),
      f(c?.mapColmapVerified.timing?.wallSeconds).padStart(25),
      acc(r.ours.accuracy),
      c ? acc(c.mapOurVerified.accuracy) : "-",
      c ? acc(c.mapColmapVerified.accuracy) : "-",
    ].join(" | "),
  );
}
console.log(
  "(accuracy: registered, median rotation error, worst centre error as % of the extent, mean reprojection error; FAIL: misses a bar of issue 5)",
);
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/mapping.json"),
  JSON.stringify({ date: new Date().toISOString(), seed, loadAverage: loadavg(), results }, null, 2),
);
console.log("wrote bench/results/mapping.json");

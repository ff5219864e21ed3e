/**
 * `npm run bench -- mapping [--sets a,b] [--pairs exhaustive,sequential] [--mappers incremental,global] [--seed N] [--skip-colmap]
 * [--view-graph-filter off]`:
 * wall and CPU time of two-view verification and mapping on the shared sets, ours (the WASM engine, one thread)
 * beside COLMAP 3.8 (CPU, one thread) in the same invocation, with the accuracy of every model against the set's
 * reference (engine-wasm/ts/accuracy.ts, issue 5's bars; the worst photo's rotation error too). Writes
 * bench/results/mapping.json.
 *
 * Both sides start from our features and raw matches (bench/_mapping-data.ts) of each pair strategy (exhaustive;
 * sequential too for sets of video frames, as gum):
 * - verify: our `verify` per pair vs `colmap matches_importer --match_type raw` (which imports
 *   and verifies);
 * - map: our incremental and global mappers (the `incremental` and `global` recipes, after the map stage's
 *   view-graph filter) vs `colmap mapper` fed our verified matches (the same input: isolates the
 *   mapper), and `colmap mapper` on COLMAP's own verification of the same raw matches.
 * On the sets of `--colmap-pipeline` (default gum; `none`: no set) COLMAP's whole pipeline runs too (its own extraction, exhaustive
 * matching and mapper, one thread), beside ours from photos to model (extraction and matching as timed when the
 * features and matches were computed, one thread): issue 18's wall-time ratio.
 * `--view-graph-filter off` gives the incremental mapper every verified pair with inliers instead of the filter's: how
 * robust the mapper is on its own where the filter cannot judge (pairs without a relative rotation).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
import { IncrementalMapping, type MappedModel, type MappingInput } from "../engine-wasm/ts/mapping";
import type { Engine } from "../engine-wasm/ts/engine";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { INTRINSICS, colmapResultsFile } from "../scripts/reference-sets";
import { arg, cpuSeconds, datasets, openSiftBench, root } from "./_args";
import {
  type ColmapDatabaseInput,
  type ProcessTiming,
  colmapPipeline,
  largestColmapModel,
  runColmapMapper,
  runTimed,
  writeColmapDatabase,
  writeRawMatches,
} from "./_colmap";
import { type PairStrategy, featuresAndMatches, mapGlobally, mapStagePairs, setCameras, verifyPairs } from "./_mapping-data";

/** Sets whose photos are video frames in name order: matched with sequential pairs as well as exhaustive ones. */
const SEQUENCES = new Set(["gum"]);
type MapperKind = "incremental" | "global";

const sets = arg("sets", "sacre-coeur,sceaux-castle,opensfm-lund,gum").split(",");
const pairsArg = arg("pairs", "");
const strategiesOf = (set: string): PairStrategy[] =>
  pairsArg ? (pairsArg.split(",") as PairStrategy[]) : SEQUENCES.has(set) ? ["exhaustive", "sequential"] : ["exhaustive"];
const mappers = arg("mappers", "incremental,global").split(",") as MapperKind[];
const pipelineSets = new Set(arg("colmap-pipeline", "gum").split(",").filter(Boolean));
const seed = Number(arg("seed", "0"));
const viewGraphFilter = arg("view-graph-filter", "on") !== "off";

interface Timed {
  wallSeconds: number;
  cpuSeconds: number;
}

async function timed<T>(f: () => T | Promise<T>): Promise<{ value: T } & Timed> {
  const wall = performance.now();
  const cpu = cpuSeconds();
  const value = await f();
  return { value, wallSeconds: (performance.now() - wall) / 1000, cpuSeconds: cpuSeconds() - cpu };
}

interface Accuracy {
  registered: string;
  medianRotationDeg: number;
  maxRotationDeg: number;
  maxCenterPercent: number;
  meanReprojPx: number;
  points: number;
  /** Photos more than 5 degrees from the reference (folded ones). */
  over5Deg: number;
  failures: string[];
}

/** A model's accuracy against the reference; `report` null when it has fewer than 3 images (none to align). */
function accuracyOf(
  report: AccuracyReport | null,
  meanReprojPx: number,
  points: number,
  colmapReproj: number,
  { registered, referenceImages }: { registered: number; referenceImages: number },
): Accuracy {
  if (!report)
    return {
      registered: `${registered}/${referenceImages}`,
      medianRotationDeg: NaN,
      maxRotationDeg: NaN,
      maxCenterPercent: NaN,
      meanReprojPx,
      points,
      over5Deg: 0,
      failures: [`${registered} images registered: too few to align`],
    };
  return {
    registered: `${report.numRegistered}/${report.numReferenceImages}`,
    medianRotationDeg: report.medianRotationErrorDeg,
    maxRotationDeg: report.maxRotationErrorDeg,
    maxCenterPercent: 100 * report.maxCenterErrorFraction,
    meanReprojPx: meanReprojPx,
    points,
    over5Deg: report.perImage.filter((p) => p.rotationErrorDeg > 5).length,
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
  const poses = referencePoses(model);
  return {
    timing,
    accuracy: accuracyOf(poses.length >= 3 ? compareToReference(poses, referencePoses_) : null, reproj, errors.length, colmapReproj, {
      registered: poses.length,
      referenceImages: referencePoses_.length,
    }),
  };
}

/** Our mapper of `kind` on the map stage's pairs: the incremental mapper to the end, or the global mapper (`mapGlobally`). */
async function mapOurs(engine: Engine, kind: MapperKind, input: MappingInput, rotations: ReadonlyMap<number, readonly number[]>) {
  if (kind === "global") return mapGlobally(engine, input, rotations, seed);
  const mapping = new IncrementalMapping(engine, input, { seed, snapshot_frames_freq: null });
  try {
    return { models: mapping.run(), shortfall: null };
  } finally {
    mapping.free();
  }
}

const { engine, haveColmap: colmapInstalled } = await openSiftBench(false);
// Ours alone (a mapper change measured before and after): COLMAP's columns take several times as long on gum.
const haveColmap = colmapInstalled && !process.argv.includes("--skip-colmap");
const engineHash = (await localRuntimeVersions())["engine-wasm"]!;
type ColmapRun = Awaited<ReturnType<typeof colmapMapper>>;
interface OurMap {
  mapper: MapperKind;
  /** The view-graph filter and the mapper. */
  map: Timed;
  accuracy: Accuracy;
  /** Global mapper: why the map executor would map again incrementally (null: it keeps the global model). */
  fallback: string | null;
}
interface Row {
  set: string;
  pairStrategy: PairStrategy;
  images: number;
  pairs: number;
  verifiedPairs: number;
  /** Wall seconds of our extraction and matching (one thread) when the cached features and matches were computed. */
  extractMatch: { extractSeconds: number; matchSeconds: number } | null;
  ours: { verify: Timed; maps: OurMap[] };
  colmap?: { verify: ReturnType<typeof runTimed>; mapOurVerified: ColmapRun; mapColmapVerified: ColmapRun };
}
const results: Row[] = [];
/** COLMAP's own pipeline (extraction, exhaustive matching, mapper; one thread) per set of `--colmap-pipeline`. */
const pipelines: Array<{ set: string; timing: Record<"extract" | "match" | "map", ProcessTiming & { error?: string }> }> = [];
for (const set of sets) {
  const reference = await readColmapTextModel(join(datasets, set, "reference"), { points3D: false });
  const refPoses = referencePoses(reference);
  const colmapReproj = Number(parseColmapResultsTsv(readFileSync(colmapResultsFile(set), "utf8"))[0]!.mean_reproj_px);
  for (const pairStrategy of strategiesOf(set)) {
    const data = await featuresAndMatches(engine, set, engineHash, pairStrategy);
    const setCams = await setCameras(set, data);
    const { cameras } = setCams;
    const cameraOf = (i: number) => setCams.cameraOfImage[i]!;

    // Ours: verify (the `verify` executor's call per pair), then map.
    const verify = await timed(() =>
      verifyPairs(engine, data, setCams, seed).map((g, i) => ({
        image1: data.pairs[i]!.image1,
        image2: data.pairs[i]!.image2,
        type: g.type,
        matches: g.inlier_matches.flat(),
        geometry: g,
      })),
    );
    const verified = verify.value.filter((p) => p.matches.length > 0);
    // The map stage's pairs (its view-graph filter, stages/view-graph.ts), timed with each mapping.
    const filter = { wall: performance.now(), cpu: cpuSeconds() };
    const mapped = await mapStagePairs(
      engine,
      data,
      setCams,
      verify.value.map((v) => v.geometry),
      seed,
    );
    const filterTime = { wallSeconds: (performance.now() - filter.wall) / 1000, cpuSeconds: cpuSeconds() - filter.cpu };
    const input: MappingInput = {
      cameras: viewGraphFilter ? mapped.cameras : cameras.map((c) => ({ ...c })),
      images: data.images.map((im, i) => ({ camera: cameraOf(i), keypoints: Float64Array.from(im.xy) })),
      pairs: viewGraphFilter
        ? mapped.pairs
        : verified.map((p) => ({ image1: p.image1, image2: p.image2, matches: Int32Array.from(p.matches), type: p.type })),
    };
    const maps: OurMap[] = [];
    for (const mapper of mappers) {
      const run = await timed(() => mapOurs(engine, mapper, input, mapped.rotations));
      const model = run.value.models.reduce<MappedModel | null>((a, b) => (a && a.images.length >= b.images.length ? a : b), null);
      const poses = (model?.images ?? []).map((im) => ({ name: data.images[im.image]!.name, qvec: im.qvec, tvec: im.tvec }));
      // The global mapper may place nothing (no rotations: the map executor then maps incrementally).
      const accuracy = accuracyOf(
        poses.length >= 3 ? compareToReference(poses, refPoses) : null,
        model?.meanReprojectionError ?? NaN,
        (model?.points.length ?? 0) / 3,
        colmapReproj,
        { registered: poses.length, referenceImages: refPoses.length },
      );
      maps.push({
        mapper,
        map: { wallSeconds: filterTime.wallSeconds + run.wallSeconds, cpuSeconds: filterTime.cpuSeconds + run.cpuSeconds },
        accuracy,
        fallback: run.value.shortfall,
      });
    }

    const row: Row = {
      set,
      pairStrategy,
      images: data.images.length,
      pairs: data.pairs.length,
      verifiedPairs: verified.length,
      extractMatch: data.timing ?? null,
      ours: { verify: { wallSeconds: verify.wallSeconds, cpuSeconds: verify.cpuSeconds }, maps },
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
    console.log(`${set} (${pairStrategy} pairs): done`);
  }
  if (haveColmap && pipelineSets.has(set)) {
    pipelines.push({ set, timing: colmapPipeline(join(datasets, set, "images"), INTRINSICS[set] !== "per_image", 1) });
    console.log(`${set}: COLMAP's pipeline done`);
  }
}

const f = (v: number | undefined | null, digits = 1) => (v === undefined || v === null || !Number.isFinite(v) ? "-" : v.toFixed(digits));
const acc = (a: Accuracy | null | undefined) =>
  a
    ? `${a.registered} ${f(a.medianRotationDeg, 2)}/${f(a.maxRotationDeg, 1)}deg (${a.over5Deg} > 5deg) ${f(a.maxCenterPercent, 2)}% ${f(a.meanReprojPx, 3)}px${a.failures.length ? " FAIL" : ""}`
    : "no model";
console.log(
  `\nVerify and map from the same features and raw matches (WASM, 1 thread, vs COLMAP 3.8 CPU, 1 thread); load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(
      " ",
    )} on ${process.env.HOSTNAME ?? "this machine"}${viewGraphFilter ? "" : "; view-graph filter off: every verified pair with inliers to our mapper"}`,
);
console.log(
  "set            | pairs      | pairs | verify ours s | verify COLMAP s | ratio | mapper      | map ours s | COLMAP map (our matches) s | ratio | COLMAP map (its verify) s | accuracy ours | COLMAP (our matches) | COLMAP (its verify)",
);
for (const r of results) {
  const c = r.colmap;
  for (const m of r.ours.maps) {
    console.log(
      [
        r.set.padEnd(14),
        r.pairStrategy.padEnd(10),
        String(r.pairs).padStart(5),
        f(r.ours.verify.wallSeconds).padStart(13),
        f(c?.verify.wallSeconds).padStart(15),
        f(c ? r.ours.verify.wallSeconds / c.verify.wallSeconds : undefined, 2).padStart(5),
        m.mapper.padEnd(11),
        f(m.map.wallSeconds).padStart(10),
        f(c?.mapOurVerified.timing?.wallSeconds).padStart(26),
        f(c?.mapOurVerified.timing ? m.map.wallSeconds / c.mapOurVerified.timing.wallSeconds : undefined, 2).padStart(5),
        f(c?.mapColmapVerified.timing?.wallSeconds).padStart(25),
        acc(m.accuracy) + (m.fallback ? ` (the executor falls back: ${m.fallback})` : ""),
        c ? acc(c.mapOurVerified.accuracy) : "-",
        c ? acc(c.mapColmapVerified.accuracy) : "-",
      ].join(" | "),
    );
  }
}
console.log(
  "(accuracy: registered, median/max rotation error, worst centre error as % of the extent, mean reprojection error; FAIL: misses a bar of issue 5)",
);
if (pipelines.length) {
  console.log("\nPhotos to model, one thread each side: ours (extraction + matching + verification + mapping) vs COLMAP 3.8's pipeline");
  console.log("set            | pairs      | mapper      | ours s | COLMAP s (extract + exhaustive match + map) | ratio");
  for (const { set, timing } of pipelines) {
    const colmapWall = timing.extract.wallSeconds + timing.match.wallSeconds + timing.map.wallSeconds;
    for (const r of results.filter((x) => x.set === set && x.extractMatch)) {
      for (const m of r.ours.maps) {
        const ours = r.extractMatch!.extractSeconds + r.extractMatch!.matchSeconds + r.ours.verify.wallSeconds + m.map.wallSeconds;
        console.log(
          [
            set.padEnd(14),
            r.pairStrategy.padEnd(10),
            m.mapper.padEnd(11),
            f(ours).padStart(6),
            `${f(colmapWall)} (${f(timing.extract.wallSeconds)} + ${f(timing.match.wallSeconds)} + ${f(timing.map.wallSeconds)}${timing.map.error ? `, ${timing.map.error}` : ""})`.padStart(
              43,
            ),
            f(ours / colmapWall, 2).padStart(5),
          ].join(" | "),
        );
      }
    }
  }
  console.log("(ours: extraction and matching as timed when bench/results/cache/ was filled, verification and mapping in this run)");
}
mkdirSync(join(root, "bench/results"), { recursive: true });
writeFileSync(
  join(root, "bench/results/mapping.json"),
  JSON.stringify({ date: new Date().toISOString(), seed, loadAverage: loadavg(), results, colmapPipelines: pipelines }, null, 2),
);
console.log("wrote bench/results/mapping.json");

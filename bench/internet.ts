/**
 * `npx tsx bench/internet.ts [--sets a,b] [--subset K] [--seed N] [--focal-ratio R] [--colmap]`: the mapper under
 * Internet-collection conditions (issue 23) on the shared sets: per-image SIMPLE_RADIAL cameras
 * with EXIF stripped (no prior focal length), every K-th photo (a sparser, wider-baseline set),
 * features and raw matches as the runner computes them (bench/_mapping-data.ts, cached) and our
 * verification. Reports the models built (registered photos each), the models joined by shared
 * photos (the map executor's root), wall time and accuracy against the set's reference (the photos
 * more than 5 deg or 10% of the scene off named: folded ones); with
 * `--colmap`, `colmap mapper` (3.8, one thread) on the same verified matches and cameras.
 * `--focal-ratio R` starts the mapper's cameras at R times the larger image side instead of the
 * guess without EXIF (1.2; still without a prior, so refined): what a better initial focal
 * length would give (e.g. opensfm-lund's true 728 px is 0.711 of 1024); with `--exif` that start is
 * the cameras' prior focal length, as EXIF gives it (the mapper then keeps it at registration and
 * bundle adjustment refines it). The lines print the
 * initial focal lengths and the largest model's. `--online-sizes` gives the photos the varied sizes
 * and orientations of photos found online: each scaled by a random factor in [0.4, 1] and half of
 * them turned a quarter (keypoints moved to match; the reference poses turned with them).
 * `--zoomed` mixes devices of one aspect ratio: half of the photos cropped about their centre to a
 * random fraction in [0.5, 0.9] of each side (a longer lens: the focal length in pixels stays, its
 * ratio to the larger side grows by up to 2x; keypoints outside the crop and their matches dropped).
 * With `--exif-uncropped`, a cropped photo keeps its original's EXIF (as photo editors do): its
 * 35 mm equivalent focal length, read at the cropped size, is short by the crop fraction.
 * `--exif-missing K` takes the EXIF of every K-th photo away (a collection of several sources, some without);
 * `--exif-missing-first N` that of the first N photos in name order (one source without, its photos of one part of the place).
 * `--global` maps with the global mapper (`mapGlobally`) instead of the incremental one.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Quat, compareToReference, quatMul, referencePoses, rotate } from "../engine-wasm/ts/accuracy";
import { readColmapTextModel } from "../engine-wasm/ts/colmap-text";
import { mulberry32 } from "../engine-wasm/ts/testing/synthetic-texture";
import { IncrementalMapping, type MappedModel, type MappingInput } from "../engine-wasm/ts/mapping";
import { localRuntimeVersions } from "../browser-runtime/runner/node-host";
import { type InitialCamera, datasetCameras, withFocalLength } from "../browser-runtime/stages/cameras";
import { joinSubModels } from "../browser-runtime/stages/merge";
import { modelFiles } from "../browser-runtime/stages/snapshot";
import { decodePoints } from "../protocol/wire/points";
import { arg, datasets, openSiftBench } from "./_args";
import { largestColmapModel, runColmapMapper, writeColmapDatabase } from "./_colmap";
import { type SetData, cachedSetData, featuresAndMatches, mapGlobally, mapStagePairs, verifyPairs } from "./_mapping-data";

const sets = arg("sets", "sacre-coeur,sceaux-castle,opensfm-lund").split(",");
const subset = Number(arg("subset", "1"));
const seed = Number(arg("seed", "0"));
const withColmap = process.argv.includes("--colmap");
const focalRatio = arg("focal-ratio", "");
const exif = process.argv.includes("--exif");
const onlineSizes = process.argv.includes("--online-sizes");
const zoom = process.argv.includes("--zoomed");
const exifUncropped = process.argv.includes("--exif-uncropped");
const exifMissing = Number(arg("exif-missing", "0"));
const exifMissingFirst = Number(arg("exif-missing-first", "0"));
const globalMapper = process.argv.includes("--global");

/** Every `k`-th photo of the set and the raw matches among them. */
function everyKth(data: SetData, k: number): SetData {
  const keep = data.images.map((_, i) => i).filter((i) => i % k === 0);
  const index = new Map(keep.map((i, j) => [i, j]));
  return {
    images: keep.map((i) => data.images[i]!),
    pairs: data.pairs
      .filter((p) => index.has(p.image1) && index.has(p.image2))
      .map((p) => ({ ...p, image1: index.get(p.image1)!, image2: index.get(p.image2)! })),
  };
}

/** A quarter turn of the image (x' = height - y, y' = x) turns its camera about its axis: (X, Y, Z) -> (-Y, X, Z). */
const QUARTER_TURN: Quat = [Math.SQRT1_2, 0, 0, Math.SQRT1_2];

/** The photos as found online: each scaled by a random factor in [0.4, 1], half of them turned a quarter; the names turned. */
function asFoundOnline(data: SetData, seed: number): { data: SetData; turned: Set<string> } {
  const rnd = mulberry32(1000 + seed);
  const turned = new Set<string>();
  const images = data.images.map((im) => {
    const s = 0.4 + 0.6 * rnd();
    const [w, h] = [Math.round(im.width * s), Math.round(im.height * s)];
    const xy = im.xy.map((v, k) => v * (k % 2 ? h / im.height : w / im.width));
    if (rnd() < 0.5) return { ...im, width: w, height: h, xy };
    turned.add(im.name);
    return { ...im, width: h, height: w, xy: xy.map((_, k) => (k % 2 ? xy[k - 1]! : h - xy[k + 1]!)) };
  });
  return { data: { ...data, images }, turned };
}

/** Half of the photos cropped about their centre (see --zoomed); the names cropped, with their fraction. */
function zoomed(data: SetData, seed: number): { data: SetData; cropped: Map<string, number> } {
  const rnd = mulberry32(2000 + seed);
  const cropped = new Map<string, number>();
  // Per image: new keypoint index of each old one, or -1 outside the crop.
  const kept: number[][] = [];
  const images = data.images.map((im) => {
    const z = rnd() < 0.5 ? 0.5 + 0.4 * rnd() : 1;
    const [w, h] = [Math.round(im.width * z), Math.round(im.height * z)];
    const [x0, y0] = [(im.width - w) / 2, (im.height - h) / 2];
    const index: number[] = [];
    const xy: number[] = [];
    for (let k = 0; k < im.xy.length; k += 2) {
      const [x, y] = [im.xy[k]! - x0, im.xy[k + 1]! - y0];
      const inside = x >= 0 && y >= 0 && x < w && y < h;
      index.push(inside ? xy.length / 2 : -1);
      if (inside) xy.push(x, y);
    }
    kept.push(index);
    if (z < 1) cropped.set(im.name, z);
    return { ...im, width: w, height: h, xy };
  });
  const pairs = data.pairs.map((p) => {
    const matches: number[] = [];
    for (let k = 0; k < p.matches.length; k += 2) {
      const [a, b] = [kept[p.image1]![p.matches[k]!]!, kept[p.image2]![p.matches[k + 1]!]!];
      if (a >= 0 && b >= 0) matches.push(a, b);
    }
    return { ...p, matches };
  });
  return { data: { ...data, images, pairs }, cropped };
}

const { engine, haveColmap } = await openSiftBench(false);
const engineHash = (await localRuntimeVersions())["engine-wasm"]!;
const f = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : "-");

for (const set of sets) {
  const original = everyKth(cachedSetData(set)?.data ?? (await featuresAndMatches(engine, set, engineHash)), subset);
  const { data: resized, turned } = onlineSizes ? asFoundOnline(original, seed) : { data: original, turned: new Set<string>() };
  const { data, cropped } = zoom ? zoomed(resized, seed) : { data: resized, cropped: new Map<string, number>() };
  // EXIF stripped: no photo has a focal length; one camera per photo.
  const found = datasetCameras(
    {
      camera_model: "SIMPLE_RADIAL",
      intrinsics_mode: "per_image",
      images: data.images.map((im) => ({ name: im.name, focal_length_35mm: null })),
    },
    data.images,
  );
  // A cropped photo's focal length in pixels is its uncropped one's (see --zoomed). Per-image cameras: camera i is photo i's.
  const startAt = (c: InitialCamera, i: number) =>
    withFocalLength(c, (Number(focalRatio) * Math.max(c.width, c.height)) / (exifUncropped ? 1 : (cropped.get(data.images[i]!.name) ?? 1)));
  // With EXIF, verification and the view graph see the prior too.
  const withExif = (i: number) => i >= exifMissingFirst && (!exifMissing || i % exifMissing !== exifMissing - 1);
  const cams = focalRatio && exif ? { ...found, cameras: found.cameras.map((c, i) => (withExif(i) ? startAt(c, i) : c)) } : found;
  const results = verifyPairs(engine, data, cams, seed);
  const verified = results
    .map((g, i) => ({ image1: data.pairs[i]!.image1, image2: data.pairs[i]!.image2, type: g.type, matches: g.inlier_matches.flat() }))
    .filter((p) => p.matches.length > 0);
  // Timed from here as the map stage: what it gives the mapper (its view-graph filter included); COLMAP gets every verified pair.
  const wall = performance.now();
  const mapped = await mapStagePairs(engine, data, cams, results, seed);
  const input: MappingInput = {
    // With EXIF, the map stage's cameras: a prior its pairs contradict let go.
    cameras: focalRatio && !exif ? cams.cameras.map((c, i) => ({ ...startAt(c, i), hasPriorFocalLength: false })) : mapped.cameras,
    images: data.images.map((im, i) => ({ camera: cams.cameraOfImage[i]!, keypoints: Float64Array.from(im.xy) })),
    pairs: mapped.pairs,
  };
  const referenceModel = await readColmapTextModel(join(datasets, set, "reference"), { points3D: false });
  const reference = referencePoses(referenceModel);
  // Each photo's true focal length as a ratio of its larger side: the reference's, over the crop fraction.
  const trueRatio = new Map(
    [...referenceModel.images.values()].map((im) => {
      const c = referenceModel.cameras.get(im.cameraId)!;
      return [im.name, c.params[0]! / Math.max(c.width, c.height) / (cropped.get(im.name) ?? 1)];
    }),
  );
  const names = new Set(data.images.map((im) => im.name));
  const refPoses = reference
    .filter((r) => names.has(r.name))
    .map((r) => (turned.has(r.name) ? { ...r, qvec: quatMul(QUARTER_TURN, r.qvec), tvec: rotate(QUARTER_TURN, r.tvec) } : r));
  const describe = (poses: { name: string; qvec: [number, number, number, number]; tvec: [number, number, number] }[], reproj: number) => {
    if (poses.length < 3) return `${poses.length}/${refPoses.length} (too few to align) reproj ${f(reproj, 3)}px`;
    const r = compareToReference(poses, refPoses);
    // Photos more than 5 deg or 10% of the scene from the reference: misplaced (folded) ones, named.
    const off = r.perImage.filter((p) => p.rotationErrorDeg > 5 || p.centerErrorFraction > 0.1);
    const offNames = off.map((p) => `${p.name} ${f(p.rotationErrorDeg, 1)}deg ${f(100 * p.centerErrorFraction, 0)}%`);
    return `${r.numRegistered}/${refPoses.length} rot ${f(r.medianRotationErrorDeg)}/${f(r.maxRotationErrorDeg)}deg centre max ${f(100 * r.maxCenterErrorFraction)}% reproj ${f(reproj, 3)}px; ${off.length} off${off.length ? `: ${offNames.join(", ")}` : ""}`;
  };

  /** The incremental mapper step by step (checking its progress), or with `--global` the global mapper. */
  const mapOurs = async () => {
    if (globalMapper) {
      const { models, shortfall } = await mapGlobally(engine, input, mapped.rotations, seed);
      return { built: models, note: `global mapper${shortfall ? `, poor (${shortfall}): the map executor would map incrementally` : ""}` };
    }
    const mapping = new IncrementalMapping(engine, input, { seed, snapshot_frames_freq: null });
    try {
      let steps = 0;
      let progressWrong = 0;
      for (;;) {
        const p = mapping.progress();
        if (mapping.step(1) === "done") break;
        steps += 1;
        if (p.imagesHeld > p.imagesReachable) progressWrong += 1;
      }
      const progress = mapping.progress();
      return {
        built: mapping.models(),
        note: `${steps} steps; held ${progress.imagesHeld}/${progress.imagesReachable} reachable${progressWrong ? `, progress over total ${progressWrong} times` : ""}`,
      };
    } finally {
      mapping.free();
    }
  };
  const { built, note } = await mapOurs();
  const models = [...built].sort((a, b) => b.images.length - a.images.length);
  const mapSeconds = (performance.now() - wall) / 1000;
  const snapshotModels = models.map((m) => {
    const files = modelFiles(
      m,
      data.images.map((im, i) => ({ name: im.name, camera: cams.cameraOfImage[i]!, keypoints: Float64Array.from(im.xy) })),
    );
    return { cameras: files.cameras, images: files.images, points: decodePoints(files.points) };
  });
  const joined = joinSubModels(engine, snapshotModels);
  const joinSeconds = (performance.now() - wall) / 1000 - mapSeconds;
  const posesOf = (m: MappedModel) => m.images.map((im) => ({ name: data.images[im.image]!.name, qvec: im.qvec, tvec: im.tvec }));
  console.log(
    `${set} (every ${subset}: ${data.images.length} photos, ${verified.length} verified pairs (${mapped.dropped} dropped by the view graph${mapped.priorsLetGo ? `, ${mapped.priorsLetGo} EXIF priors let go` : ""}${mapped.calibrated ? `, ${mapped.calibrated} cameras calibrated by their partners` : ""}), per-image cameras, ${exif ? (exifMissing ? `EXIF but on every ${exifMissing}th` : "EXIF") + (exifMissingFirst ? ` but on the first ${exifMissingFirst}` : "") : "no EXIF"}${onlineSizes ? `, sizes as found online (${turned.size} turned)` : ""}${zoom ? `, ${cropped.size} cropped (zoomed${exifUncropped ? ", EXIF kept" : ""})` : ""}): ${models.length} model(s) [${built
      .map((m) => m.images.length)
      .join(", ")}] (in the order built) in ${f(mapSeconds, 1)} s, ${note}`,
  );
  // Focal lengths: the mapper's initial ones and the largest model's.
  const focalRange = (fs: number[]) => {
    const sorted = [...fs].sort((a, b) => a - b);
    return sorted.length
      ? `${f(sorted[0]!, 0)}..${f(sorted[sorted.length - 1]!, 0)} (median ${f(sorted[sorted.length >> 1]!, 0)}) px`
      : "-";
  };
  console.log(`  initial focal lengths ${focalRange(input.cameras.map((c) => c.params[0]!))}`);
  if (models[0]) {
    console.log(`  largest: ${describe(posesOf(models[0]), models[0].meanReprojectionError)}`);
    const used = models[0].cameras.filter((_, ci) => models[0]!.images.some((im) => cams.cameraOfImage[im.image] === ci));
    const ratios = used.map((c) => c.params[0]! / Math.max(c.width, c.height));
    const sortedRatios = [...ratios].sort((a, b) => a - b);
    const held = new Set(models[0].images.map((im) => im.image));
    // Focal length error against the truth, per photo of the largest model (percent).
    const focalErrors = models[0].images
      .map((im) => {
        const c = models[0]!.cameras[cams.cameraOfImage[im.image]!]!;
        const truth = trueRatio.get(data.images[im.image]!.name);
        return truth ? 100 * Math.abs(c.params[0]! / Math.max(c.width, c.height) / truth - 1) : NaN;
      })
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const missing = data.images.filter((_, i) => !held.has(i)).map((im) => im.name);
    console.log(
      `  largest model's focal lengths ${focalRange(used.map((c) => c.params[0]!))}; of the larger side ${f(sortedRatios[0]!, 3)}..${f(sortedRatios[sortedRatios.length - 1]!, 3)} (median ${f(sortedRatios[sortedRatios.length >> 1]!, 3)}), off the truth by ${f(focalErrors[focalErrors.length >> 1]!, 1)}% (median), ${f(focalErrors[focalErrors.length - 1]!, 1)}% (worst)${missing.length ? `; not in it: ${missing.join(", ")}` : ""}`,
    );
  }
  if (joined) {
    const poses = joined.merged.images.images.map((im) => {
      const r = im.cam_from_world.rotation;
      return { name: im.name, qvec: [r.w, r.x, r.y, r.z] as [number, number, number, number], tvec: im.cam_from_world.translation };
    });
    console.log(
      `  joined models [${joined.joined.join(", ")}] in ${f(joinSeconds, 1)} s: ${describe(poses, joined.merged.mean_reproj_err)}`,
    );
  }

  if (withColmap && haveColmap) {
    const work = mkdtempSync(join(tmpdir(), `bench-internet-${set}-`));
    const db = join(work, "our-verified.db");
    writeColmapDatabase(db, {
      // The cameras our map stage starts from: the same initial focal lengths, priors where EXIF gives them.
      cameras: (focalRatio && !exif ? input.cameras : cams.cameras).map((c) => ({
        width: c.width,
        height: c.height,
        params: c.params,
        hasPriorFocalLength: c.hasPriorFocalLength ?? false,
      })),
      images: data.images.map((im, i) => ({ name: im.name, camera: cams.cameraOfImage[i]!, keypoints: im.xy })),
      pairs: verified.map((p) => ({ image1: p.image1, image2: p.image2, verified: { type: p.type, matches: p.matches } })),
    });
    const { sparse, timing } = runColmapMapper(db, join(datasets, set, "images"), work, ["--Mapper.ba_refine_principal_point", "0"]);
    const largest = timing ? largestColmapModel(sparse) : null;
    const sizes = readdirSync(sparse)
      .map((m) => join(sparse, m, "text", "images.txt"))
      .filter((t) => existsSync(t))
      .map(
        (t) =>
          readFileSync(t, "utf8")
            .split("\n")
            .filter((l) => l && !l.startsWith("#")).length / 2,
      )
      .sort((a, b) => b - a);
    let line = "no model";
    if (largest && timing) {
      const model = await readColmapTextModel(largest);
      const errors = [...model.points3D.values()].map((p) => p.error);
      line = `${sizes.length} model(s) [${sizes.join(", ")}] in ${f(timing.wallSeconds, 1)} s; largest: ${describe(referencePoses(model), errors.reduce((a, b) => a + b, 0) / Math.max(1, errors.length))}`;
    }
    console.log(`  COLMAP 3.8 (same verified matches): ${line}`);
    rmSync(work, { recursive: true, force: true });
  }
}

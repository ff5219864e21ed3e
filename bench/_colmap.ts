/**
 * @module COLMAP 3.8 (Debian, CPU) as the reference column of the feature and matching
 * benchmarks: installs it when missing (scripts/system-deps.sh colmap), runs it under
 * /usr/bin/time to get wall and CPU seconds, and reads counts back from its database.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ProcessTiming {
  wallSeconds: number;
  /** user + system CPU seconds of the process and its threads. */
  cpuSeconds: number;
}

/** True when `colmap` is available (installing the Debian package if root and missing). */
export function ensureColmap(root: string): boolean {
  const deps = spawnSync("bash", [join(root, "scripts/system-deps.sh"), "colmap"], { stdio: "inherit" });
  return deps.status === 0 && spawnSync("colmap", ["help"], { stdio: "ignore" }).status === 0;
}

/**
 * Runs a command under /usr/bin/time; throws with its output if it fails, unless
 * `tolerateFailure`: then a failed run is timed too, with its last error line as `error`.
 */
export function runTimed(cmd: string, args: string[], options: { tolerateFailure?: boolean } = {}): ProcessTiming & { error?: string } {
  const dir = mkdtempSync(join(tmpdir(), "bench-time-"));
  const timeFile = join(dir, "time");
  const r = spawnSync("/usr/bin/time", ["-q", "-f", "%e %U %S", "-o", timeFile, cmd, ...args], { encoding: "utf8", maxBuffer: 64 << 20 });
  const fields = r.status === 0 || options.tolerateFailure ? readFileSync(timeFile, "utf8").trim().split(/\s+/).slice(-3).map(Number) : [];
  rmSync(dir, { recursive: true, force: true });
  const failure = r.status !== 0 ? `${cmd} ${args[0]} failed (${r.status}): ${(r.stderr ?? "").trim().split("\n").at(-1)}` : undefined;
  if (failure && !options.tolerateFailure)
    throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}):\n${(r.stderr ?? "").slice(-2000)}`);
  const [wall = NaN, user = NaN, sys = NaN] = fields;
  return { wallSeconds: wall, cpuSeconds: user + sys, ...(failure ? { error: failure } : {}) };
}

/** Rows of a SQL query on a COLMAP database (python3's sqlite3; no extra dependency). */
export function queryDatabase(db: string, sql: string): string[][] {
  const script = "import sqlite3,sys\nfor row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print('\\t'.join(map(str,row)))";
  const r = spawnSync("python3", ["-c", script, db, sql], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`sqlite query failed: ${r.stderr}`);
  return r.stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\t"));
}

/** A temporary image list file for `--image_list_path`. */
export function writeImageList(dir: string, names: readonly string[]): string {
  const path = join(dir, "images.txt");
  writeFileSync(path, names.join("\n") + "\n");
  return path;
}

/** Input of a COLMAP database written from our data (image and camera ids are 1-based indices). */
export interface ColmapDatabaseInput {
  /** SIMPLE_RADIAL cameras: size, f, cx, cy, k, and whether f is a prior (EXIF). */
  cameras: Array<{ width: number; height: number; params: number[]; hasPriorFocalLength: boolean }>;
  /** Per image: name, camera index, keypoints x0 y0 x1 y1 ... */
  images: Array<{ name: string; camera: number; keypoints: ArrayLike<number> }>;
  /** Per image pair (indices): raw matches, and verified ones with their spec 2.14 type when known. */
  pairs: Array<{ image1: number; image2: number; matches?: ArrayLike<number>; verified?: { type: string; matches: ArrayLike<number> } }>;
}

/**
 * Writes a COLMAP 3.8 database (`colmap database_creator`, then python3's sqlite3): cameras,
 * images, keypoints (2 columns), raw matches and two-view geometries (config codes in spec 2.14
 * order, which is COLMAP's).
 */
export function writeColmapDatabase(db: string, input: ColmapDatabaseInput): void {
  const created = spawnSync("colmap", ["database_creator", "--database_path", db], { encoding: "utf8" });
  if (created.status !== 0) throw new Error(`colmap database_creator failed: ${created.stderr}`);
  const dir = mkdtempSync(join(tmpdir(), "bench-db-"));
  const json = join(dir, "input.json");
  writeFileSync(
    json,
    JSON.stringify({
      cameras: input.cameras,
      images: input.images.map((im) => ({ ...im, keypoints: Array.from(im.keypoints) })),
      pairs: input.pairs.map((p) => ({
        ...p,
        matches: p.matches ? Array.from(p.matches) : null,
        verified: p.verified ? { type: p.verified.type, matches: Array.from(p.verified.matches) } : null,
      })),
    }),
  );
  const script = `
import json, sqlite3, struct, sys
TYPES = ["undefined","degenerate","calibrated","uncalibrated","planar","panoramic","planar_or_panoramic","watermark","multiple"]
d = json.load(open(sys.argv[2])); c = sqlite3.connect(sys.argv[1])
for i, cam in enumerate(d["cameras"]):
    c.execute("insert into cameras values (?,?,?,?,?,?)", (i + 1, 2, cam["width"], cam["height"], struct.pack("<4d", *cam["params"]), int(cam["hasPriorFocalLength"])))
for i, im in enumerate(d["images"]):
    c.execute("insert into images (image_id, name, camera_id) values (?,?,?)", (i + 1, im["name"], im["camera"] + 1))
    kp = im["keypoints"]
    c.execute("insert into keypoints values (?,?,?,?)", (i + 1, len(kp) // 2, 2, struct.pack("<%df" % len(kp), *kp)))
def blob(m): return struct.pack("<%dI" % len(m), *m) if m else None
for p in d["pairs"]:
    pair_id = (p["image1"] + 1) * 2147483647 + p["image2"] + 1
    if p["matches"] is not None:
        c.execute("insert into matches values (?,?,?,?)", (pair_id, len(p["matches"]) // 2, 2, blob(p["matches"])))
    if p["verified"] is not None:
        m = p["verified"]["matches"]
        c.execute("insert into two_view_geometries (pair_id, rows, cols, data, config) values (?,?,?,?,?)", (pair_id, len(m) // 2, 2, blob(m), TYPES.index(p["verified"]["type"])))
c.commit()
`;
  const r = spawnSync("python3", ["-c", script, db, json], { encoding: "utf8" });
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`writing the COLMAP database failed: ${r.stderr}`);
}

/** Raw matches as `colmap matches_importer --match_type raw` reads them. */
export function writeRawMatches(path: string, names: readonly string[], pairs: ColmapDatabaseInput["pairs"]): void {
  const blocks = pairs.map((p) => {
    const m = p.matches ?? [];
    const lines = [`${names[p.image1]} ${names[p.image2]}`];
    for (let k = 0; k < m.length; k += 2) lines.push(`${m[k]} ${m[k + 1]}`);
    return lines.join("\n") + "\n";
  });
  writeFileSync(path, blocks.join("\n"));
}

/**
 * `colmap mapper` (one thread) on a database into a fresh `sparse` folder under `work`: its
 * timing, or null when COLMAP exits non-zero (it does when it builds no model at all).
 */
export function runColmapMapper(
  db: string,
  imagePath: string,
  work: string,
  extraArgs: string[] = [],
): { sparse: string; timing: ProcessTiming | null } {
  const sparse = mkdtempSync(join(work, "sparse-"));
  const args = [
    "mapper",
    "--database_path",
    db,
    "--image_path",
    imagePath,
    "--output_path",
    sparse,
    "--Mapper.num_threads",
    "1",
    ...extraArgs,
  ];
  try {
    return { sparse, timing: runTimed("colmap", args) };
  } catch {
    return { sparse, timing: null };
  }
}

/**
 * The model of `colmap mapper`'s output folder with the most registered images, as a text
 * model directory (model_converter), or null when the mapper wrote none.
 */
export function largestColmapModel(sparse: string): string | null {
  let best: { dir: string; images: number } | null = null;
  for (const name of readdirSync(sparse)) {
    const text = join(sparse, name, "text");
    mkdirSync(text, { recursive: true });
    const r = spawnSync("colmap", ["model_converter", "--input_path", join(sparse, name), "--output_path", text, "--output_type", "TXT"], {
      stdio: "ignore",
    });
    if (r.status !== 0) continue;
    const images =
      readFileSync(join(text, "images.txt"), "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("#")).length / 2;
    if (!best || images > best.images) best = { dir: text, images };
  }
  return best?.dir ?? null;
}

/**
 * COLMAP 3.8's CLI pipeline as the references were made (CPU SIFT, exhaustive matching, mapper),
 * each step timed; a mapper that gives up ("failed to create sparse model") is timed to that end.
 * `threads`: every step's thread count (default: COLMAP's, all cores).
 */
export function colmapPipeline(
  imagePath: string,
  singleCamera: boolean,
  threads?: number,
): Record<"extract" | "match" | "map", ProcessTiming & { error?: string }> {
  const work = mkdtempSync(join(tmpdir(), "colmap-pipeline-"));
  const db = join(work, "db.sqlite");
  mkdirSync(join(work, "sparse"));
  const threadArgs = (option: string) => (threads === undefined ? [] : [`--${option}.num_threads`, String(threads)]);
  try {
    return {
      extract: runTimed("colmap", [
        "feature_extractor",
        "--database_path",
        db,
        "--image_path",
        imagePath,
        "--ImageReader.camera_model",
        "SIMPLE_RADIAL",
        "--ImageReader.single_camera",
        singleCamera ? "1" : "0",
        "--SiftExtraction.use_gpu",
        "0",
        ...threadArgs("SiftExtraction"),
      ]),
      match: runTimed("colmap", [
        "exhaustive_matcher",
        "--database_path",
        db,
        "--SiftMatching.use_gpu",
        "0",
        ...threadArgs("SiftMatching"),
      ]),
      map: runTimed(
        "colmap",
        ["mapper", "--database_path", db, "--image_path", imagePath, "--output_path", join(work, "sparse"), ...threadArgs("Mapper")],
        { tolerateFailure: true },
      ),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

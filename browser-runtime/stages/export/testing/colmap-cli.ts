/**
 * @module Test support (Node only): the Debian `colmap` 3.8 command line as the judge of our
 * exports, the shared reference models as snapshots, and export files on disk.
 * COLMAP is installed on demand with scripts/system-deps.sh when running as root; otherwise the
 * tests that need it are skipped with a loud message.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";
import { readSnapshotFromColmapDir, type SnapshotFiles } from "../from-colmap";
import { ExportError, exportSnapshot, type ExportFormat, type ExportResult } from "../index";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../../..");
export const DATASETS = join(REPO_ROOT, "../shared/datasets");
/** The shared sets the export tests use (small and quick). */
export const EXPORT_TEST_SETS = ["sacre-coeur", "sceaux-castle"] as const;

function colmapOnPath(): boolean {
  return spawnSync("colmap", ["help"], { stdio: "ignore" }).error === undefined;
}

function ensureColmap(): boolean {
  if (colmapOnPath()) return true;
  if (process.getuid?.() === 0) {
    execFileSync("bash", [join(REPO_ROOT, "scripts/system-deps.sh"), "colmap"], { stdio: "inherit" });
    return colmapOnPath();
  }
  console.warn(
    "\n!!! colmap is not installed and we are not root: the export tests that ask COLMAP to read our files are SKIPPED.\n" +
      "!!! Install it with: sudo bash scripts/system-deps.sh colmap\n",
  );
  return false;
}

export const colmapAvailable = ensureColmap();

/** Why a check by COLMAP's own tools is skipped (`ctx.skip(!colmapAvailable, COLMAP_ABSENT)`): reported, never counted as passed. */
export const COLMAP_ABSENT = "colmap is not installed: install it with sudo bash scripts/system-deps.sh colmap";

export function runColmap(args: string[]): string {
  const result = spawnSync("colmap", args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (result.status !== 0) throw new Error(`colmap ${args.join(" ")} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout + result.stderr;
}

/** The numbers `colmap model_analyzer` prints, as printed (e.g. "Mean track length" -> "3.855246"). */
export function analyzeModel(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of runColmap(["model_analyzer", "--path", dir]).split("\n")) {
    const m =
      /^(Cameras|Images|Registered images|Points|Observations|Mean track length|Mean observations per image|Mean reprojection error): ([0-9.]+)/.exec(
        line.trim(),
      );
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

export function convertModel(input: string, outputType: "TXT" | "BIN" | "PLY" | "NVM", outputName?: string): string {
  const out = outputName ? join(tempDir(), outputName) : tempDir();
  runColmap(["model_converter", "--input_path", input, "--output_path", out, "--output_type", outputType]);
  return out;
}

const tempDirs: string[] = [];
// Registered on the importing test file's root suite (each test file loads this module afresh).
afterAll(() => {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory, removed when the test file ends. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "edgesfm-export-"));
  tempDirs.push(dir);
  return dir;
}

/** Writes an export's files under a fresh directory and returns it. */
export function writeFiles(files: ReadonlyMap<string, Uint8Array>, dir = tempDir()): string {
  for (const [path, bytes] of files) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, bytes);
  }
  return dir;
}

export function referenceDir(set: string): string {
  return join(DATASETS, set, "reference");
}

const snapshots = new Map<string, Promise<SnapshotFiles>>();
export function referenceSnapshot(set: string): Promise<SnapshotFiles> {
  if (!snapshots.has(set)) snapshots.set(set, readSnapshotFromColmapDir(referenceDir(set)));
  return snapshots.get(set)!;
}

/** The set's photos by file name. */
export function referencePhotos(set: string): Map<string, Uint8Array> {
  const dir = join(DATASETS, set, "images");
  return new Map(readdirSync(dir).map((name) => [name, new Uint8Array(readFileSync(join(dir, name)))]));
}

export function readText(path: string): string {
  return readFileSync(path, "utf8");
}

/** Data lines of a text file (comments dropped), sorted: for files whose row order is a hash map's. */
export function sortedDataLines(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .sort();
}

/** Two exports hold the same paths with the same bytes (vitest's deep equality is slow on megabytes). */
export function sameFiles(a: ReadonlyMap<string, Uint8Array>, b: ReadonlyMap<string, Uint8Array>): boolean {
  if (a.size !== b.size) return false;
  for (const [path, bytes] of a) {
    const other = b.get(path);
    if (!other || !Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).equals(other)) return false;
  }
  return true;
}

const exports = new Map<string, ExportResult>();
/** One export of a reference snapshot with default options, computed once per test file. */
export async function referenceExport(set: string, format: ExportFormat): Promise<ExportResult> {
  const key = `${set}/${format}`;
  if (!exports.has(key)) exports.set(key, exportSnapshot(format, await referenceSnapshot(set)));
  return exports.get(key)!;
}

/** The ExportError a call throws, or undefined when it does not throw (other errors propagate). */
export function exportRefusal(fn: () => unknown): ExportError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof ExportError) return e;
    throw e;
  }
  return undefined;
}

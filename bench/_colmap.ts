/**
 * @module COLMAP 3.8 (Debian, CPU) as the reference column of the feature and matching
 * benchmarks: installs it when missing (scripts/system-deps.sh colmap), runs it under
 * /usr/bin/time to get wall and CPU seconds, and reads counts back from its database.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  if (failure && !options.tolerateFailure) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}):\n${(r.stderr ?? "").slice(-2000)}`);
  const [wall = NaN, user = NaN, sys = NaN] = fields;
  return { wallSeconds: wall, cpuSeconds: user + sys, ...(failure ? { error: failure } : {}) };
}

/** Rows of a SQL query on a COLMAP database (python3's sqlite3; no extra dependency). */
export function queryDatabase(db: string, sql: string): string[][] {
  const script = "import sqlite3,sys\nfor row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print('\\t'.join(map(str,row)))";
  const r = spawnSync("python3", ["-c", script, db, sql], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`sqlite query failed: ${r.stderr}`);
  return r.stdout.split("\n").filter(Boolean).map((l) => l.split("\t"));
}

/** A temporary image list file for `--image_list_path`. */
export function writeImageList(dir: string, names: readonly string[]): string {
  const path = join(dir, "images.txt");
  writeFileSync(path, names.join("\n") + "\n");
  return path;
}

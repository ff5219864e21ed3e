/** The command line shared by the features and matching benchmarks, and a CPU-time clock. */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { loadEngine } from "../engine-wasm/ts/engine";
import { ensureColmap } from "./_colmap";

export const root = new URL("..", import.meta.url).pathname;
export const datasets = join(root, "../shared/datasets");

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/** `--sets a,b --images N --max-features N --wgsl`. */
export function siftBenchArgs(defaultImages: number) {
  return {
    sets: arg("sets", "sacre-coeur,opensfm-lund,sceaux-castle").split(","),
    maxImages: Number(arg("images", String(defaultImages))),
    maxNumFeatures: Number(arg("max-features", "8192")),
    withWgsl: process.argv.includes("--wgsl"),
  };
}

/** CPU seconds of this process (user + system), for comparisons on a shared machine. */
export const cpuSeconds = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/**
 * CPU seconds of this process and every live descendant (workerd, Chromium, workers), children
 * already reaped included: user + system time from /proc (Linux), in seconds.
 */
export function processTreeCpuSeconds(): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // Fields after the parenthesised command name (which may hold spaces): state ppid ... utime(14) stime cutime cstime.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    stats.set(Number(entry), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
  }
  const inTree = (pid: number): boolean => {
    for (let p = pid; p > 1; p = stats.get(p)?.ppid ?? 0) if (p === process.pid) return true;
    return false;
  };
  let ticks = 0;
  for (const [pid, s] of stats) if (inTree(pid)) ticks += s.ticks;
  return ticks / CLOCK_TICKS_PER_SECOND;
}
/** USER_HZ of /proc's times: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The wasm engine, whether COLMAP can run beside it, and the WGSL column when asked for. */
export async function openSiftBench(withWgsl: boolean) {
  const engine = await loadEngine();
  const haveColmap = ensureColmap(root);
  if (!haveColmap) console.warn("COLMAP column skipped: colmap is not installed and could not be installed");
  const gpu = withWgsl ? await (await import("./_gpu")).openGpuBench() : undefined;
  return { engine, haveColmap, gpu };
}

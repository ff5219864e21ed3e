/** The command line shared by the features and matching benchmarks, and a CPU-time clock. */
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

/** The wasm engine, whether COLMAP can run beside it, and the WGSL column when asked for. */
export async function openSiftBench(withWgsl: boolean) {
  const engine = await loadEngine();
  const haveColmap = ensureColmap(root);
  if (!haveColmap) console.warn("COLMAP column skipped: colmap is not installed and could not be installed");
  const gpu = withWgsl ? await (await import("./_gpu")).openGpuBench() : undefined;
  return { engine, haveColmap, gpu };
}

/**
 * @module Loads the WGSL kernels from `shaders/` next to the code: from disk in Node, over HTTP
 * in browsers (the runner serves `shaders/` beside `browser-runtime/`). A bundler that inlines
 * the sources can pass them to the kernel constructors instead.
 */

export const SHADER_FILES = [
  "gaussian_blur",
  "resample",
  "sift_detect",
  "bitonic_sort",
  "sift_orientation",
  "sift_descriptor",
  "descriptor_match",
  "projection",
] as const;

export type ShaderName = (typeof SHADER_FILES)[number];

/** WGSL has no includes: these kernels get sift_common.wgsl (Keypoint, VLFeat math) prepended. */
const NEEDS_SIFT_COMMON: readonly ShaderName[] = ["sift_detect", "sift_orientation", "sift_descriptor"];
export type ShaderSources = Record<ShaderName, string>;

const cache = new Map<string, Promise<ShaderSources>>();

/**
 * WGSL sources by name: from `base` when given, else from `shaders/` beside `browser-runtime/`.
 * The default URL is written as `new URL(\`../../shaders/${name}.wgsl\`, import.meta.url)` so
 * Vite (the site build) recognises it and ships the files as assets.
 */
export function loadShaderSources(base?: URL): Promise<ShaderSources> {
  const key = base?.href ?? "";
  let sources = cache.get(key);
  if (!sources) {
    sources = (async () => {
      const urlOf = (name: string) => (base ? new URL(`${name}.wgsl`, base) : new URL(`../../shaders/${name}.wgsl`, import.meta.url));
      const read = async (url: URL) => {
        if (url.protocol === "file:") return (await import("node:fs/promises")).readFile(url, "utf8");
        const res = await fetch(url);
        if (!res.ok) throw new Error(`shader ${url.href}: HTTP ${res.status}`);
        return res.text();
      };
      const [common, ...texts] = await Promise.all(["sift_common", ...SHADER_FILES].map((name) => read(urlOf(name))));
      return Object.fromEntries(
        SHADER_FILES.map((name, i) => [name, NEEDS_SIFT_COMMON.includes(name) ? `${common}\n${texts[i]}` : texts[i]]),
      ) as ShaderSources;
    })();
    cache.set(key, sources);
  }
  return sources;
}

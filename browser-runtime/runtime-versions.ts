/**
 * @module The runtime-version map a runner reports (spec 2.15, 9.7): content hashes of the
 * code that computes results, the wasm engine and the WGSL kernels. The service rolls the
 * map's id into every task's cache key (worker/services/runtime.ts), so a changed engine never
 * reuses results of the old one. `npm start` computes the same map for the service
 * (scripts/runtime-versions.ts), from the same bytes.
 */
import type { ShaderSources } from "./gpu/shader-sources";
import { sha256Hex } from "../client/index";

export async function runtimeVersionsOf(engineWasm: Uint8Array, shaders: ShaderSources): Promise<Record<string, string>> {
  const names = Object.keys(shaders).sort() as (keyof ShaderSources)[];
  const text = names.map((n) => `${n}\0${shaders[n]}\0`).join("");
  return {
    "engine-wasm": await sha256Hex(engineWasm),
    shaders: await sha256Hex(new TextEncoder().encode(text)),
  };
}

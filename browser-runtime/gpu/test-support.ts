/**
 * @module Test setup for the WebGPU suites: makes sure a software Vulkan driver is installed
 * (scripts/system-deps.sh webgpu, as root) and acquires one shared device, or says why not.
 */

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { acquireGpu, SWIFTSHADER_ICD, type GpuContext } from "./device";

let shared: Promise<GpuContext | { error: string }> | undefined;

/** The shared test device; `{error}` when no WebGPU adapter can be created at all. */
export function testGpu(): Promise<GpuContext | { error: string }> {
  shared ??= (async () => {
    if (!process.env.VK_ICD_FILENAMES && !existsSync(SWIFTSHADER_ICD)) {
      // CI machines get chromium (SwiftShader ICD) and libvulkan1 here; prints the command otherwise.
      const root = new URL("../../", import.meta.url).pathname;
      spawnSync("bash", ["scripts/system-deps.sh", "webgpu"], { cwd: root, stdio: "inherit" });
    }
    const gpu = await acquireGpu();
    if ("error" in gpu) console.warn(`WebGPU tests skipped: ${gpu.error}`);
    return gpu;
  })();
  return shared;
}

/**
 * @module Test setup for the WebGPU suites: makes sure a software Vulkan driver is installed
 * (scripts/system-deps.sh webgpu, as root) and acquires one shared device, or says why not.
 * CI sets EDGESFM_REQUIRE_WEBGPU=1 (.ci/run): the WGSL suites then fail instead of skipping when
 * they cannot run, so a machine that lost its driver cannot pass CI with the GPU tests silently off.
 */

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { acquireGpu, SWIFTSHADER_ICD, type GpuContext } from "./device";

let shared: Promise<GpuContext | { error: string }> | undefined;

export const CHROMIUM = "/usr/bin/chromium";
/** Debian's libvulkan1 (the loader Dawn opens). */
const VULKAN_LOADER = "/usr/lib/x86_64-linux-gnu/libvulkan.so.1";

/** Whether a WebGPU suite that cannot run must fail (CI) rather than skip (a developer's machine). */
export const webGpuRequired = process.env.EDGESFM_REQUIRE_WEBGPU === "1";

/**
 * Installs Debian's chromium (its SwiftShader Vulkan ICD, and the browser for the Chromium test)
 * and libvulkan1 when missing: as root through scripts/system-deps.sh, otherwise that script
 * prints the command to run.
 */
export function ensureWebGpuSystemDeps(): void {
  // The Vulkan loader (libvulkan1) is checked too: without it Dawn finds no adapter and every WebGPU test skips.
  if (existsSync(CHROMIUM) && (process.env.VK_ICD_FILENAMES || existsSync(SWIFTSHADER_ICD)) && existsSync(VULKAN_LOADER)) return;
  const root = new URL("../../", import.meta.url).pathname;
  spawnSync("bash", ["scripts/system-deps.sh", "webgpu"], { cwd: root, stdio: "inherit" });
}

/** Skips the calling suite with `reason`, or fails it when CI requires WebGPU (EDGESFM_REQUIRE_WEBGPU=1). */
export function webGpuUnavailable(reason: string): true {
  if (webGpuRequired) throw new Error(`WebGPU suites are required here (EDGESFM_REQUIRE_WEBGPU=1) but cannot run: ${reason}`);
  console.warn(`WebGPU tests skipped: ${reason}`);
  return true;
}

/** The shared test device; `{error}` when no WebGPU adapter can be created at all (a failure under EDGESFM_REQUIRE_WEBGPU). */
export function testGpu(): Promise<GpuContext | { error: string }> {
  shared ??= (async () => {
    ensureWebGpuSystemDeps();
    const gpu = await acquireGpu();
    if ("error" in gpu) webGpuUnavailable(gpu.error);
    return gpu;
  })();
  return shared;
}

/**
 * @module WebGPU device acquisition for runners: `navigator.gpu` in browsers, Dawn (npm `webgpu`)
 * in Node. On machines without a GPU, Node uses a software Vulkan driver (Chromium's SwiftShader
 * ICD) so the same WGSL kernels run everywhere; see ../shared/notes/toolchain.md.
 */

/// <reference types="@webgpu/types" />

export interface GpuContext {
  device: GPUDevice;
  adapter: GPUAdapter;
  /** Software adapters (SwiftShader, lavapipe) are slower than the CPU path for SIFT-size work. */
  isFallbackAdapter: boolean;
  description: string;
  limits: { maxComputeWorkgroupStorageSize: number; maxStorageBufferBindingSize: number; maxComputeInvocationsPerWorkgroup: number };
  /** WGSL language extensions of this implementation (e.g. `packed_4x8_integer_dot_product`). */
  wgslLanguageFeatures: ReadonlySet<string>;
  destroy(): void;
}

/** Vulkan ICD of Debian's chromium package: SwiftShader, the software driver Dawn accepts. */
export const SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json";

const isNode = typeof process !== "undefined" && !!process.versions?.node;

let nodeGpu: Promise<GPU> | undefined;

/**
 * Dawn in Node: picks the Vulkan driver before Dawn first loads Vulkan. An explicit
 * VK_ICD_FILENAMES wins; otherwise SwiftShader is used when present. Vulkan loaders also want
 * XDG_RUNTIME_DIR to be a private (mode 700) directory.
 */
async function nodeNavigatorGpu(): Promise<GPU> {
  nodeGpu ??= (async () => {
    const fs = await import("node:fs");
    const os = await import("node:os");
    const path = await import("node:path");
    if (!process.env.VK_ICD_FILENAMES && fs.existsSync(SWIFTSHADER_ICD)) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    if (!process.env.XDG_RUNTIME_DIR) {
      const dir = path.join(os.tmpdir(), `edgesfm-xdg-${process.getuid?.() ?? "user"}`);
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      fs.chmodSync(dir, 0o700);
      process.env.XDG_RUNTIME_DIR = dir;
    }
    const dawn = (await import("webgpu")) as { create(flags: string[]): GPU; globals: object };
    // GPUBufferUsage, GPUMapMode, ... are globals in browsers; Dawn exports them.
    for (const [k, v] of Object.entries(dawn.globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
    return dawn.create([]);
  })();
  return nodeGpu;
}

/** The platform's GPU entry point, or undefined when WebGPU is unavailable. */
export async function navigatorGpu(): Promise<GPU | undefined> {
  const nav = (globalThis as unknown as { navigator?: Navigator }).navigator;
  if (nav?.gpu) return nav.gpu;
  if (isNode) {
    try {
      return await nodeNavigatorGpu();
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Acquires a device, or returns undefined with the reason when no WebGPU adapter exists. */
export async function acquireGpu(): Promise<GpuContext | { error: string }> {
  const gpu = await navigatorGpu();
  if (!gpu) return { error: "WebGPU is not available (no navigator.gpu, and npm 'webgpu' failed to load)" };
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) return { error: "WebGPU: requestAdapter() returned null (no Vulkan/Metal/D3D driver; see toolchain.md)" };
  const want = (name: keyof GPUSupportedLimits) => adapter.limits[name] as number;
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: want("maxStorageBufferBindingSize"),
      maxBufferSize: want("maxBufferSize"),
      maxComputeWorkgroupStorageSize: want("maxComputeWorkgroupStorageSize"),
      maxStorageBuffersPerShaderStage: Math.min(8, want("maxStorageBuffersPerShaderStage")),
    },
  });
  const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  const legacyFallback = (adapter as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter;
  const description = [info?.vendor, info?.architecture, info?.device, info?.description].filter(Boolean).join(" ") || "unknown adapter";
  const isSoftware = /swiftshader|llvmpipe|lavapipe|software|basic render/i.test(description);
  return {
    device,
    adapter,
    isFallbackAdapter: Boolean(info?.isFallbackAdapter ?? legacyFallback) || isSoftware,
    description,
    limits: {
      maxComputeWorkgroupStorageSize: device.limits.maxComputeWorkgroupStorageSize,
      maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
      maxComputeInvocationsPerWorkgroup: device.limits.maxComputeInvocationsPerWorkgroup,
    },
    wgslLanguageFeatures: new Set(gpu.wgslLanguageFeatures ?? []),
    destroy: () => device.destroy(),
  };
}

/**
 * @module Headless Chromium for runners and browser tests: Debian's /usr/bin/chromium driven by
 * playwright-core (never a downloaded browser), with the flags this offline machine needs
 * (../shared/notes/toolchain.md) and WebGPU enabled (a SwiftShader adapter without a GPU).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--enable-unsafe-webgpu",
  // WebGL (the demo's 3D view) on SwiftShader, as there is no GPU.
  "--enable-unsafe-swiftshader",
  "--use-angle=swiftshader",
];

/** Installs Debian's chromium when missing (as root), else explains how. */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const root = new URL("../../", import.meta.url).pathname;
  spawnSync("bash", ["scripts/system-deps.sh", "browser"], { cwd: root, stdio: "inherit" });
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run 'apt-get install chromium' (or set CHROMIUM_PATH)`);
}

/** A fresh profile in a temporary folder, removed on close. */
export async function launchChromium(
  options: { viewport?: { width: number; height: number } } = {},
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  ensureChromium();
  const { chromium } = await import("playwright-core");
  const profile = mkdtempSync(join(tmpdir(), "edgesfm-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    ...options,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

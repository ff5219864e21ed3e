// The same WGSL kernels in a real browser's WebGPU: headless Chromium (Debian's /usr/bin/chromium,
// SwiftShader adapter with --enable-unsafe-webgpu) driven by playwright-core, compared with the
// WASM path computed here in Node. Sources are served as ES modules transpiled on the fly.
import { readFileSync, existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { extractSift, matchDescriptors } from "../../engine-wasm/ts/feature";
import { compareSift } from "../../protocol/agreement";
import type { BrowserRunResult } from "./chromium-page";
import { syntheticImage } from "./synthetic-image";
import { launchChromium } from "../headless/chromium";
import { CHROMIUM, ensureWebGpuSystemDeps, webGpuUnavailable } from "./test-support";

const root = new URL("../../", import.meta.url).pathname;

/** Serves the repository: `.wgsl` as text, extensionless module paths as transpiled `.ts`. */
function serveRepository(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    if (path === "/favicon.ico") return void res.writeHead(204).end();
    if (path === "/") {
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(`<!doctype html><script type="module" src="/browser-runtime/gpu/chromium-page"></script>`);
      return;
    }
    const file = join(root, path);
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    if (path.endsWith(".wgsl") && existsSync(file)) {
      res.writeHead(200, { "content-type": "text/plain" }).end(readFileSync(file, "utf8"));
    } else if (existsSync(`${file}.ts`)) {
      const js = ts.transpileModule(readFileSync(`${file}.ts`, "utf8"), {
        compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, verbatimModuleSyntax: true },
      }).outputText;
      res.writeHead(200, { "content-type": "text/javascript" }).end(js);
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve({ server, origin: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}` });
    }),
  );
}

ensureWebGpuSystemDeps();
const hasChromium = existsSync(CHROMIUM) || !webGpuUnavailable(`${CHROMIUM} missing (bash scripts/system-deps.sh webgpu)`);

describe.skipIf(!hasChromium)("WGSL SIFT in headless Chromium", () => {
  let served: { server: Server; origin: string };
  let close: () => Promise<void> = async () => {};
  let result: BrowserRunResult | { error: string };
  let descriptorSets: [Uint8Array, Uint8Array];
  const [w, h] = [160, 120];

  beforeAll(async () => {
    served = await serveRepository();
    const browser = await launchChromium();
    const { context } = browser;
    close = () => browser.close();
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") console.error("[chromium]", m.text());
    });
    await page.goto(served.origin);
    await page.waitForFunction(() => "runSiftGpu" in globalThis, undefined, { timeout: 30_000 });
    const engine = await loadEngine();
    const a = extractSift(engine, syntheticImage(w, h), w, h);
    const b = extractSift(engine, syntheticImage(w, h).reverse(), w, h); // the image rotated 180 degrees
    descriptorSets = [a.descriptors, b.descriptors];
    result = await page.evaluate(
      ([width, height, da, db]) =>
        (globalThis as unknown as { runSiftGpu: (...x: unknown[]) => Promise<BrowserRunResult | { error: string }> }).runSiftGpu(
          width,
          height,
          da,
          db,
        ),
      [w, h, Array.from(a.descriptors), Array.from(b.descriptors)] as const,
    );
  });

  afterAll(async () => {
    await close();
    served?.server.close();
  });

  it("runs the kernels on the browser's WebGPU adapter and agrees with the WASM path", async (ctx) => {
    if ("error" in result) {
      webGpuUnavailable(`Chromium has no WebGPU adapter: ${result.error}`);
      ctx.skip();
      return;
    }
    console.log("chromium adapter:", result.adapter, "fallback:", result.isFallbackAdapter);
    const engine = await loadEngine();
    const cpu = extractSift(engine, syntheticImage(w, h), w, h);
    const browser = { keypoints: Float32Array.from(result.keypoints), descriptors: Uint8Array.from(result.descriptors) };
    const agreement = compareSift(cpu, browser);
    console.log("chromium vs wasm", agreement);
    expect(agreement.countA).toBeGreaterThan(20);
    expect(agreement.matchedA).toBeGreaterThanOrEqual(0.99);
    expect(agreement.matchedB).toBeGreaterThanOrEqual(0.99);
    expect(agreement.maxDescriptorByteDiff).toBeLessThanOrEqual(3);
    const expected = matchDescriptors(engine, descriptorSets[0], descriptorSets[1]);
    expect(expected.length).toBeGreaterThan(0);
    expect(Uint32Array.from(result.matches)).toEqual(expected);
  });
});

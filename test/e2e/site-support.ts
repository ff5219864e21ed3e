/**
 * @module What the demo's browser tests share: the built site (rebuilt when stale), the stack's
 * runtime versions matching the page's runner, a page opened as a visitor would, files dropped on
 * the drop zone, keyboard focus walks, a contrast pass, snapshot files served from memory and a
 * pixel classifier for the 3D view's screenshots.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { spawnSync } from "node:child_process";
import type { BrowserContext, Page, Route } from "playwright-core";
import sharp from "sharp";
import { expect } from "vitest";
import { loadShaderSources } from "../../browser-runtime/gpu/shader-sources";
import { runtimeVersionsOf } from "../../browser-runtime/runtime-versions";

export const ROOT = new URL("../../", import.meta.url).pathname;
export const SET = new URL("../../../shared/datasets/sacre-coeur/", import.meta.url).pathname;
/** A test file's own screenshot folder under test-output/site-e2e/, emptied so it holds only this run's steps. */
export function freshShotsFolder(name: string): string {
  const dir = join(ROOT, "test-output/site-e2e", name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

export const setPhotos = (): string[] =>
  readdirSync(join(SET, "images"))
    .filter((f) => f.endsWith(".jpg"))
    .sort()
    .map((f) => join(SET, "images", f));

/** Newest modification time under the given paths (recursively). */
function newestMtime(paths: string[]): number {
  let newest = 0;
  for (const p of paths) {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    newest = Math.max(newest, st.isDirectory() ? newestMtime(readdirSync(p).map((f) => join(p, f))) : st.mtimeMs);
  }
  return newest;
}

/** The page, its runner's engine and shaders must be the checkout's, or the runner leases nothing. */
export function buildSiteIfStale(): void {
  const built = statSync(join(ROOT, "site/dist/index.html"), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const inputs = ["site/src", "site/index.html", "protocol", "browser-runtime", "engine-wasm/build/wasm", "engine-wasm/ts", "shaders"];
  if (newestMtime(inputs.map((p) => join(ROOT, p))) > built) {
    expect(spawnSync("npm", ["run", "build:site"], { cwd: ROOT, stdio: "inherit" }).status).toBe(0);
  }
}

/**
 * The runtime versions of the engine the page loads (its copy in site/dist, which a concurrent
 * engine rebuild does not touch) and of the shaders, as the page's runner computes them: the
 * stack is started with these so that the tab's runner leases its tasks.
 */
export async function pageRuntimeVersions(): Promise<Record<string, string>> {
  const assets = join(ROOT, "site/dist/assets");
  const wasm = readdirSync(assets).find((f) => /^edgesfm-engine-.*\.wasm$/.test(f));
  if (!wasm) throw new Error("site/dist has no engine wasm; run npm run build:site");
  return runtimeVersionsOf(new Uint8Array(readFileSync(join(assets, wasm))), await loadShaderSources());
}

/** The demo's front page, once it has reached the server. */
export async function openPage(context: BrowserContext, base: string): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error("[page error]", e.message));
  await page.goto(`${base}/`);
  await expect.poll(() => page.locator("#server-status").getAttribute("data-kind"), { timeout: 15_000 }).toBe("ok");
  return page;
}

/** Drops files on an element as a drag from the desktop does: dragover, then drop with a DataTransfer. */
export async function dropFiles(
  page: Page,
  selector: string,
  files: Array<{ path: string; type: string } | { name: string; bytes: Uint8Array; type: string }>,
): Promise<void> {
  const payload = files.map((f) =>
    "path" in f
      ? { name: basename(f.path), type: f.type, b64: readFileSync(f.path).toString("base64") }
      : { name: f.name, type: f.type, b64: Buffer.from(f.bytes).toString("base64") },
  );
  const transfer = await page.evaluateHandle((list) => {
    const dt = new DataTransfer();
    for (const f of list) dt.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
    return dt;
  }, payload);
  await page.dispatchEvent(selector, "dragover", { dataTransfer: transfer });
  await page.dispatchEvent(selector, "drop", { dataTransfer: transfer });
}

/**
 * Presses Tab (or Shift+Tab) until `selector` has the focus, as a keyboard-only visitor does, and checks that
 * every control passed on the way has an accessible name. Answers the names passed.
 */
export async function tabTo(page: Page, selector: string, maxPresses = 60, key: "Tab" | "Shift+Tab" = "Tab"): Promise<string[]> {
  const passed: string[] = [];
  for (let i = 0; i < maxPresses; i++) {
    await page.keyboard.press(key);
    const focused = page.locator(":focus");
    const aria = (await focused.count()) ? await focused.ariaSnapshot() : "";
    // `- button "Upload"`, or `- text: API key` for a <summary>, named by its text.
    const name = /^- [\w-]+ "(.+?)"|^- text: (.+)$/m.exec(aria)?.slice(1).find(Boolean);
    expect(name, `the focused control has an accessible name: ${aria}`).toBeTruthy();
    passed.push(name!);
    if (await page.locator(selector).evaluate((el) => el === document.activeElement)) return passed;
  }
  throw new Error(`${selector} not reached in ${maxPresses} Tab presses; passed ${passed.join(" | ")}`);
}

/**
 * A quick WCAG 1.4.3 pass: visible text whose contrast with the background behind it is under
 * 4.5:1 (3:1 for large text), skipping disabled controls (exempt). Answers "text (ratio)" lines.
 */
export function contrastFailures(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const rgba = (c: string): number[] => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r, g, b]: number[]) => {
      const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
    };
    const background = (el: Element | null): number[] => {
      for (; el; el = el.parentElement) {
        const c = rgba(getComputedStyle(el).backgroundColor);
        if ((c[3] ?? 1) > 0.5) return c;
      }
      return [255, 255, 255];
    };
    const out: string[] = [];
    for (const el of Array.from(document.querySelectorAll<HTMLElement>("body *"))) {
      const text = Array.from(el.childNodes)
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent!.trim())
        .join(" ")
        .trim();
      if (!text || el.closest("[hidden], .visually-hidden, :disabled, canvas") || el.getClientRects().length === 0) continue;
      const style = getComputedStyle(el);
      const [fg, bg] = [lum(rgba(style.color)), lum(background(el))];
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) out.push(`${text.slice(0, 60)} (${ratio.toFixed(2)})`);
    }
    return out;
  });
}

/** Snapshot files from memory, honouring Range as the server does (4.9, RFC 9110 14). */
export function serveSnapshot(route: Route, files: Record<string, Uint8Array>, ranges: string[] = []): Promise<void> {
  const path = new URL(route.request().url()).pathname;
  if (path.endsWith("/snapshots")) return route.fulfill({ json: { seqs: [1], _links: {} } });
  const name = /\/snapshots\/1\/(.+)$/.exec(path)?.[1] ?? "";
  const body = files[name];
  if (!body)
    return route.fulfill({
      status: 404,
      contentType: "application/problem+json",
      body: JSON.stringify({ type: "about:blank", title: "Not Found", status: 404, instance: path }),
    });
  const range = /^bytes=(\d+)-(\d+)$/.exec(route.request().headers()["range"] ?? "");
  if (range) ranges.push(`${name} ${range[1]}-${range[2]}`);
  if (!range) return route.fulfill({ status: 200, body: Buffer.from(body) });
  const [start, end] = [Number(range[1]), Math.min(Number(range[2]), body.length - 1)];
  return route.fulfill({
    status: 206,
    headers: { "Content-Range": `bytes ${start}-${end}/${body.length}` },
    body: Buffer.from(body.subarray(start, end + 1)),
  });
}

/** Frustum orange (#ff7a00, antialiased). */
const isFrustum = (r: number, g: number, b: number) => r > 150 && g > 50 && g < 160 && b < 70 && r - g > 70;

/** Pixels of the frustum orange and of anything else off the 3D view's background (the points). */
export async function classifyPixels(png: Buffer): Promise<{ frustum: number; point: number }> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let frustum = 0;
  let point = 0;
  for (let i = 0; i < info.width * info.height * 3; i += 3) {
    const [r, g, b] = [data[i]!, data[i + 1]!, data[i + 2]!];
    if (isFrustum(r, g, b)) frustum++;
    else if (Math.abs(r - 16) + Math.abs(g - 20) + Math.abs(b - 28) > 60) point++;
  }
  return { frustum, point };
}

/**
 * Where to click to hit a camera frustum, as a visitor aims: frustum-orange pixels of the
 * screenshot (CSS pixels of the element), those with the most orange neighbours first.
 */
export async function frustumPixels(png: Buffer, scale = 1): Promise<Array<{ x: number; y: number }>> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const orange = (x: number, y: number) => {
    if (x < 0 || y < 0 || x >= info.width || y >= info.height) return false;
    const i = 3 * (y * info.width + x);
    return isFrustum(data[i]!, data[i + 1]!, data[i + 2]!);
  };
  const scored: Array<{ x: number; y: number; n: number }> = [];
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      if (!orange(x, y)) continue;
      let n = 0;
      for (let dy = -3; dy <= 3; dy++) for (let dx = -3; dx <= 3; dx++) n += orange(x + dx, y + dy) ? 1 : 0;
      scored.push({ x, y, n });
    }
  }
  return scored.sort((a, b) => b.n - a.n).map(({ x, y }) => ({ x: x / scale, y: y / scale }));
}

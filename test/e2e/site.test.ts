/**
 * The web demo (issue 7) in Debian's headless Chromium, against the real local stack: a visitor
 * drops the sacre-coeur photos (plus one unreadable file) through the file input, sees every
 * upload finish and the photos registered, starts the recipe and sees either the live job or the
 * server's 501 (whichever /v1/capabilities says), and the 3D view draws points and camera
 * frustums from a snapshot (served by a test route, made from the COLMAP reference). Screenshots
 * of each step go to test-output/site-e2e/.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import type { BrowserContext, Page, Route } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShaderSources } from "../../browser-runtime/gpu/shader-sources";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { runtimeVersionsOf } from "../../browser-runtime/runtime-versions";
import { type Server, startServer } from "../conformance/server";
import { POINTS_HEADER_BYTES, POINT_RECORD_BYTES } from "../../protocol/wire/points";
import { snapshotFromReference } from "./site-snapshot-fixture";

const ROOT = new URL("../../", import.meta.url).pathname;
const SET = new URL("../../../shared/datasets/sacre-coeur/", import.meta.url).pathname;
const SHOTS = join(ROOT, "test-output/site-e2e");

let server: Server;
let context: BrowserContext;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let scratch: string;

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
function buildSiteIfStale(): void {
  const built = statSync(join(ROOT, "site/dist/index.html"), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const inputs = ["site/src", "site/index.html", "protocol", "browser-runtime", "engine-wasm/build/wasm", "engine-wasm/ts", "shaders"];
  if (newestMtime(inputs.map((p) => join(ROOT, p))) > built) {
    expect(spawnSync("npm", ["run", "build:site"], { cwd: ROOT, stdio: "inherit" }).status).toBe(0);
  }
}

beforeAll(async () => {
  buildSiteIfStale();
  mkdirSync(SHOTS, { recursive: true });
  scratch = mkdtempSync(join(tmpdir(), "edgesfm-site-"));
  server = await startServer();
  browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
  context = browser.context;
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function openPage(base = server.base): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error("[page error]", e.message));
  await page.goto(`${base}/`);
  await expect.poll(() => page.locator("#server-status").getAttribute("data-kind"), { timeout: 15_000 }).toBe("ok");
  return page;
}

describe("site: from photos to a reconstruction", () => {
  it("uploads and registers the photos, flags the unreadable file, and starts the recipe or says why not", async () => {
    const photos = readdirSync(join(SET, "images")).filter((f) => f.endsWith(".jpg")).sort();
    const broken = join(scratch, "broken-photo.jpg");
    writeFileSync(broken, "this is not a JPEG, whatever its name says");
    const page = await openPage();

    await page.setInputFiles("#file-input", [...photos.map((f) => join(SET, "images", f)), broken]);
    const tiles = page.locator("#photo-grid .tile");
    await expect.poll(() => tiles.count()).toBe(photos.length + 1);
    const unreadable = page.locator('.tile[data-state="unreadable"]');
    await expect.poll(() => unreadable.count(), { timeout: 15_000 }).toBe(1);
    expect(await unreadable.textContent()).toContain("not a photo the browser can decode");
    expect(await page.locator("#photo-status").textContent()).toContain("Cannot use broken-photo.jpg: not a photo the browser can decode");
    await expect.poll(() => page.locator("#upload-button").isEnabled()).toBe(true);
    await page.screenshot({ path: join(SHOTS, "1-photos-dropped.png"), fullPage: true });

    await page.click("#upload-button");
    const registered = page.locator('.tile[data-state="registered"]');
    await expect.poll(() => registered.count(), { timeout: 60_000 }).toBe(photos.length);
    expect(await page.locator("#photo-status").textContent()).toContain(`${photos.length} photo(s) registered`);
    const overall = await page.locator("#upload-overall").evaluate((p: HTMLProgressElement) => p.value / p.max);
    expect(overall).toBe(1);
    await page.screenshot({ path: join(SHOTS, "2-photos-registered.png"), fullPage: true });

    // The server agrees: the newest project's dataset holds exactly these photos.
    const get = async (path: string) => (await fetch(`${server.base}${path}`)).json();
    const projects = (await get("/v1/projects?page_size=500")).items as Array<{ project_id: string }>;
    const project = projects.at(-1)!;
    const dataset = (await get(`/v1/projects/${project.project_id}/datasets`)).items[0];
    const images = (await get(`/v1/datasets/${dataset.dataset_id}/images?page_size=500`)).items as Array<{ name: string }>;
    expect(images.map((i) => i.name).sort()).toEqual(photos);

    const caps = (await get("/v1/capabilities")).features as Record<string, boolean>;
    await page.click("#start-button");
    if (caps["pipelines.incremental"]) {
      await expect.poll(() => page.locator("#live-body").isVisible(), { timeout: 15_000 }).toBe(true);
      await expect.poll(() => page.locator("#live-title").textContent()).toMatch(/^Job \w+ \(incremental\)/);
    } else {
      const status = page.locator("#recipe-status");
      await expect.poll(() => status.textContent(), { timeout: 15_000 }).toContain("(501)");
      expect(await status.textContent()).toMatch(/Missing capability: [\w.-]+/);
    }
    await page.screenshot({ path: join(SHOTS, "3-recipe-started.png"), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(SHOTS, "3b-phone.png"), fullPage: true });
    await page.close();
  });

  it("re-sends no bytes for photos the server already holds", async () => {
    const page = await openPage();
    const photo = readdirSync(join(SET, "images")).filter((f) => f.endsWith(".jpg")).sort()[0]!;
    await page.setInputFiles("#file-input", [join(SET, "images", photo)]);
    await expect.poll(() => page.locator("#upload-button").isEnabled(), { timeout: 15_000 }).toBe(true);
    await page.click("#upload-button");
    const tile = page.locator('.tile[data-state="registered"]');
    await expect.poll(() => tile.count(), { timeout: 30_000 }).toBe(1);
    // The upload created in the first test under this content's Idempotency-Key is finalized.
    expect(await tile.textContent()).toContain("already on the server, no bytes sent");
    const uploads = await page.evaluate(() => performance.getEntriesByType("resource").filter((e) => /\/v1\/uploads\/[^/]+$/.test(e.name)).length);
    expect(uploads).toBe(0);
    await page.close();
  });

  it("draws the snapshot's points and camera frustums, and shows a camera's observations", async () => {
    const fixture = await snapshotFromReference(join(SET, "reference"));
    const rid = "01TESTRECONSTRUCTION00000A";
    const ranges: string[] = [];
    const page = await context.newPage();
    page.on("pageerror", (e) => console.error("[page error]", e.message));
    await page.route(`**/v1/reconstructions/${rid}/snapshots**`, (route) => serveSnapshot(route, fixture.files, ranges));
    await page.goto(`${server.base}/#recon=${rid}`);
    const status = page.locator("#viewer-status");
    const n = fixture.pointCount.toLocaleString("en-US");
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe(`Snapshot 1: ${n} of ${n} points, ${fixture.cameraCount} cameras.`);
    // The header first, then whole records by Range (one request holds this small cloud).
    expect(ranges).toEqual([`points.bin 0-${POINTS_HEADER_BYTES - 1}`, `points.bin ${POINTS_HEADER_BYTES}-${POINTS_HEADER_BYTES + fixture.pointCount * POINT_RECORD_BYTES - 1}`]);
    await page.waitForTimeout(500);
    const viewer = page.locator("#viewer");
    const png = await viewer.screenshot({ path: join(SHOTS, "4-viewer.png") });
    const { frustum, point } = await classifyPixels(png);
    expect(frustum, "orange frustum pixels").toBeGreaterThan(200);
    expect(point, "point-cloud pixels").toBeGreaterThan(500);

    await page.selectOption("#camera-select", { index: 1 });
    await expect.poll(() => page.locator("#camera-detail").isVisible()).toBe(true);
    await expect.poll(() => page.locator("#camera-caption").textContent()).toMatch(/\d+ of \d+ keypoints observe 3D points/);
    await page.locator("#live").screenshot({ path: join(SHOTS, "5-camera-selected.png") });
    await page.close();
  });

  it("follows a job's events to the end: timeline, log, 100% and the snapshot of snapshot_available", async () => {
    const fixture = await snapshotFromReference(join(SET, "reference"));
    const [jid, rid] = ["01TESTJOB00000000000000000A", "01TESTRECONSTRUCTION00000C"];
    const phases = ["feature_extraction", "incremental_register"];
    const bodies = [
      ...phases.flatMap((phase) => [
        { kind: "phase_started", phase },
        { kind: "phase_progress", phase, current: 10, total: 10, rate: 2.5 },
        { kind: "phase_completed", phase },
      ]),
      { kind: "log_line", level: "INFO", message: "registered 10 of 10 images" },
      { kind: "warning", message: "image 7 has few matches" },
      { kind: "snapshot_available", snapshot_seq: 1, summary: {} },
      { kind: "job_status", status: "succeeded", error_class: null },
    ];
    const sse = bodies
      .map((b, i) => ({ schema_version: 1, event_id: i + 1, seq: i + 1, ts: "2026-01-01T00:00:00.000Z", job_id: jid, task_id: null, ...b }))
      .map((e) => `id: ${e.event_id}\ndata: ${JSON.stringify(e)}\n\n`)
      .join("");
    const task = (kind: string) => ({ task_id: `01TASK${kind.toUpperCase().padEnd(20, "0")}`, kind, status: "succeeded", progress: 1, latest_event_kind: "phase_completed", elapsed_seconds: 1, current: null, total: null });
    const progress = {
      job_id: jid, recipe: "incremental", status: "succeeded", progress: 1, total_tasks: 4, completed_tasks: 4, task_counts: { succeeded: 4 },
      current_task_id: null, current_task_kind: null, current_phase: "incremental_register", latest_event_id: bodies.length,
      tasks: ["extract", "match", "verify", "map"].map(task),
    };
    const page = await context.newPage();
    await page.route(`**/v1/jobs/${jid}/progress`, (route) => route.fulfill({ json: progress }));
    await page.route(`**/v1/jobs/${jid}/events`, (route) => route.fulfill({ status: 200, headers: { "Content-Type": "text/event-stream" }, body: sse }));
    await page.route(`**/v1/jobs/${jid}`, (route) => route.fulfill({ json: { job_id: jid, recon_id: rid, status: "succeeded" } }));
    await page.route(`**/v1/reconstructions/${rid}/snapshots**`, (route) => serveSnapshot(route, fixture.files));
    await page.goto(`${server.base}/#job=${jid}`);
    const n = fixture.pointCount.toLocaleString("en-US");
    await expect.poll(() => page.locator("#viewer-status").textContent(), { timeout: 30_000 }).toBe(`Snapshot 1: ${n} of ${n} points, ${fixture.cameraCount} cameras.`);
    expect(await page.locator("#job-progress-text").textContent()).toContain("100%");
    await expect.poll(() => page.locator("#stream-status").textContent()).toContain("finished");
    for (const name of ["Features", "Registering photos"]) {
      expect(await page.locator("#timeline li", { hasText: name }).getAttribute("data-state")).toBe("done");
    }
    const log = await page.locator("#log").textContent();
    for (const line of ["registered 10 of 10 images", "image 7 has few matches", "snapshot 1 sealed", "job succeeded"]) expect(log).toContain(line);
    await page.waitForTimeout(300);
    await page.locator("#live").screenshot({ path: join(SHOTS, "9-job-replayed.png") });
    await page.close();
  });

  it("reads a large cloud from its octree tiles instead of the whole points.bin", async () => {
    const fixture = await snapshotFromReference(join(SET, "reference"));
    const points = fixture.files["points.bin"]!;
    const n = fixture.pointCount;
    // Two tiles of the finest level (each a points file, 2.14 rule 3), under a header that
    // announces more points than the viewer reads from points.bin.
    const half = Math.floor(n / 2);
    const tile = (from: number, to: number) => {
      const out = new Uint8Array(POINTS_HEADER_BYTES + (to - from) * POINT_RECORD_BYTES);
      out.set(points.subarray(0, POINTS_HEADER_BYTES));
      new DataView(out.buffer).setBigUint64(12, BigInt(to - from), true);
      out.set(points.subarray(POINTS_HEADER_BYTES + from * POINT_RECORD_BYTES, POINTS_HEADER_BYTES + to * POINT_RECORD_BYTES), POINTS_HEADER_BYTES);
      return out;
    };
    const bigHeader = points.slice(0, POINTS_HEADER_BYTES);
    new DataView(bigHeader.buffer).setBigUint64(12, 5_000_000n, true);
    const files = {
      ...fixture.files,
      "points.bin": bigHeader,
      "tiles/index.json": new TextEncoder().encode(
        JSON.stringify({
          bbox_min: [-1, -1, -1],
          bbox_max: [1, 1, 1],
          max_level: 1,
          tile_count: 3,
          tiles: [
            { level: 0, x: 0, y: 0, z: 0, count: n, byte_size: 0 },
            { level: 1, x: 0, y: 0, z: 0, count: half, byte_size: 0 },
            { level: 1, x: 1, y: 0, z: 0, count: n - half, byte_size: 0 },
          ],
        }),
      ),
      "tiles/1/0/0/0.bin": tile(0, half),
      "tiles/1/1/0/0.bin": tile(half, n),
    };
    const rid = "01TESTRECONSTRUCTION00000B";
    const ranges: string[] = [];
    const page = await context.newPage();
    await page.route(`**/v1/reconstructions/${rid}/snapshots**`, (route) => serveSnapshot(route, files, ranges));
    await page.goto(`${server.base}/#recon=${rid}`);
    const count = n.toLocaleString("en-US");
    await expect.poll(() => page.locator("#viewer-status").textContent(), { timeout: 30_000 }).toBe(`Snapshot 1: ${count} of ${count} points, ${fixture.cameraCount} cameras.`);
    expect(ranges).toEqual([`points.bin 0-${POINTS_HEADER_BYTES - 1}`]);
    await page.close();
  });
});

/**
 * The runtime versions of the engine the page loads (its copy in site/dist, which a concurrent
 * engine rebuild does not touch) and of the shaders, as the page's runner computes them.
 */
async function pageRuntimeVersions(): Promise<Record<string, string>> {
  const assets = join(ROOT, "site/dist/assets");
  const wasm = readdirSync(assets).find((f) => /^edgesfm-engine-.*\.wasm$/.test(f));
  if (!wasm) throw new Error("site/dist has no engine wasm; run npm run build:site");
  return runtimeVersionsOf(new Uint8Array(readFileSync(join(assets, wasm))), await loadShaderSources());
}

/** What the pipeline needs (as vitest.config.ts's worker tests), on a stack whose runtime is this checkout's. */
const PIPELINE_CAPABILITIES = "features.extract.sift,pairs.exhaustive,matchers.nn-mutual,matches.verify,pipelines.incremental,map.incremental";

describe("site: a live run computed by the visitor's own tab", () => {
  let live: Server;
  beforeAll(async () => {
    live = await startServer({ SVC_TEST_CAPABILITIES: PIPELINE_CAPABILITIES, SVC_RUNTIME_VERSIONS: JSON.stringify(await pageRuntimeVersions()) });
  });
  afterAll(() => live?.stop());

  it("shows feature extraction progress from the SSE stream while this tab computes, then cancels the job", async () => {
    const page = await openPage(live.base);
    await expect.poll(() => page.locator("#compute-status").textContent(), { timeout: 30_000 }).toContain("This tab computes: on");
    const photos = readdirSync(join(SET, "images")).filter((f) => f.endsWith(".jpg")).sort();
    await page.setInputFiles("#file-input", photos.map((f) => join(SET, "images", f)));
    await expect.poll(() => page.locator("#upload-button").isEnabled(), { timeout: 15_000 }).toBe(true);
    await page.click("#upload-button");
    await expect.poll(() => page.locator('.tile[data-state="registered"]').count(), { timeout: 60_000 }).toBe(photos.length);

    // Fewer features keep the in-browser extraction short on a shared 2-core machine.
    await page.fill("#max-features", "1024");
    await page.click("#start-button");
    await expect.poll(() => page.locator("#live-title").textContent(), { timeout: 15_000 }).toMatch(/^Job \w+ \(incremental\)/);
    const features = page.locator("#timeline li", { hasText: "Features" });
    await expect.poll(() => features.locator(".phase-text").textContent(), { timeout: 90_000 }).toMatch(new RegExp(`^[1-9]\\d*/${photos.length}`));
    expect(await page.locator("#compute-status").textContent()).toMatch(/computing extract|last task extract/);
    await page.screenshot({ path: join(SHOTS, "6-live-run.png"), fullPage: true });

    const row = page.locator("#jobs-table tbody tr").first();
    await page.click("#jobs-refresh");
    await row.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(async () => {
      await page.click("#jobs-refresh");
      return row.locator(".badge").textContent();
    }, { timeout: 60_000, interval: 1000 }).toMatch(/^cancelled/);
    expect(await row.getByRole("button", { name: "Resume" }).count()).toBe(1);
    await page.locator("#jobs").screenshot({ path: join(SHOTS, "7-job-cancelled.png") });
    await page.close();
  });
});

describe("site: api_key mode", () => {
  let keyed: Server;
  beforeAll(async () => {
    keyed = await startServer({ SVC_AUTH_MODE: "api_key" });
  });
  afterAll(() => keyed?.stop());

  it("asks for a key, then works with it (sent as Bearer) and remembers it", async () => {
    const page = await context.newPage();
    await page.goto(`${keyed.base}/`);
    const status = page.locator("#server-status");
    await expect.poll(() => status.textContent(), { timeout: 15_000 }).toContain("Enter an API key");
    expect(await page.locator("#key-box").getAttribute("open")).not.toBeNull();
    const issued = await fetch(`${keyed.base}/v1/admin/api-keys`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ tenant_id: "site-e2e" }) });
    const { raw_key } = (await issued.json()) as { raw_key: string };
    await page.fill("#api-key", raw_key);
    await page.click("#key-form button[type=submit]");
    await expect.poll(() => status.getAttribute("data-kind"), { timeout: 15_000 }).toBe("ok");
    await expect.poll(() => page.locator("#jobs-empty").isVisible()).toBe(true);
    await expect.poll(() => page.locator("#compute-status").textContent(), { timeout: 30_000 }).toContain("This tab computes: on");

    // Lending to the pool needs a runner token, which the operator issues.
    expect(await page.locator("#compute-lend").isDisabled()).toBe(true);
    const token = await fetch(`${keyed.base}/v1/admin/runner-tokens`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "site-e2e" }) });
    const { raw_token } = (await token.json()) as { raw_token: string };
    await page.click(".lend summary");
    await page.fill("#runner-token", raw_token);
    await page.press("#runner-token", "Enter");
    await page.check("#compute-lend");
    await expect.poll(() => page.locator("#lend-status").textContent(), { timeout: 30_000 }).toContain("Lending: on");
    await page.screenshot({ path: join(SHOTS, "8-api-key.png") });
    await page.reload();
    await expect.poll(() => status.getAttribute("data-kind"), { timeout: 15_000 }).toBe("ok");
    await page.close();
  });
});

/** Snapshot files from memory, honouring Range as the server does (4.9, RFC 9110 14). */
function serveSnapshot(route: Route, files: Record<string, Uint8Array>, ranges: string[] = []): Promise<void> {
  const path = new URL(route.request().url()).pathname;
  if (path.endsWith("/snapshots")) return route.fulfill({ json: { seqs: [1], _links: {} } });
  const name = /\/snapshots\/1\/(.+)$/.exec(path)?.[1] ?? "";
  const body = files[name];
  if (!body) return route.fulfill({ status: 404, contentType: "application/problem+json", body: JSON.stringify({ type: "about:blank", title: "Not Found", status: 404, instance: path }) });
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

/** Pixels of the frustum orange (#ff7a00, antialiased) and of anything else off the background. */
async function classifyPixels(png: Buffer): Promise<{ frustum: number; point: number }> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let frustum = 0;
  let point = 0;
  for (let i = 0; i < info.width * info.height * 3; i += 3) {
    const [r, g, b] = [data[i]!, data[i + 1]!, data[i + 2]!];
    if (r > 150 && g > 50 && g < 160 && b < 70 && r - g > 70) frustum++;
    else if (Math.abs(r - 16) + Math.abs(g - 20) + Math.abs(b - 28) > 60) point++;
  }
  return { frustum, point };
}

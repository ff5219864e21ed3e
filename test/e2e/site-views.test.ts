/**
 * The demo's views (issue 7) in Debian's headless Chromium, on given data rather than a live run:
 * a snapshot made from the COLMAP reference (served from memory in place of the snapshot routes)
 * drawn as points and camera frustums, read by Range requests or from octree tiles; a job's
 * event log replayed to its end; and the api_key mode, including lending compute under a runner
 * token. Screenshots go to test-output/site-e2e/views/.
 */
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { EdgeSfmClient, unwrap } from "../../client/index";
import { type Server, startServer } from "../conformance/server";
import { POINTS_HEADER_BYTES, POINT_RECORD_BYTES } from "../../protocol/wire/points";
import { SET, buildSiteIfStale, freshShotsFolder, classifyPixels, serveSnapshot } from "./site-support";
import { snapshotFromReference } from "./site-snapshot-fixture";

let server: Server;
let shots = "";
let context: BrowserContext;
let browser: Awaited<ReturnType<typeof launchChromium>>;

beforeAll(async () => {
  buildSiteIfStale();
  shots = freshShotsFolder("views");
  server = await startServer();
  browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
  context = browser.context;
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("site: the 3D view and the live view on given data", () => {
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
    await expect
      .poll(() => status.textContent(), { timeout: 30_000 })
      .toBe(`Snapshot 1: ${n} of ${n} points, ${fixture.cameraCount} cameras.`);
    // The header first, then whole records by Range (one request holds this small cloud).
    expect(ranges).toEqual([
      `points.bin 0-${POINTS_HEADER_BYTES - 1}`,
      `points.bin ${POINTS_HEADER_BYTES}-${POINTS_HEADER_BYTES + fixture.pointCount * POINT_RECORD_BYTES - 1}`,
    ]);
    await page.waitForTimeout(500);
    const viewer = page.locator("#viewer");
    const png = await viewer.screenshot({ path: join(shots, "1-reference-snapshot.png") });
    const { frustum, point } = await classifyPixels(png);
    expect(frustum, "orange frustum pixels").toBeGreaterThan(200);
    expect(point, "point-cloud pixels").toBeGreaterThan(500);

    await page.selectOption("#camera-select", { index: 1 });
    await expect.poll(() => page.locator("#camera-detail").isVisible()).toBe(true);
    await expect.poll(() => page.locator("#camera-caption").textContent()).toMatch(/\d+ of \d+ keypoints observe 3D points/);
    await page.locator("#live").screenshot({ path: join(shots, "2-camera-chosen.png") });
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
    const task = (kind: string) => ({
      task_id: `01TASK${kind.toUpperCase().padEnd(20, "0")}`,
      kind,
      status: "succeeded",
      progress: 1,
      latest_event_kind: "phase_completed",
      elapsed_seconds: 1,
      current: null,
      total: null,
    });
    const progress = {
      job_id: jid,
      recipe: "incremental",
      status: "succeeded",
      progress: 1,
      total_tasks: 4,
      completed_tasks: 4,
      task_counts: { succeeded: 4 },
      current_task_id: null,
      current_task_kind: null,
      current_phase: "incremental_register",
      latest_event_id: bodies.length,
      tasks: ["extract", "match", "verify", "map"].map(task),
    };
    const page = await context.newPage();
    await page.route(`**/v1/jobs/${jid}/progress`, (route) => route.fulfill({ json: progress }));
    await page.route(`**/v1/jobs/${jid}/events`, (route) =>
      route.fulfill({ status: 200, headers: { "Content-Type": "text/event-stream" }, body: sse }),
    );
    await page.route(`**/v1/jobs/${jid}`, (route) => route.fulfill({ json: { job_id: jid, recon_id: rid, status: "succeeded" } }));
    await page.route(`**/v1/reconstructions/${rid}/snapshots**`, (route) => serveSnapshot(route, fixture.files));
    await page.goto(`${server.base}/#job=${jid}`);
    const n = fixture.pointCount.toLocaleString("en-US");
    await expect
      .poll(() => page.locator("#viewer-status").textContent(), { timeout: 30_000 })
      .toBe(`Snapshot 1: ${n} of ${n} points, ${fixture.cameraCount} cameras.`);
    expect(await page.locator("#job-progress-text").textContent()).toContain("100%");
    await expect.poll(() => page.locator("#job-note").textContent()).toContain("Finished.");
    await expect.poll(() => page.locator("#stream-status").isHidden()).toBe(true);
    for (const name of ["Features", "Registering photos"]) {
      expect(await page.locator("#timeline li", { hasText: name }).getAttribute("data-state")).toBe("done");
    }
    const log = await page.locator("#log").textContent();
    for (const line of ["registered 10 of 10 images", "image 7 has few matches", "snapshot 1 sealed", "job succeeded"])
      expect(log).toContain(line);
    await page.waitForTimeout(300);
    await page.locator("#live").screenshot({ path: join(shots, "3-job-replayed.png") });
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
      out.set(
        points.subarray(POINTS_HEADER_BYTES + from * POINT_RECORD_BYTES, POINTS_HEADER_BYTES + to * POINT_RECORD_BYTES),
        POINTS_HEADER_BYTES,
      );
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
    await expect
      .poll(() => page.locator("#viewer-status").textContent(), { timeout: 30_000 })
      .toBe(`Snapshot 1: ${count} of ${count} points, ${fixture.cameraCount} cameras.`);
    expect(ranges).toEqual([`points.bin 0-${POINTS_HEADER_BYTES - 1}`]);
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
    const operator = new EdgeSfmClient({ baseUrl: keyed.base }).api;
    const { raw_key } = await unwrap(operator.POST("/v1/admin/api-keys", { body: { tenant_id: "site-e2e" } }));
    await page.fill("#api-key", raw_key!);
    await page.click("#key-form button[type=submit]");
    await expect.poll(() => status.getAttribute("data-kind"), { timeout: 15_000 }).toBe("ok");
    await expect.poll(() => page.locator("#jobs-empty").isVisible()).toBe(true);
    await expect.poll(() => page.locator("#compute-status").textContent(), { timeout: 30_000 }).toContain("This tab computes: on");

    // Lending to the pool needs a runner token, which the operator issues, where the operator lets no keyless volunteers in (here).
    await page.click(".lend summary");
    await page.check("#compute-lend");
    await expect.poll(() => page.locator("#lend-status").textContent(), { timeout: 30_000 }).toContain("SVC_POOL_KEYLESS_RUNNERS is off");
    const { raw_token } = await unwrap(operator.POST("/v1/admin/runner-tokens", { body: { name: "site-e2e" } }));
    await page.fill("#runner-token", raw_token!);
    // A token given after a refused start retries it (ComputePanel: RunnerSwitch.restart), so the box turns itself on.
    await page.press("#runner-token", "Enter");
    await expect.poll(() => page.locator("#lend-status").textContent(), { timeout: 30_000 }).toContain("Lending: on");
    expect(await page.locator("#compute-lend").isChecked()).toBe(true);
    await page.screenshot({ path: join(shots, "4-api-key.png") });
    await page.reload();
    await expect.poll(() => status.getAttribute("data-kind"), { timeout: 15_000 }).toBe("ok");
    await page.close();
  });
});

/**
 * A visitor's whole flow through the web demo (issue 7) in Debian's headless Chromium, against
 * the real local stack, with the visitor's own tab computing (the default): they drop the
 * sacre-coeur photos and one unreadable file on the drop zone, are told which file cannot be
 * used, upload the rest (100%), start the recipe with its defaults and watch it to the end: the
 * timeline and the job's progress reach 100% and "succeeded", the 3D view loads each snapshot as
 * it is announced and shows points and camera frustums (checked on screenshots' pixels), and a
 * click on a frustum shows that camera's photo with its observations. A second visitor does
 * everything by keyboard, with this tab's compute paused: a matcher the server does not offer is
 * refused with its problem's title and detail, the job then waits and says why, and is cancelled
 * from the job list. Screenshots of each step (and the downloaded files) go to test-output/site-e2e/visitor/.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Locator, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { EdgeSfmClient, unwrap } from "../../client/index";
import { parseColmapTextModel } from "../../engine-wasm/ts/colmap-text";
import { POINTS_HEADER_BYTES } from "../../protocol/wire/points";
import { readTar } from "../../protocol/wire/tar";
import { type Server, startServer } from "../conformance/server";
import {
  buildSiteIfStale,
  classifyPixels,
  contrastFailures,
  dropFiles,
  freshShotsFolder,
  frustumPixels,
  openPage,
  pageRuntimeVersions,
  setPhotos,
  tabTo,
} from "./site-support";

let server: Server;
let context: BrowserContext;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let shots = "";
const shot = (name: string) => join(shots, name);

beforeAll(async () => {
  buildSiteIfStale();
  shots = freshShotsFolder("visitor");
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await pageRuntimeVersions()) });
  browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
  context = browser.context;
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Whether the page scrolls sideways (content wider than the viewport). */
const overflowsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);

describe("site: a visitor reconstructs a shared photo set, computed by their own tab", () => {
  it("drops the photos, uploads them, starts the defaults and sees the model grow to the end in 3D", async () => {
    const photos = setPhotos();
    const page = await openPage(context, server.base);
    await expect.poll(() => page.locator("#compute-status").textContent(), { timeout: 30_000 }).toContain("This tab computes: on");
    for (const empty of ["#photo-empty", "#live-empty"]) expect(await page.locator(empty).isVisible(), empty).toBe(true);
    await expect.poll(() => page.locator("#jobs-empty").isVisible()).toBe(true);
    expect(await contrastFailures(page)).toEqual([]);
    await page.screenshot({ path: shot("01-first-visit.png"), fullPage: true });

    // Every snapshot file the 3D view asks for, with its Range.
    const snapshotReads: Array<{ seq: number; file: string; range: string | undefined }> = [];
    page.on("request", (r) => {
      const m = /\/snapshots\/(\d+)\/(.+)$/.exec(new URL(r.url()).pathname);
      if (m) snapshotReads.push({ seq: Number(m[1]), file: m[2]!, range: r.headers()["range"] });
    });

    const broken = {
      name: "holiday-0042.jpg",
      type: "image/jpeg",
      bytes: new TextEncoder().encode("this is not a JPEG, whatever its name says"),
    };
    await dropFiles(page, "#drop-zone", [...photos.map((path) => ({ path, type: "image/jpeg" })), broken]);
    await expect.poll(() => page.locator("#photo-grid .tile").count()).toBe(photos.length + 1);
    const unreadable = page.locator('.tile[data-state="unreadable"]');
    await expect.poll(() => unreadable.count(), { timeout: 15_000 }).toBe(1);
    expect(await unreadable.textContent()).toContain("holiday-0042.jpg");
    expect(await unreadable.textContent()).toContain("not a photo the browser can decode");
    await expect
      .poll(() => page.locator("#photo-status").textContent())
      .toContain("Cannot use holiday-0042.jpg: not a photo the browser can decode");
    expect(await page.locator("#photo-status").getAttribute("data-kind")).toBe("error");
    await expect.poll(() => page.locator("#upload-button").textContent(), { timeout: 15_000 }).toBe(`Upload ${photos.length} photos`);
    await page.screenshot({ path: shot("02-photos-dropped.png"), fullPage: true });

    await page.click("#upload-button");
    await expect.poll(() => page.locator('.tile[data-state="registered"]').count(), { timeout: 120_000 }).toBe(photos.length);
    expect(await page.locator("#upload-overall").evaluate((p: HTMLProgressElement) => p.value / p.max)).toBe(1);
    expect(await page.locator("#upload-overall-text").textContent()).toMatch(/^100% of /);
    expect(await page.locator("#photo-status").textContent()).toContain(`${photos.length} photo(s) registered`);
    expect(await page.locator("#start-button").isEnabled()).toBe(true);
    await page.screenshot({ path: shot("03-photos-uploaded.png"), fullPage: true });

    // The recipe as it comes: nothing changed.
    await page.click("#start-button");
    const title = page.locator("#live-title");
    await expect.poll(() => title.textContent(), { timeout: 15_000 }).toMatch(/^Job \w+ \(incremental\)/);
    const jobId = /^Job (\w+)/.exec((await title.textContent())!)![1]!;
    // This tab takes the job's tasks (a quick one may already be done when the status is read).
    await expect
      .poll(() => page.locator("#compute-status").textContent(), { timeout: 120_000 })
      .toMatch(/computing \w+ for job|last task \w+ took/);
    await expect.poll(() => page.locator("#viewer-status").textContent(), { timeout: 900_000, interval: 2000 }).toMatch(/^Snapshot \d+: /);
    await page.screenshot({ path: shot("04-first-snapshot.png"), fullPage: true });

    await expect.poll(() => title.textContent(), { timeout: 900_000, interval: 2000 }).toMatch(/: (succeeded|failed|cancelled)/);
    await page.screenshot({ path: shot("05-job-ended.png"), fullPage: true });
    const { api } = new EdgeSfmClient({ baseUrl: server.base });
    const job = await unwrap(api.GET("/v1/jobs/{jid}", { params: { path: { jid: jobId } } }));
    expect(
      job.status,
      JSON.stringify(
        job.tasks?.map((t: { kind: string; status: string; error_message: string | null }) => [t.kind, t.status, t.error_message]),
      ),
    ).toBe("succeeded");
    expect(await title.textContent()).toContain(": succeeded");
    await expect
      .poll(() => page.locator("#job-progress").evaluate((p: HTMLProgressElement) => p.value / p.max), { timeout: 10_000 })
      .toBe(1);
    expect(await page.locator("#job-progress-text").textContent()).toMatch(/^100% · 4\/4 tasks/);
    const phases = page.locator("#timeline li");
    expect(await phases.count()).toBeGreaterThanOrEqual(4);
    for (const phase of await phases.all()) {
      expect(await phase.getAttribute("data-state"), (await phase.textContent()) ?? "").toBe("done");
      expect(await phase.locator("progress").evaluate((p: HTMLProgressElement) => p.value / p.max)).toBe(1);
    }
    await expect.poll(() => page.locator("#job-note").textContent()).toContain("Finished.");
    await expect.poll(() => page.locator("#stream-status").isHidden()).toBe(true);
    expect(await page.locator("#log").textContent()).toContain("job succeeded");

    // The view follows the snapshots as they are sealed, ending on the last one.
    const { seqs } = await unwrap(api.GET("/v1/reconstructions/{rid}/snapshots", { params: { path: { rid: job.recon_id! } } }));
    const last = Math.max(...seqs);
    const status = page.locator("#viewer-status");
    await expect
      .poll(() => status.textContent(), { timeout: 60_000 })
      .toMatch(new RegExp(`^Snapshot ${last}: ([\\d,]+) of \\1 points, ${photos.length} cameras\\.$`));
    const seen = [...new Set(snapshotReads.filter((r) => r.file === "cameras.json").map((r) => r.seq))];
    expect(seqs.length, "snapshots sealed during the run").toBeGreaterThan(1);
    expect(seen.length, `snapshots loaded: ${seen}`).toBeGreaterThan(1);
    expect(seen.at(-1)).toBe(last);
    // points.bin is read by Range: its header, then whole records.
    const pointReads = snapshotReads.filter((r) => r.seq === last && r.file === "points.bin");
    expect(pointReads[0]?.range).toBe(`bytes=0-${POINTS_HEADER_BYTES - 1}`);
    expect(pointReads.slice(1).every((r) => r.range?.startsWith(`bytes=${POINTS_HEADER_BYTES}-`))).toBe(true);

    await page.waitForTimeout(500);
    const viewer = page.locator("#viewer");
    const png = await viewer.screenshot({ path: shot("06-finished-3d.png") });
    const { frustum, point } = await classifyPixels(png);
    expect(frustum, "frustum-orange pixels").toBeGreaterThan(150);
    expect(point, "point-cloud pixels").toBeGreaterThan(500);

    // A click on a frustum, where the orange is densest.
    const box = (await viewer.boundingBox())!;
    const scale = (await sharp(png).metadata()).width! / box.width;
    const detail = page.locator("#camera-detail");
    for (const at of (await frustumPixels(png, scale)).slice(0, 5)) {
      await page.mouse.click(box.x + at.x, box.y + at.y);
      if (await detail.isVisible()) break;
    }
    await expect.poll(() => detail.isVisible()).toBe(true);
    const chosen = await page.locator("#camera-select").evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent ?? "");
    expect(photos.map((p) => p.split("/").pop())).toContain(chosen);
    await expect
      .poll(() => page.locator("#camera-caption").textContent())
      .toMatch(new RegExp(`^${chosen.replace(".", "\\.")}: [1-9]\\d* of \\d+ keypoints observe 3D points`));
    expect(await page.locator("#camera-caption").textContent()).not.toContain("not available");
    const photo = await page.locator("#camera-photo").screenshot();
    expect(await observationPixels(photo), "green observation dots on the photo").toBeGreaterThan(100);
    await page.waitForTimeout(300);
    await page.locator("#live").screenshot({ path: shot("07-camera-clicked.png") });

    // Downloads: each an export job (computed by this tab, followed through its events), then its file.
    const points = Number(/of ([\d,]+) points/.exec((await status.textContent())!)![1]!.replaceAll(",", ""));
    const jobRow = page.locator("#jobs-table tbody tr", { hasText: jobId });
    const download = async (label: string, where: Locator, status: Locator): Promise<Uint8Array> => {
      const downloaded = page.waitForEvent("download", { timeout: 300_000 });
      await where.getByRole("button", { name: `Download ${label}` }).click();
      await expect.poll(() => status.textContent()).toMatch(new RegExp(`^${label}: `));
      const file = await downloaded;
      const path = shot(file.suggestedFilename());
      await file.saveAs(path);
      await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe(`${label}: downloaded.`);
      return new Uint8Array(readFileSync(path));
    };
    // From the finished live view, and from the job list.
    const ply = await download("PLY", page.locator("#job-downloads"), page.locator("#live-download-status"));
    expect(new TextDecoder().decode(ply.subarray(0, 200))).toContain(`element vertex ${points}\n`);
    const tar = readTar(await download("COLMAP text", jobRow, page.locator("#download-status")));
    expect([...tar.keys()].sort()).toEqual(["cameras.txt", "images.txt", "points3D.txt"]);
    const text = (name: string) => new TextDecoder().decode(tar.get(name));
    const model = parseColmapTextModel({ cameras: text("cameras.txt"), images: text("images.txt"), points3D: text("points3D.txt") });
    expect(model.images.size).toBe(photos.length);
    expect(model.points3D.size).toBe(points);
    // Each export is a job of its own, whose file can be downloaded again.
    const exported = page.locator("#jobs-table tbody tr", { hasText: "export" }).getByRole("button", { name: "Download PLY" });
    await expect.poll(() => exported.count(), { timeout: 15_000 }).toBe(1);
    const again = page.waitForEvent("download");
    await exported.click();
    expect(new Uint8Array(readFileSync(await (await again).path()))).toEqual(ply);
    await page.locator("#jobs").screenshot({ path: shot("08-downloaded.png") });

    // The same page on a phone.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(500);
    expect(await overflowsSideways(page)).toBe(false);
    await page.screenshot({ path: shot("09-phone.png"), fullPage: true });
    writeFileSync(shot("aria-snapshot.yml"), await page.locator("body").ariaSnapshot());
    await page.close();
  }, 1_200_000);

  it("by keyboard alone, with this tab's compute paused: uploads nothing twice, sees a refusal's problem, the job waits and says why, is cancelled and resumed", async () => {
    const page = await openPage(context, server.base);
    // Listening this early lets Playwright switch the page's file-chooser interception on before the key
    // press (a listener added just before the press can lose that race, and no event comes).
    const chooser = page.waitForEvent("filechooser", { timeout: 300_000 });
    await expect.poll(() => page.locator("#compute-status").textContent(), { timeout: 30_000 }).toContain("This tab computes: on");

    expect(await tabTo(page, "#compute-this-tab")).toContain("Skip to content");
    await page.keyboard.press("Space");
    await expect.poll(() => page.locator("#compute-status").textContent(), { timeout: 30_000 }).toContain("paused");

    await tabTo(page, "#file-input");
    await page.keyboard.press("Space");
    await (await chooser).setFiles(setPhotos().slice(0, 2));
    await expect.poll(() => page.locator("#upload-button").isEnabled(), { timeout: 15_000 }).toBe(true);
    await tabTo(page, "#upload-button");
    await page.keyboard.press("Enter");
    const tiles = page.locator('.tile[data-state="registered"]');
    await expect.poll(() => tiles.count(), { timeout: 30_000 }).toBe(2);
    // The first test uploaded these bytes: the server's uploads under their Idempotency-Keys are finalized.
    for (const tile of await tiles.all()) expect(await tile.textContent()).toContain("already on the server, no bytes sent");
    const patches = await page.evaluate(
      () => performance.getEntriesByType("resource").filter((e) => /\/v1\/uploads\/[^/:]+$/.test(e.name)).length,
    );
    expect(patches).toBe(0);

    // A matcher this server does not offer: its 501 problem is shown with its title, detail and capability.
    await tabTo(page, "#matcher-type");
    await page.keyboard.type("s");
    expect(await page.locator("#matcher-type").inputValue()).toBe("superglue");
    expect(await page.locator("#recipe-capabilities").textContent()).toContain("does not offer matchers.superglue");
    await tabTo(page, "#start-button");
    await page.keyboard.press("Enter");
    const refused = page.locator("#recipe-status");
    await expect.poll(() => refused.textContent(), { timeout: 15_000 }).toContain("(501)");
    expect(await refused.textContent()).toContain("Missing capability: matchers.superglue (the server lists it as unavailable).");
    expect(await refused.getAttribute("role")).toBe("alert");
    await page.screenshot({ path: shot("10-keyboard-refused.png"), fullPage: true });

    await tabTo(page, "#matcher-type", 20, "Shift+Tab");
    await page.keyboard.type("nn-m");
    expect(await page.locator("#matcher-type").inputValue()).toBe("nn-mutual");
    await tabTo(page, "#start-button");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("#live-title").textContent(), { timeout: 15_000 }).toMatch(/: pending/);
    const jobId = /^Job (\w+)/.exec((await page.locator("#live-title").textContent())!)![1]!;
    await expect.poll(() => page.locator("#job-note").textContent()).toContain("Waiting for a computer");
    await page.screenshot({ path: shot("11-keyboard-waiting.png"), fullPage: true });

    const row = page.locator("#jobs-table tbody tr").first();
    await expect.poll(() => row.getByRole("button", { name: "Cancel" }).count(), { timeout: 15_000 }).toBe(1);
    const passed = await tabTo(page, "#jobs-table tbody tr:first-child button:text-is('Cancel')", 80);
    expect(passed).toContain("Refresh");
    await page.keyboard.press("Enter");
    await expect.poll(() => row.locator(".badge").textContent(), { timeout: 30_000, interval: 1000 }).toMatch(/^cancelled/);
    expect(await row.getByRole("button", { name: "Resume" }).count()).toBe(1);
    await expect.poll(() => page.locator("#job-note").textContent(), { timeout: 15_000 }).toContain("cancelled");
    // Ended, not completed: nothing was computed here. Extraction may count as done, answered whole
    // from the per-image feature cache the earlier test filled with the same photos.
    await expect.poll(() => page.locator("#job-progress-text").textContent()).toMatch(/^cancelled · [01]\/4 tasks done$/);
    expect(await contrastFailures(page)).toEqual([]);
    await page.screenshot({ path: shot("12-keyboard-cancelled.png"), fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await contrastFailures(page)).toEqual([]);
    await page.screenshot({ path: shot("13-dark.png"), fullPage: true });

    // The focus stays on the job's row after the redraw: the next Tab reaches Resume.
    expect(await page.evaluate(() => document.activeElement?.closest("tr")?.dataset.job)).toBe(jobId);
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Resume");
    await page.keyboard.press("Enter");
    await expect.poll(() => row.locator(".badge").textContent(), { timeout: 30_000, interval: 1000 }).toBe("pending");
    await expect.poll(() => page.locator("#job-note").textContent(), { timeout: 15_000 }).toContain("Waiting for a computer");
    await page.close();
  });
});

/** Pixels of the observation green (#39ff6a) on the camera's photo. */
async function observationPixels(png: Buffer): Promise<number> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let n = 0;
  for (let i = 0; i < info.width * info.height * 3; i += 3) if (data[i + 1]! > 200 && data[i]! < 120 && data[i + 2]! < 160) n++;
  return n;
}

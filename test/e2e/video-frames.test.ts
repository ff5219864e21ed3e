/**
 * Frames of a video as a dataset (spec 4.2 `:from_video`) in a real browser: headless Chromium
 * opens the server's /runner.html, whose worker demuxes the MP4 (mp4box) and decodes it with
 * WebCodecs. The video is encoded by Debian's ffmpeg (scripts/system-deps.sh video) from photos of
 * a shared set, two photos a second, as VP9 in MP4 (Debian's Chromium decodes VP9 whatever its
 * H.264 support); each sampled frame is compared with the photo shown at its time.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../../browser-runtime/headless/chromium";
import { RunnerClient } from "../../client/index";
import { localRuntimeVersions, nodeRunnerHost } from "../../browser-runtime/runner/node-host";
import { Runner } from "../../browser-runtime/runner/runner";
import type { VideoFramesResult } from "../../protocol";
import { type Server, startServer } from "../conformance/server";
import { httpClient, uploadBytes, waitForJob } from "../support/http";

const PHOTOS = join(__dirname, "../../../shared/datasets/opensfm-lund/images");
/** Six photos, two a second: a 3 s video of 640x480 frames at 10 fps. */
const SECONDS = 3;
let server: Server;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let http: ReturnType<typeof httpClient>;
let pid: string;
let video: string;
const logs: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "edgesfm-video-"));

beforeAll(async () => {
  // ffmpeg, installed when missing (as root; else the script says what to run).
  execFileSync("bash", [join(__dirname, "../../scripts/system-deps.sh"), "video"], { stdio: "inherit" });
  const out = join(dir, "lund.mp4");
  execFileSync("ffmpeg", [
    ...["-loglevel", "error", "-y", "-framerate", "2", "-start_number", "1", "-i", join(PHOTOS, "%02d.jpg"), "-t", String(SECONDS)],
    ...["-vf", "scale=640:480,fps=10", "-c:v", "libvpx-vp9", "-b:v", "2M", "-pix_fmt", "yuv420p", "-f", "mp4", out],
  ]);
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  http = httpClient(server.base);
  browser = await launchChromium();
  const page = await browser.context.newPage();
  page.on("console", (m) => logs.push(m.text()));
  await page.goto(`${server.base}/runner.html?name=e2e-video`);
  pid = (await http("POST", "/v1/projects", { name: "video" })).json.project_id;
  video = await uploadBytes(http, new Uint8Array(readFileSync(out)));
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Mean absolute difference (0-255) between a frame and a photo, both as 64x48 greyscale. */
async function difference(frame: Uint8Array, photo: string): Promise<number> {
  const grey = async (input: Buffer | Uint8Array | string) =>
    (await sharp(input).resize(64, 48, { fit: "fill" }).greyscale().raw().toBuffer({ resolveWithObject: true })).data;
  const [a, b] = [await grey(frame), await grey(photo)];
  return a.reduce((s, v, i) => s + Math.abs(v - b[i]!), 0) / a.length;
}

async function framesOf(body: Record<string, unknown>) {
  const submitted = await http("POST", `/v1/projects/${pid}/datasets:from_video`, { video_path: `blob:${video}`, ...body });
  expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
  const job = await waitForJob(http, submitted.json.job_id);
  expect(job.status, `${job.error_message}\n${logs.join("\n")}`).toBe("succeeded");
  expect(job.tasks[0].kind).toBe("frame_extract");
  const result = job.tasks[0].outputs_ref.result as VideoFramesResult;
  const images = (await http("GET", `/v1/datasets/${result["x-derived_dataset"].dataset_id}/images?page_size=500`)).json.items as {
    name: string;
    image_id: string;
    width: number;
    height: number;
  }[];
  return { result, images };
}

describe(":from_video in headless Chromium (WebCodecs)", () => {
  it("is advertised; only a runner with a video decoder offers frame_extract (not the Node runner)", async () => {
    expect((await http("GET", "/v1/capabilities")).json.features["video.frame_extract"]).toBe(true);
    const client = new RunnerClient({ baseUrl: server.base });
    const host = await nodeRunnerHost("e2e-node");
    expect(new Runner(client, host).stages).not.toContain("frame_extract");
    expect(
      new Runner(client, { ...host, videoFrames: async () => ({ codec: "", width: 0, height: 0, duration_seconds: 0 }) }).stages,
    ).toContain("frame_extract");
  });

  it("samples 2 frames a second: each the photo shown at its time, registered as a dataset", async () => {
    const { result, images } = await framesOf({ fps: 2 });
    expect(result).toMatchObject({ output_dir: "frames", num_frames: 2 * SECONDS, fps: 2, "x-skipped_blurred": 0 });
    expect(images.map((i) => i.name).sort()).toEqual(Array.from({ length: 6 }, (_, k) => `frames/frame_00000${k + 1}.jpg`));
    expect(images.every((i) => i.width === 640 && i.height === 480)).toBe(true);
    for (const image of images) {
      const k = Number(/(\d+)\.jpg$/.exec(image.name)![1]);
      const frame = (await http("GET", `/v1/images/${image.image_id}/bytes`)).raw;
      const own = await difference(frame, join(PHOTOS, `${String(k).padStart(2, "0")}.jpg`));
      const next = await difference(frame, join(PHOTOS, `${String(k + 1).padStart(2, "0")}.jpg`));
      expect(own, image.name).toBeLessThan(12);
      expect(own, image.name).toBeLessThan(next);
    }
  }, 300_000);

  it("max_frames caps the frames; x-skip_blurred keeps sharp photos", async () => {
    expect((await framesOf({ fps: 1, max_frames: 2 })).result.num_frames).toBe(2);
    const sharp = await framesOf({ fps: 2, "x-skip_blurred": true });
    expect(sharp.result).toMatchObject({ num_frames: 6, "x-skipped_blurred": 0 });
  }, 300_000);
});

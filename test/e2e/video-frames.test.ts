/**
 * Frames of a video as a dataset (spec 4.2 `:from_video`) in a real browser: headless Chromium
 * opens the server's /runner.html, whose worker demuxes the MP4 (mp4box) and decodes it with
 * WebCodecs. The videos are encoded by Debian's ffmpeg (scripts/system-deps.sh video) from photos
 * of a shared set, two photos a second, in MP4 as H.264 (what phones record; Debian's Chromium
 * decodes it) and as VP9; each sampled frame is compared with the photo shown at its time. A codec
 * this Chromium lacks (HEVC) and a truncated file fail the job with a message saying why.
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
/** ffmpeg's encoder arguments by codec: H.264 High profile (as phones record), VP9, and HEVC, which this Chromium cannot decode. */
const ENCODERS: Record<string, string[]> = {
  h264: ["-c:v", "libx264", "-profile:v", "high", "-crf", "18"],
  vp9: ["-c:v", "libvpx-vp9", "-b:v", "2M"],
  hevc: ["-c:v", "libx265", "-x265-params", "log-level=error", "-crf", "20"],
};
let server: Server;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let http: ReturnType<typeof httpClient>;
let pid: string;
/** The uploaded videos' blob shas, by codec. */
const videos: Record<string, string> = {};
const logs: string[] = [];
const dir = mkdtempSync(join(tmpdir(), "edgesfm-video-"));

beforeAll(async () => {
  // ffmpeg, installed when missing (as root; else the script says what to run).
  execFileSync("bash", [join(__dirname, "../../scripts/system-deps.sh"), "video"], { stdio: "inherit" });
  for (const [codec, encoder] of Object.entries(ENCODERS)) {
    execFileSync("ffmpeg", [
      ...["-loglevel", "error", "-y", "-framerate", "2", "-start_number", "1", "-i", join(PHOTOS, "%02d.jpg"), "-t", String(SECONDS)],
      ...["-vf", "scale=640:480,fps=10", ...encoder, "-pix_fmt", "yuv420p", "-f", "mp4", join(dir, `${codec}.mp4`)],
    ]);
  }
  server = await startServer({ SVC_RUNTIME_VERSIONS: JSON.stringify(await localRuntimeVersions()) });
  http = httpClient(server.base);
  browser = await launchChromium();
  const page = await browser.context.newPage();
  page.on("console", (m) => logs.push(m.text()));
  await page.goto(`${server.base}/runner.html?name=e2e-video`);
  pid = (await http("POST", "/v1/projects", { name: "video" })).json.project_id;
  for (const codec of Object.keys(ENCODERS))
    videos[codec] = await uploadBytes(http, new Uint8Array(readFileSync(join(dir, `${codec}.mp4`))));
  // The start of the H.264 file: its ftyp box, without the movie header (ffmpeg writes moov last).
  videos.truncated = await uploadBytes(http, new Uint8Array(readFileSync(join(dir, "h264.mp4"))).subarray(0, 4096));
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

async function jobOf(video: string, body: Record<string, unknown>) {
  const submitted = await http("POST", `/v1/projects/${pid}/datasets:from_video`, { video_path: `blob:${videos[video]}`, ...body });
  expect(submitted.status, JSON.stringify(submitted.json)).toBe(202);
  return waitForJob(http, submitted.json.job_id);
}

async function framesOf(video: string, body: Record<string, unknown>) {
  const job = await jobOf(video, body);
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

  it.each(["h264", "vp9"])(
    "samples 2 frames a second of %s: each the photo shown at its time, registered as a dataset",
    async (codec) => {
      const { result, images } = await framesOf(codec, { fps: 2 });
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
    },
    300_000,
  );

  it("max_frames caps the frames; x-skip_blurred keeps sharp photos", async () => {
    const capped = await framesOf("h264", { fps: 1, max_frames: 2 });
    expect(capped.result.num_frames).toBe(2);
    expect(capped.images.map((i) => i.name).sort()).toEqual(["frames/frame_000001.jpg", "frames/frame_000002.jpg"]);
    const sharp = await framesOf("h264", { fps: 2, "x-skip_blurred": true });
    expect(sharp.result).toMatchObject({ num_frames: 6, "x-skipped_blurred": 0 });
  }, 300_000);

  it("a codec this Chromium cannot decode (HEVC) and an MP4 without its movie header fail the job, saying why", async () => {
    const hevc = await jobOf("hevc", {});
    expect(hevc.status).toBe("failed");
    expect(hevc.error_message).toMatch(/WebCodecs cannot decode hev1\.[^ ]* \(640x480\)/);
    const truncated = await jobOf("truncated", {});
    expect(truncated.status).toBe("failed");
    expect(truncated.error_message).toMatch(/not a readable MP4 video/);
  }, 300_000);
});

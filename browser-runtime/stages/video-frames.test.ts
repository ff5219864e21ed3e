import { describe, expect, it } from "vitest";
import type { DecodedImage } from "./extract";
import { FrameSampler, frameName, sharpness } from "./video-frames";

/** A 64x64 checkerboard of `cell`-pixel squares, its edges softened by a box blur of `blur` pixels. */
function board(cell: number, blur = 0): DecodedImage {
  const w = 64;
  const raw = new Float32Array(w * w);
  for (let y = 0; y < w; y++) for (let x = 0; x < w; x++) raw[y * w + x] = (Math.floor(x / cell) + Math.floor(y / cell)) % 2 ? 255 : 0;
  const data = new Uint8ClampedArray(4 * w * w);
  for (let y = 0; y < w; y++)
    for (let x = 0; x < w; x++) {
      let s = 0;
      let n = 0;
      for (let dy = -blur; dy <= blur; dy++)
        for (let dx = -blur; dx <= blur; dx++) {
          const xx = Math.min(w - 1, Math.max(0, x + dx));
          const yy = Math.min(w - 1, Math.max(0, y + dy));
          s += raw[yy * w + xx]!;
          n++;
        }
      data.fill(s / n, 4 * (y * w + x), 4 * (y * w + x) + 3);
      data[4 * (y * w + x) + 3] = 255;
    }
  return { data, width: w, height: w, channels: 4 };
}

/** The times (s) of the frames of a 30 fps video of `seconds` that the sampler keeps. */
function sampled(sampler: FrameSampler, seconds: number, frameAt: (i: number) => DecodedImage = () => board(8)): number[] {
  const kept: number[] = [];
  for (let i = 0; i < 30 * seconds; i++) {
    const t = i / 30;
    if (sampler.wants(t) && sampler.offer(frameAt(i), t)) kept.push(Math.round(t * 1000) / 1000);
  }
  return kept;
}

describe("video frame sampling (4.2 :from_video)", () => {
  it("keeps the first frame of each 1/fps interval, up to max_frames", () => {
    expect(sampled(new FrameSampler({ fps: 2, max_frames: 100, skip_blurred: false }), 3)).toEqual([0, 0.5, 1, 1.5, 2, 2.5]);
    expect(sampled(new FrameSampler({ fps: 1, max_frames: 2, skip_blurred: false }), 5)).toEqual([0, 1]);
    // A rate above the video's: every frame once.
    expect(sampled(new FrameSampler({ fps: 60, max_frames: 1000, skip_blurred: false }), 1)).toHaveLength(30);
    expect(frameName(7)).toBe("frames/frame_000007.jpg");
  });

  it("a blurred frame gives way to the next one", () => {
    expect(sharpness(board(8, 3))).toBeLessThan(0.2 * sharpness(board(8)));
    const sampler = new FrameSampler({ fps: 1, max_frames: 100, skip_blurred: true });
    // Frames 30 and 31 (t = 1 s) are motion-blurred.
    const kept = sampled(sampler, 3, (i) => (i === 30 || i === 31 ? board(8, 3) : board(8)));
    expect(kept).toEqual([0, 1.067, 2]);
    expect(sampler.skippedBlurred).toBe(2);
    // Without the option, the blurred frame is kept.
    expect(
      sampled(new FrameSampler({ fps: 1, max_frames: 100, skip_blurred: false }), 3, (i) => (i === 30 ? board(8, 3) : board(8))),
    ).toEqual([0, 1, 2]);
  });
});

/**
 * @module Which frames of a video become images (`:from_video`, spec 4.2): one per 1/fps seconds
 * of presentation time (the first frame at or after each interval's start), at most `max_frames`;
 * with `skip_blurred`, a frame much blurrier than the ones kept lately (its variance of the
 * Laplacian under half their median) gives way to the next decoded frame.
 */
import type { DecodedImage } from "./extract";

/** A candidate below this fraction of the recent kept frames' median sharpness is blurred. */
export const BLUR_FRACTION = 0.5;
/** How many kept frames the median looks back over. */
const HISTORY = 7;
/** Sharpness is measured on at most this many pixels a side (a strided grid). */
const SHARPNESS_SIDE = 512;

/** Variance of the 4-neighbour Laplacian of the luma, on a grid of at most SHARPNESS_SIDE a side: higher is sharper. */
export function sharpness(image: DecodedImage): number {
  const { width, height, channels, data } = image;
  const step = Math.max(1, Math.ceil(Math.max(width, height) / SHARPNESS_SIDE));
  const luma = (x: number, y: number) => {
    const i = (y * width + x) * channels;
    return channels >= 3 ? 0.299 * data[i]! + 0.587 * data[i + 1]! + 0.114 * data[i + 2]! : data[i]!;
  };
  let n = 0;
  let sum = 0;
  let sum2 = 0;
  for (let y = step; y + step < height; y += step) {
    for (let x = step; x + step < width; x += step) {
      const l = luma(x - step, y) + luma(x + step, y) + luma(x, y - step) + luma(x, y + step) - 4 * luma(x, y);
      n++;
      sum += l;
      sum2 += l * l;
    }
  }
  return n > 0 ? sum2 / n - (sum / n) ** 2 : 0;
}

export const frameName = (index: number) => `frames/frame_${String(index).padStart(6, "0")}.jpg`;

export class FrameSampler {
  kept = 0;
  skippedBlurred = 0;
  private next = 0;
  /** A frame was handed out and not yet kept or skipped: the frames decoded meanwhile are not wanted. */
  private pending = false;
  private readonly recent: number[] = [];

  constructor(private readonly o: { fps: number; max_frames: number; skip_blurred: boolean }) {}

  get full(): boolean {
    return this.kept >= this.o.max_frames;
  }

  /** Whether the frame at `t` seconds is the next candidate; if so, `offer` must follow. */
  wants(t: number): boolean {
    if (this.pending || this.full || t < this.next - 1e-6) return false;
    this.pending = true;
    return true;
  }

  /** Keeps the candidate (true) or skips it as blurred (false: the next decoded frame is the candidate). */
  offer(frame: DecodedImage, t: number): boolean {
    this.pending = false;
    if (this.o.skip_blurred) {
      const s = sharpness(frame);
      const sorted = [...this.recent].sort((a, b) => a - b);
      const median = sorted[Math.floor(sorted.length / 2)];
      if (median !== undefined && s < BLUR_FRACTION * median) {
        this.skippedBlurred++;
        return false;
      }
      this.recent.push(s);
      if (this.recent.length > HISTORY) this.recent.shift();
    }
    this.kept++;
    this.next = (Math.floor(t * this.o.fps + 1e-6) + 1) / this.o.fps;
    return true;
  }
}

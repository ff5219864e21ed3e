/**
 * @module Point colours (PipelineSpec `extract_colors`): each keypoint's colour, bilinearly
 * interpolated at its position as COLMAP's Reconstruction::ExtractColorsForImage does (pixel
 * centres at +0.5); a 3D point's colour is then the mean over its track.
 */
import type { DecodedImage } from "./extract";

export function keypointColors(image: DecodedImage, xy: Float64Array): Uint8Array {
  const { data, width, height, channels } = image;
  const n = xy.length / 2;
  const out = new Uint8Array(3 * n);
  const at = (x: number, y: number, c: number) => {
    const cx = Math.min(width - 1, Math.max(0, x));
    const cy = Math.min(height - 1, Math.max(0, y));
    return data[(cy * width + cx) * channels + (channels >= 3 ? c : 0)]!;
  };
  for (let k = 0; k < n; k++) {
    const x = xy[2 * k]! - 0.5;
    const y = xy[2 * k + 1]! - 0.5;
    const x0 = Math.floor(x);
    const y0 = Math.floor(y);
    const fx = x - x0;
    const fy = y - y0;
    for (let c = 0; c < 3; c++) {
      const top = at(x0, y0, c) * (1 - fx) + at(x0 + 1, y0, c) * fx;
      const bottom = at(x0, y0 + 1, c) * (1 - fx) + at(x0 + 1, y0 + 1, c) * fx;
      out[3 * k + c] = Math.round(top * (1 - fy) + bottom * fy);
    }
  }
  return out;
}

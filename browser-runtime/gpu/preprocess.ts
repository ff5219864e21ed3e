/**
 * @module SIFT input preparation on the host, shared rules with the CPU path
 * (engine-wasm/src/feature/sift.cc ExtractGray8/Extract, image_resample.cc DownscaleTent;
 * SIFT.md section 1): intensities in [0, 1] and the `max_image_size` budget, by an area-aware
 * tent filter along x then y, in 8 bits for 8-bit input as COLMAP does.
 */

/** Tent weights per output sample (MakeTentWeights): taps in float32, normalised in float64. */
function tentWeights(inSize: number, outSize: number): { first: number[]; weights: Float32Array[] } {
  const scale = inSize / outSize;
  const support = Math.max(1, scale);
  const first: number[] = [];
  const weights: Float32Array[] = [];
  for (let i = 0; i < outSize; i++) {
    const centre = (i + 0.5) * scale - 0.5;
    let lo = Math.max(0, Math.floor(centre - support) + 1);
    const hi = Math.min(inSize - 1, Math.ceil(centre + support) - 1);
    let w: number[] = [];
    let sum = 0;
    for (let s = lo; s <= hi; s++) {
      const v = Math.max(0, 1 - Math.abs(s - centre) / support);
      w.push(v);
      sum += v;
    }
    if (w.length === 0 || sum <= 0) {
      // Degenerate: nearest sample (std::lround rounds halves away from zero; centre >= -0.5).
      lo = Math.min(inSize - 1, Math.max(0, Math.sign(centre) * Math.round(Math.abs(centre))));
      w = [1];
      sum = 1;
    }
    first.push(lo);
    weights.push(Float32Array.from(w, (v) => v / sum));
  }
  return { first, weights };
}

/** Separable tent downscaling, float32 accumulation in the CPU path's order. */
export function downscaleTent(src: Float32Array, width: number, height: number, newWidth: number, newHeight: number): Float32Array {
  const f = Math.fround;
  const wx = tentWeights(width, newWidth);
  const wy = tentWeights(height, newHeight);
  const narrow = new Float32Array(newWidth * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < newWidth; x++) {
      const w = wx.weights[x]!;
      const first = y * width + wx.first[x]!;
      let acc = 0;
      for (let k = 0; k < w.length; k++) acc = f(acc + f(w[k]! * src[first + k]!));
      narrow[y * newWidth + x] = acc;
    }
  }
  const dst = new Float32Array(newWidth * newHeight);
  for (let y = 0; y < newHeight; y++) {
    const w = wy.weights[y]!;
    for (let k = 0; k < w.length; k++) {
      const row = (wy.first[y]! + k) * newWidth;
      for (let x = 0; x < newWidth; x++) dst[y * newWidth + x] = f(dst[y * newWidth + x]! + f(w[k]! * narrow[row + x]!));
    }
  }
  return dst;
}

export interface PreparedImage {
  width: number;
  height: number;
  /** Intensities in [0, 1]. */
  data: Float32Array;
  /** Original / resized size per axis: keypoints are scaled back by these. */
  sx: number;
  sy: number;
}

/** Intensities in [0, 1] within `maxImageSize`, exactly as the CPU path prepares them. */
export function prepareIntensity(gray: Float32Array | Uint8Array, width: number, height: number, maxImageSize: number): PreparedImage {
  const maxSide = Math.max(width, height);
  if (maxSide <= maxImageSize) {
    const data = gray instanceof Float32Array ? gray : Float32Array.from(gray, (g) => g / 255);
    return { width, height, data, sx: 1, sy: 1 };
  }
  const scale = maxImageSize / maxSide;
  const newWidth = Math.max(1, Math.trunc(width * scale));
  const newHeight = Math.max(1, Math.trunc(height * scale));
  const source = gray instanceof Float32Array ? gray : Float32Array.from(gray);
  const data = downscaleTent(source, width, height, newWidth, newHeight);
  if (gray instanceof Uint8Array) {
    // 8-bit input stays 8-bit through the resize (COLMAP resizes the bitmap); std::round.
    for (let i = 0; i < data.length; i++) data[i] = Math.min(255, Math.max(0, Math.floor(data[i]! + 0.5))) / 255;
  }
  return { width: newWidth, height: newHeight, data, sx: Math.fround(width / newWidth), sy: Math.fround(height / newHeight) };
}

/**
 * @module A deterministic synthetic image for SIFT: Gaussian blobs of several sizes on a smooth
 * texture, so every octave has extrema. Pure arithmetic, so Node and browsers build the same
 * bytes: the calibration workload of select.ts and the input of the agreement tests.
 */

/** Intensities in [0, 1], row-major. */
export function syntheticImage(width: number, height: number): Float32Array {
  const data = new Float32Array(width * height);
  const blobs: [number, number, number, number][] = [];
  // A fixed pseudo-random layout (LCG) of bright and dark blobs, radii 2..14 px.
  let state = 12345;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i < 40; i++) blobs.push([next() * width, next() * height, 2 + 12 * next() ** 2, next() < 0.5 ? 0.35 : -0.35]);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let v = 0.5 + 0.08 * Math.sin(x * 0.21) * Math.cos(y * 0.17);
      for (const [cx, cy, r, a] of blobs) v += a * Math.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r));
      data[y * width + x] = Math.min(1, Math.max(0, v));
    }
  }
  return data;
}

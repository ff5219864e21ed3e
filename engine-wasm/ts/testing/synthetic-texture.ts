/**
 * @module Test imagery for feature tests: a random-blob texture defined analytically (a sum
 * of Gaussian blobs), so a view through any homography is rendered exactly by evaluating
 * the texture at the mapped coordinates, without resampling artefacts. Deterministic for a seed.
 */

/** Row-major 3x3 homography mapping image-1 pixel coordinates to image-2 coordinates. */
export type Homography = [number, number, number, number, number, number, number, number, number];

export interface Blob {
  x: number;
  y: number;
  sigma: number;
  amplitude: number;
}

/** A small deterministic PRNG (mulberry32). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Blobs covering [0, width] x [0, height] with radii 1.5..9 px and signed amplitudes. */
export function randomBlobs(width: number, height: number, seed: number, density = 1 / 90): Blob[] {
  const rand = mulberry32(seed);
  const n = Math.round(width * height * density);
  return Array.from({ length: n }, () => ({
    x: rand() * width,
    y: rand() * height,
    sigma: 1.5 + rand() * 7.5,
    amplitude: (rand() - 0.5) * 0.8,
  }));
}

export const IDENTITY: Homography = [1, 0, 0, 0, 1, 0, 0, 0, 1];

export function applyHomography(h: Homography, x: number, y: number): [number, number] {
  const w = h[6] * x + h[7] * y + h[8];
  return [(h[0] * x + h[1] * y + h[2]) / w, (h[3] * x + h[4] * y + h[5]) / w];
}

export function invertHomography(h: Homography): Homography {
  const [a, b, c, d, e, f, g, k, l] = h;
  const A = e * l - f * k,
    B = -(d * l - f * g),
    C = d * k - e * g;
  const det = a * A + b * B + c * C;
  const inv = [A, -(b * l - c * k), b * f - c * e, B, a * l - c * g, -(a * f - c * d), C, -(a * k - b * g), a * e - b * d];
  return inv.map((v) => v / det) as Homography;
}

/** A similarity about the image centre: rotation (radians) and scale, as a homography from view 1 to view 2. */
export function similarityAbout(cx: number, cy: number, angle: number, scale: number, tx = 0, ty = 0): Homography {
  const c = Math.cos(angle) * scale,
    s = Math.sin(angle) * scale;
  return [c, -s, cx - c * cx + s * cy + tx, s, c, cy - s * cx - c * cy + ty, 0, 0, 1];
}

/**
 * Renders the texture as seen through `view` (image-1 -> this image homography), sampled at
 * pixel centres (x + 0.5, y + 0.5) in COLMAP's convention, as intensities in [0, 1]. The
 * optional `blur` widens every blob (an exact Gaussian blur of the scene, in image-1
 * pixels); `noise` adds uniform noise of that amplitude (seeded).
 */
export function renderTexture(
  blobs: readonly Blob[],
  width: number,
  height: number,
  view: Homography = IDENTITY,
  options: { blur?: number; noise?: number; seed?: number } = {},
): Float32Array {
  const inverse = invertHomography(view);
  const out = new Float32Array(width * height).fill(0.5);
  const blur2 = (options.blur ?? 0) ** 2;
  // Bucket blobs on a coarse grid of the scene to keep rendering linear in the pixel count.
  const cell = 24;
  const grid = new Map<string, Blob[]>();
  for (const b of blobs) {
    const reach = 3.2 * Math.sqrt(b.sigma * b.sigma + blur2);
    for (let gy = Math.floor((b.y - reach) / cell); gy <= Math.floor((b.y + reach) / cell); gy += 1) {
      for (let gx = Math.floor((b.x - reach) / cell); gx <= Math.floor((b.x + reach) / cell); gx += 1) {
        const key = `${gx},${gy}`;
        const list = grid.get(key);
        if (list) list.push(b);
        else grid.set(key, [b]);
      }
    }
  }
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const [sx, sy] = applyHomography(inverse, x + 0.5, y + 0.5);
      let v = 0.5;
      for (const b of grid.get(`${Math.floor(sx / cell)},${Math.floor(sy / cell)}`) ?? []) {
        const s2 = b.sigma * b.sigma + blur2;
        const dx = sx - b.x,
          dy = sy - b.y;
        const r2 = dx * dx + dy * dy;
        if (r2 < 10.24 * s2) v += b.amplitude * ((b.sigma * b.sigma) / s2) * Math.exp(-r2 / (2 * s2));
      }
      out[y * width + x] = v;
    }
  }
  if (options.noise) {
    const rand = mulberry32(options.seed ?? 1);
    for (let i = 0; i < out.length; i += 1) out[i]! += (rand() - 0.5) * 2 * options.noise;
  }
  for (let i = 0; i < out.length; i += 1) out[i] = Math.min(1, Math.max(0, out[i]!));
  return out;
}

/**
 * @module Test-only robust fundamental-matrix fit, to count geometrically verified matches
 * on real photos: RANSAC (Fischler & Bolles 1981) over the normalised eight-point
 * algorithm (Hartley 1997), rank-2 enforced, Sampson error (Hartley & Zisserman 2004,
 * eq. 11.9), then two refits on the inliers. Deterministic for a seed. The engine's own
 * estimators (engine-wasm/src/estimators) are the production path.
 */
import { mulberry32 } from "../../../engine-wasm/ts/testing/synthetic-texture";

type Mat = number[]; // row-major

/** Eigen-decomposition of a symmetric n x n matrix by cyclic Jacobi rotations. */
function symmetricEigen(a: Mat, n: number): { values: number[]; vectors: Mat } {
  const m = a.slice();
  const v: Mat = Array.from({ length: n * n }, (_, i) => (i % (n + 1) === 0 ? 1 : 0));
  for (let sweep = 0; sweep < 60; sweep += 1) {
    let off = 0;
    for (let p = 0; p < n; p += 1) for (let q = p + 1; q < n; q += 1) off += m[p * n + q]! ** 2;
    if (off < 1e-30) break;
    for (let p = 0; p < n; p += 1) {
      for (let q = p + 1; q < n; q += 1) {
        const apq = m[p * n + q]!;
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (m[q * n + q]! - m[p * n + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1),
          s = t * c;
        for (let k = 0; k < n; k += 1) {
          const mkp = m[k * n + p]!,
            mkq = m[k * n + q]!;
          m[k * n + p] = c * mkp - s * mkq;
          m[k * n + q] = s * mkp + c * mkq;
        }
        for (let k = 0; k < n; k += 1) {
          const mpk = m[p * n + k]!,
            mqk = m[q * n + k]!;
          m[p * n + k] = c * mpk - s * mqk;
          m[q * n + k] = s * mpk + c * mqk;
        }
        for (let k = 0; k < n; k += 1) {
          const vkp = v[k * n + p]!,
            vkq = v[k * n + q]!;
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  return { values: Array.from({ length: n }, (_, i) => m[i * n + i]!), vectors: v };
}

/** Similarity moving the points' centroid to 0 and their mean distance to sqrt(2). */
function normaliser(xs: Float64Array, idx: readonly number[]): Mat {
  let cx = 0,
    cy = 0;
  for (const i of idx) {
    cx += xs[2 * i]!;
    cy += xs[2 * i + 1]!;
  }
  cx /= idx.length;
  cy /= idx.length;
  let d = 0;
  for (const i of idx) d += Math.hypot(xs[2 * i]! - cx, xs[2 * i + 1]! - cy);
  const s = Math.SQRT2 / Math.max(d / idx.length, 1e-12);
  return [s, 0, -s * cx, 0, s, -s * cy, 0, 0, 1];
}

const mul3 = (a: Mat, b: Mat): Mat =>
  Array.from(
    { length: 9 },
    (_, k) =>
      a[3 * Math.floor(k / 3)]! * b[k % 3]! +
      a[3 * Math.floor(k / 3) + 1]! * b[3 + (k % 3)]! +
      a[3 * Math.floor(k / 3) + 2]! * b[6 + (k % 3)]!,
  );
const transpose3 = (a: Mat): Mat => [a[0]!, a[3]!, a[6]!, a[1]!, a[4]!, a[7]!, a[2]!, a[5]!, a[8]!];

/** The normalised eight-point estimate from correspondences `idx` (x1 -> x2), rank 2. */
export function eightPoint(x1: Float64Array, x2: Float64Array, idx: readonly number[]): Mat {
  const t1 = normaliser(x1, idx),
    t2 = normaliser(x2, idx);
  const ata = new Array<number>(81).fill(0);
  for (const i of idx) {
    const ax = t1[0]! * x1[2 * i]! + t1[2]!,
      ay = t1[4]! * x1[2 * i + 1]! + t1[5]!;
    const bx = t2[0]! * x2[2 * i]! + t2[2]!,
      by = t2[4]! * x2[2 * i + 1]! + t2[5]!;
    const row = [bx * ax, bx * ay, bx, by * ax, by * ay, by, ax, ay, 1];
    for (let r = 0; r < 9; r += 1) for (let c = 0; c < 9; c += 1) ata[r * 9 + c]! += row[r]! * row[c]!;
  }
  const { values, vectors } = symmetricEigen(ata, 9);
  let k = 0;
  for (let i = 1; i < 9; i += 1) if (values[i]! < values[k]!) k = i;
  const f = Array.from({ length: 9 }, (_, r) => vectors[r * 9 + k]!);
  // Rank 2: drop the smallest singular value (eigen-decomposition of F^T F).
  const ftf = mul3(transpose3(f), f);
  const e = symmetricEigen(ftf, 3);
  const order = [0, 1, 2].sort((a, b) => e.values[b]! - e.values[a]!);
  const rank2 = new Array<number>(9).fill(0);
  for (const j of order.slice(0, 2)) {
    const vj = [e.vectors[j]!, e.vectors[3 + j]!, e.vectors[6 + j]!];
    const fv = [0, 1, 2].map((r) => f[3 * r]! * vj[0]! + f[3 * r + 1]! * vj[1]! + f[3 * r + 2]! * vj[2]!);
    for (let r = 0; r < 3; r += 1) for (let c = 0; c < 3; c += 1) rank2[3 * r + c]! += fv[r]! * vj[c]!;
  }
  return mul3(mul3(transpose3(t2), rank2), t1);
}

/** Squared Sampson distance of correspondence i under F. */
export function sampsonSquared(f: Mat, x1: Float64Array, x2: Float64Array, i: number): number {
  const ax = x1[2 * i]!,
    ay = x1[2 * i + 1]!,
    bx = x2[2 * i]!,
    by = x2[2 * i + 1]!;
  const fx0 = f[0]! * ax + f[1]! * ay + f[2]!,
    fx1 = f[3]! * ax + f[4]! * ay + f[5]!,
    fx2 = f[6]! * ax + f[7]! * ay + f[8]!;
  const ftx0 = f[0]! * bx + f[3]! * by + f[6]!,
    ftx1 = f[1]! * bx + f[4]! * by + f[7]!;
  const num = bx * fx0 + by * fx1 + fx2;
  return (num * num) / (fx0 * fx0 + fx1 * fx1 + ftx0 * ftx0 + ftx1 * ftx1);
}

export interface FundamentalFit {
  f: Mat;
  inliers: number[];
}

/**
 * RANSAC with `iterations` eight-point samples; inliers have Sampson error below
 * `maxError` pixels (COLMAP's two-view default is 4). Returns the best model refit twice.
 */
export function ransacFundamental(x1: Float64Array, x2: Float64Array, maxError = 4, iterations = 1000, seed = 1): FundamentalFit {
  const n = x1.length / 2;
  if (n < 8) return { f: [], inliers: [] };
  const rand = mulberry32(seed);
  const threshold = maxError * maxError;
  const inliersOf = (f: Mat): number[] => {
    const out: number[] = [];
    for (let i = 0; i < n; i += 1) if (sampsonSquared(f, x1, x2, i) < threshold) out.push(i);
    return out;
  };
  let best: FundamentalFit = { f: [], inliers: [] };
  for (let it = 0; it < iterations; it += 1) {
    const sample = new Set<number>();
    while (sample.size < 8) sample.add(Math.floor(rand() * n));
    const f = eightPoint(x1, x2, [...sample]);
    if (f.some((v) => !Number.isFinite(v))) continue;
    const inliers = inliersOf(f);
    if (inliers.length > best.inliers.length) best = { f, inliers };
  }
  for (let refit = 0; refit < 2 && best.inliers.length >= 8; refit += 1) {
    const f = eightPoint(x1, x2, best.inliers);
    const inliers = inliersOf(f);
    if (inliers.length >= best.inliers.length) best = { f, inliers };
  }
  return best;
}

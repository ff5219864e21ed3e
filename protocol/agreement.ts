/**
 * @module How closely two feature or match outputs agree: features paired by position, scale and
 * orientation, then descriptor differences over the pairs; match lists by their common pairs.
 * Float results differ across devices (the WGSL SIFT against the WASM path agree to sub-pixel
 * positions and a few descriptor levels, not bytes), so the agreement tests, the benchmarks and
 * the service's validation of untrusted runners' results (worker/services/validation.ts) measure
 * results with these, each against a stated tolerance.
 */

/** Keypoints (x, y, scale, orientation per feature) and their descriptors (`descriptorDim` bytes each, 128 for SIFT). */
export interface FeatureSet {
  keypoints: Float32Array;
  descriptors: Uint8Array;
}

export interface SiftAgreement {
  countA: number;
  countB: number;
  /** Features of A with a counterpart in B (and the reverse), as fractions. */
  matchedA: number;
  matchedB: number;
  /** Over paired features: largest position difference (px), scale ratio - 1, angle (rad). */
  maxPositionError: number;
  maxScaleError: number;
  maxAngleError: number;
  /** Over paired features: largest per-byte descriptor difference, and mean L1 distance. */
  maxDescriptorByteDiff: number;
  meanDescriptorL1: number;
}

export interface AgreementTolerance {
  position: number;
  scale: number;
  angle: number;
}

export const DEFAULT_TOLERANCE: AgreementTolerance = { position: 0.05, scale: 0.01, angle: 0.02 };

const angleDiff = (a: number, b: number) => {
  const d = Math.abs(a - b) % (2 * Math.PI);
  return Math.min(d, 2 * Math.PI - d);
};

/** For each feature of `a`, the index of its counterpart in `b` or -1 (nearest within tolerance). */
function pairFeatures(a: Float32Array, b: Float32Array, tol: AgreementTolerance): Int32Array {
  const cell = 1; // px: a spatial hash over b, neighbours within `tol.position` are in adjacent cells
  const grid = new Map<string, number[]>();
  for (let j = 0; j < b.length / 4; j++) {
    const key = `${Math.floor(b[4 * j]! / cell)},${Math.floor(b[4 * j + 1]! / cell)}`;
    const list = grid.get(key);
    if (list) list.push(j);
    else grid.set(key, [j]);
  }
  const out = new Int32Array(a.length / 4).fill(-1);
  for (let i = 0; i < a.length / 4; i++) {
    const [x, y, s, o] = [a[4 * i]!, a[4 * i + 1]!, a[4 * i + 2]!, a[4 * i + 3]!];
    let best = -1;
    let bestCost = Infinity;
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        for (const j of grid.get(`${Math.floor(x / cell) + dx},${Math.floor(y / cell) + dy}`) ?? []) {
          const dp = Math.hypot(b[4 * j]! - x, b[4 * j + 1]! - y);
          const ds = Math.abs(b[4 * j + 2]! / s - 1);
          const da = angleDiff(b[4 * j + 3]!, o);
          if (dp > tol.position || ds > tol.scale || da > tol.angle) continue;
          const cost = dp / tol.position + ds / tol.scale + da / tol.angle;
          if (cost < bestCost) {
            bestCost = cost;
            best = j;
          }
        }
      }
    }
    out[i] = best;
  }
  return out;
}

export function compareSift(a: FeatureSet, b: FeatureSet, tol: AgreementTolerance = DEFAULT_TOLERANCE): SiftAgreement {
  const dim = a.keypoints.length ? a.descriptors.length / (a.keypoints.length / 4) : 128;
  const ab = pairFeatures(a.keypoints, b.keypoints, tol);
  const ba = pairFeatures(b.keypoints, a.keypoints, tol);
  let paired = 0;
  let maxPositionError = 0;
  let maxScaleError = 0;
  let maxAngleError = 0;
  let maxDescriptorByteDiff = 0;
  let sumL1 = 0;
  ab.forEach((j, i) => {
    if (j < 0) return;
    paired++;
    const ka = a.keypoints;
    const kb = b.keypoints;
    maxPositionError = Math.max(maxPositionError, Math.hypot(ka[4 * i]! - kb[4 * j]!, ka[4 * i + 1]! - kb[4 * j + 1]!));
    maxScaleError = Math.max(maxScaleError, Math.abs(kb[4 * j + 2]! / ka[4 * i + 2]! - 1));
    maxAngleError = Math.max(maxAngleError, angleDiff(ka[4 * i + 3]!, kb[4 * j + 3]!));
    let l1 = 0;
    for (let k = 0; k < dim; k++) {
      const d = Math.abs((a.descriptors[dim * i + k] ?? 0) - (b.descriptors[dim * j + k] ?? 0));
      l1 += d;
      maxDescriptorByteDiff = Math.max(maxDescriptorByteDiff, d);
    }
    sumL1 += l1;
  });
  const countA = ab.length;
  const countB = ba.length;
  return {
    countA,
    countB,
    matchedA: countA ? paired / countA : 1,
    matchedB: countB ? ba.filter((i) => i >= 0).length / countB : 1,
    maxPositionError,
    maxScaleError,
    maxAngleError,
    maxDescriptorByteDiff,
    meanDescriptorL1: paired ? sumL1 / paired : 0,
  };
}

/** Fraction of pairs (i, j) present in both match lists (Jaccard index of the two sets). */
export function matchAgreement(a: Uint32Array, b: Uint32Array): number {
  const key = (p: Uint32Array, k: number) => p[2 * k]! * 0x100000 + p[2 * k + 1]!;
  const setA = new Set<number>();
  for (let k = 0; k < a.length / 2; k++) setA.add(key(a, k));
  let both = 0;
  for (let k = 0; k < b.length / 2; k++) if (setA.has(key(b, k))) both++;
  const union = a.length / 2 + b.length / 2 - both;
  return union ? both / union : 1;
}

/**
 * @module Accuracy of a reconstruction against a COLMAP reference (issue 5's bars), written
 * once for the mapping tests and the mapping benchmark.
 *
 * 1. Images are paired by name. The similarity `ref_from_ours` is estimated robustly on the
 *    camera centres (Umeyama, "Least-squares estimation of transformation parameters between
 *    two point patterns", PAMI 1991, in Horn's quaternion form): the best of many
 *    three-centre samples by inlier count, as `colmap model_aligner` aligns with RANSAC, then
 *    refitted on its inliers with their camera orientations too. Centres alone leave the
 *    rotation about their line free when they lie near one (a street walked straight, as
 *    opensfm-lund): COLMAP's own reconstruction of that set scores a 1.3 degree median
 *    rotation error against its reference under a centres-only fit, 0.15 with orientations.
 * 2. Per image: rotation error (degrees) between our aligned rotation and the reference's,
 *    and camera-centre error as a fraction of the scene extent (the largest distance
 *    between two reference camera centres).
 * 3. The bars: every reference image registered, median rotation error <= 0.5 deg,
 *    camera-centre error <= 1% of the extent for every image, mean reprojection error <=
 *    COLMAP's (from colmap-3.8-results.tsv).
 */
import type { ColmapModel } from "./colmap-text";

export type Vec3 = [number, number, number];
/** Hamilton quaternion, scalar first. */
export type Quat = [number, number, number, number];

/** One registered image's pose, cam_from_world. */
export interface ImagePose {
  name: string;
  qvec: Quat;
  tvec: Vec3;
}

/** x_ref = scale * R(rotation) * x_ours + translation. */
export interface Similarity {
  scale: number;
  rotation: Quat;
  translation: Vec3;
}

export interface AccuracyReport {
  numReferenceImages: number;
  /** Reference images that we registered too. */
  numRegistered: number;
  missing: string[];
  /** Centres used for the alignment after outlier rejection. */
  numAlignmentInliers: number;
  alignment: Similarity;
  sceneExtent: number;
  medianRotationErrorDeg: number;
  maxRotationErrorDeg: number;
  medianCenterError: number;
  /** Camera-centre errors as fractions of `sceneExtent`. */
  medianCenterErrorFraction: number;
  maxCenterErrorFraction: number;
  perImage: Array<{ name: string; rotationErrorDeg: number; centerErrorFraction: number }>;
}

export interface AccuracyBars {
  maxMedianRotationErrorDeg: number;
  maxCenterErrorFraction: number;
}

/** Issue 5. */
export const ISSUE5_BARS: AccuracyBars = { maxMedianRotationErrorDeg: 0.5, maxCenterErrorFraction: 0.01 };

// ---- small 3D algebra ----

function sub(a: Vec3, b: Vec3): Vec3 {
  return [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
}
function norm(a: Vec3): number {
  return Math.hypot(a[0], a[1], a[2]);
}
export function quatMul(a: Quat, b: Quat): Quat {
  return [
    a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
    a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
    a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
    a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
  ];
}
export function quatConj(q: Quat): Quat {
  return [q[0], -q[1], -q[2], -q[3]];
}
export function rotate(q: Quat, v: Vec3): Vec3 {
  const r = quatMul(quatMul(q, [0, v[0], v[1], v[2]]), quatConj(q));
  return [r[1], r[2], r[3]];
}
/** Angle in degrees of the rotation between two unit quaternions. */
export function rotationAngleDeg(a: Quat, b: Quat): number {
  // atan2 of the relative rotation's vector and scalar parts: exact near zero, where
  // acos of the dot product loses half the digits.
  const r = quatMul(a, quatConj(b));
  return (2 * Math.atan2(Math.hypot(r[1], r[2], r[3]), Math.abs(r[0])) * 180) / Math.PI;
}
/** Camera centre in world coordinates of a cam_from_world pose: -R^T t. */
export function projectionCenter(pose: { qvec: Quat; tvec: Vec3 }): Vec3 {
  const c = rotate(quatConj(pose.qvec), pose.tvec);
  return [-c[0], -c[1], -c[2]];
}
export function applySimilarity(s: Similarity, x: Vec3): Vec3 {
  const r = rotate(s.rotation, x);
  return [s.scale * r[0] + s.translation[0], s.scale * r[1] + s.translation[1], s.scale * r[2] + s.translation[2]];
}
function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const v = [...values].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m]! : 0.5 * (v[m - 1]! + v[m]!);
}

/** Eigenvector of the largest eigenvalue of a symmetric 4x4 matrix (cyclic Jacobi). */
function dominantEigenvector4(m: number[][]): Quat {
  const a = m.map((row) => [...row]);
  const v: number[][] = [0, 1, 2, 3].map((i) => [0, 1, 2, 3].map((j) => (i === j ? 1 : 0)));
  for (let sweep = 0; sweep < 50; sweep += 1) {
    let off = 0;
    for (let p = 0; p < 4; p += 1) for (let q = p + 1; q < 4; q += 1) off += a[p]![q]! ** 2;
    if (off < 1e-30) break;
    for (let p = 0; p < 4; p += 1) {
      for (let q = p + 1; q < 4; q += 1) {
        if (Math.abs(a[p]![q]!) < 1e-300) continue;
        const theta = (a[q]![q]! - a[p]![p]!) / (2 * a[p]![q]!);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < 4; k += 1) {
          const akp = a[k]![p]!,
            akq = a[k]![q]!;
          a[k]![p] = c * akp - s * akq;
          a[k]![q] = s * akp + c * akq;
        }
        for (let k = 0; k < 4; k += 1) {
          const apk = a[p]![k]!,
            aqk = a[q]![k]!;
          a[p]![k] = c * apk - s * aqk;
          a[q]![k] = s * apk + c * aqk;
        }
        for (let k = 0; k < 4; k += 1) {
          const vkp = v[k]![p]!,
            vkq = v[k]![q]!;
          v[k]![p] = c * vkp - s * vkq;
          v[k]![q] = s * vkp + c * vkq;
        }
      }
    }
  }
  let best = 0;
  for (let i = 1; i < 4; i += 1) if (a[i]![i]! > a[best]![best]!) best = i;
  const q: Quat = [v[0]![best]!, v[1]![best]!, v[2]![best]!, v[3]![best]!];
  const n = Math.hypot(...q);
  return q.map((x) => x / n) as Quat;
}

/** Rotation matrix (row-major rows) of a unit quaternion. */
function quatToMatrix(q: Quat): number[][] {
  const [w, x, y, z] = q;
  return [
    [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
    [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
    [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
  ];
}

/**
 * Least-squares similarity dst ~ s R src + t (Umeyama 1991; the rotation from Horn's
 * quaternion eigenproblem, the scale from Umeyama's variance ratio). Needs >= 3 points
 * not all on a line, unless `orientations` are given: per image, its cam_from_world
 * rotation in the src frame and in the dst frame. Then the rotation also maps each
 * camera's axes onto the other's, with the centres (scaled to unit spread) and the axes
 * weighted alike per image.
 */
export function estimateSimilarity(src: Vec3[], dst: Vec3[], orientations: Array<[Quat, Quat]> = []): Similarity {
  const n = src.length;
  const mean = (pts: Vec3[]): Vec3 => {
    const m: Vec3 = [0, 0, 0];
    for (const p of pts) for (let k = 0; k < 3; k += 1) m[k]! += p[k]! / n;
    return m;
  };
  const ms = mean(src),
    md = mean(dst);
  const s = Array.from({ length: 3 }, () => [0, 0, 0]);
  let varSrc = 0,
    varDst = 0;
  for (let i = 0; i < n; i += 1) {
    const a = sub(src[i]!, ms),
      b = sub(dst[i]!, md);
    varSrc += a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
    varDst += b[0] * b[0] + b[1] * b[1] + b[2] * b[2];
    for (let r = 0; r < 3; r += 1) for (let c = 0; c < 3; c += 1) s[r]![c]! += a[r]! * b[c]!;
  }
  if (orientations.length > 0) {
    // Centres to unit spread; each camera's three axes (columns of R^T, i.e. R_src^T e_k
    // -> R_dst^T e_k) summed: sum_k (R_src^T e_k)(R_dst^T e_k)^T = R_src^T R_dst, a third each.
    const norm = varSrc > 0 && varDst > 0 ? 1 / Math.sqrt(varSrc * varDst) : 0;
    for (let r = 0; r < 3; r += 1) for (let c = 0; c < 3; c += 1) s[r]![c]! *= norm * n;
    for (const [qs, qd] of orientations) {
      const rs = quatToMatrix(qs),
        rd = quatToMatrix(qd);
      for (let r = 0; r < 3; r += 1) {
        for (let c = 0; c < 3; c += 1) {
          let v = 0;
          for (let k = 0; k < 3; k += 1) v += rs[k]![r]! * rd[k]![c]!;
          s[r]![c]! += v / 3;
        }
      }
    }
  }
  const [sxx, sxy, sxz] = s[0]!,
    [syx, syy, syz] = s[1]!,
    [szx, szy, szz] = s[2]!;
  const n4 = [
    [sxx! + syy! + szz!, syz! - szy!, szx! - sxz!, sxy! - syx!],
    [syz! - szy!, sxx! - syy! - szz!, sxy! + syx!, szx! + sxz!],
    [szx! - sxz!, sxy! + syx!, -sxx! + syy! - szz!, syz! + szy!],
    [sxy! - syx!, szx! + sxz!, syz! + szy!, -sxx! - syy! + szz!],
  ];
  const rotation = dominantEigenvector4(n4);
  // scale = trace(R^T S^T... ) / var(src) = sum (R a_i) . b_i / sum |a_i|^2
  let dot = 0;
  for (let i = 0; i < n; i += 1) {
    const ra = rotate(rotation, sub(src[i]!, ms));
    const b = sub(dst[i]!, md);
    dot += ra[0] * b[0] + ra[1] * b[1] + ra[2] * b[2];
  }
  const scale = varSrc > 0 ? dot / varSrc : 1;
  const rm = rotate(rotation, ms);
  return { scale, rotation, translation: [md[0] - scale * rm[0], md[1] - scale * rm[1], md[2] - scale * rm[2]] };
}

/** Deterministic pseudo-random generator (mulberry32) for the alignment samples. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Robust similarity ref_from_ours on paired centres: the three-point sample with the most
 * centres within `inlierThreshold` (reference units), refitted on those inliers (with their
 * `orientations`, ours and the reference's, when given).
 */
export function estimateSimilarityRobust(
  ours: Vec3[],
  reference: Vec3[],
  inlierThreshold: number,
  numSamples = 500,
  orientations: Array<[Quat, Quat]> = [],
): { similarity: Similarity; inliers: boolean[] } {
  const n = ours.length;
  if (n < 3) throw new Error("accuracy: at least 3 common images are needed to align");
  const inliersOf = (s: Similarity) => ours.map((c, i) => norm(sub(applySimilarity(s, c), reference[i]!)) <= inlierThreshold);
  let best = estimateSimilarity(ours, reference);
  let bestInliers = inliersOf(best);
  let bestCount = bestInliers.filter(Boolean).length;
  const random = rng(0x5eed);
  for (let k = 0; k < numSamples && bestCount < n; k += 1) {
    const idx = new Set<number>();
    while (idx.size < 3) idx.add(Math.floor(random() * n));
    const sample = [...idx];
    const s = estimateSimilarity(
      sample.map((i) => ours[i]!),
      sample.map((i) => reference[i]!),
    );
    if (!Number.isFinite(s.scale) || s.scale <= 0) continue;
    const inl = inliersOf(s);
    const count = inl.filter(Boolean).length;
    if (count > bestCount) {
      best = s;
      bestInliers = inl;
      bestCount = count;
    }
  }
  if (bestCount >= 3) {
    const sel = bestInliers.map((b, i) => (b ? i : -1)).filter((i) => i >= 0);
    best = estimateSimilarity(
      sel.map((i) => ours[i]!),
      sel.map((i) => reference[i]!),
      orientations.length ? sel.map((i) => orientations[i]!) : [],
    );
    bestInliers = inliersOf(best);
  }
  return { similarity: best, inliers: bestInliers };
}

/** The reference's registered poses, by name. */
export function referencePoses(model: ColmapModel): ImagePose[] {
  return [...model.images.values()].map((im) => ({ name: im.name, qvec: im.qvec, tvec: im.tvec }));
}

/**
 * Compares our registered poses with the reference's. `inlierFraction` is the alignment's
 * inlier threshold as a fraction of the scene extent (default: the 1% bar itself).
 */
export function compareToReference(ours: ImagePose[], reference: ImagePose[], inlierFraction = 0.01): AccuracyReport {
  const byName = new Map(ours.map((p) => [p.name, p]));
  const common = reference.filter((r) => byName.has(r.name));
  const missing = reference.filter((r) => !byName.has(r.name)).map((r) => r.name);
  const refCenters = reference.map(projectionCenter);
  let extent = 0;
  for (let i = 0; i < refCenters.length; i += 1) {
    for (let j = i + 1; j < refCenters.length; j += 1) extent = Math.max(extent, norm(sub(refCenters[i]!, refCenters[j]!)));
  }
  const ourC = common.map((r) => projectionCenter(byName.get(r.name)!));
  const refC = common.map(projectionCenter);
  const orientations = common.map((r): [Quat, Quat] => [byName.get(r.name)!.qvec, r.qvec]);
  const { similarity, inliers } = estimateSimilarityRobust(ourC, refC, inlierFraction * extent, 500, orientations);
  const perImage = common.map((r, i) => {
    const mine = byName.get(r.name)!;
    // ref_from_world_ours rotation R_a: our cam_from_world R_i becomes R_i R_a^T.
    const aligned = quatMul(mine.qvec, quatConj(similarity.rotation));
    return {
      name: r.name,
      rotationErrorDeg: rotationAngleDeg(aligned, r.qvec),
      centerError: norm(sub(applySimilarity(similarity, ourC[i]!), refC[i]!)),
    };
  });
  const rot = perImage.map((p) => p.rotationErrorDeg);
  const cen = perImage.map((p) => p.centerError);
  return {
    numReferenceImages: reference.length,
    numRegistered: common.length,
    missing,
    numAlignmentInliers: inliers.filter(Boolean).length,
    alignment: similarity,
    sceneExtent: extent,
    medianRotationErrorDeg: median(rot),
    maxRotationErrorDeg: Math.max(...rot),
    medianCenterError: median(cen),
    medianCenterErrorFraction: median(cen) / extent,
    maxCenterErrorFraction: Math.max(...cen) / extent,
    perImage: perImage.map((p) => ({ name: p.name, rotationErrorDeg: p.rotationErrorDeg, centerErrorFraction: p.centerError / extent })),
  };
}

/** One row of colmap-3.8-results.tsv (the numeric columns as numbers). */
export type ColmapResults = Record<string, number | string>;

export function parseColmapResultsTsv(text: string): ColmapResults[] {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  const header = lines[0]!.split("\t");
  return lines.slice(1).map((line) => {
    const fields = line.split("\t");
    const row: ColmapResults = {};
    header.forEach((h, i) => {
      const f = fields[i] ?? "";
      const n = Number(f);
      row[h] = f !== "" && Number.isFinite(n) ? n : f;
    });
    return row;
  });
}

/**
 * The issue-5 bars that `report` (and our mean reprojection error against COLMAP's)
 * fails, as readable lines; empty when all pass.
 */
export function barFailures(
  report: AccuracyReport,
  meanReprojectionError: number,
  colmapMeanReprojectionError: number,
  bars: AccuracyBars = ISSUE5_BARS,
): string[] {
  const failures: string[] = [];
  if (report.missing.length > 0) failures.push(`not registered: ${report.missing.join(", ")}`);
  if (!(report.medianRotationErrorDeg <= bars.maxMedianRotationErrorDeg)) {
    failures.push(`median rotation error ${report.medianRotationErrorDeg.toFixed(3)} deg > ${bars.maxMedianRotationErrorDeg}`);
  }
  if (!(report.maxCenterErrorFraction <= bars.maxCenterErrorFraction)) {
    failures.push(
      `camera-centre error ${(100 * report.maxCenterErrorFraction).toFixed(3)}% of extent > ${100 * bars.maxCenterErrorFraction}%`,
    );
  }
  if (!(meanReprojectionError <= colmapMeanReprojectionError)) {
    failures.push(`mean reprojection error ${meanReprojectionError.toFixed(4)} px > COLMAP's ${colmapMeanReprojectionError}`);
  }
  return failures;
}

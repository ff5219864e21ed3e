/**
 * @module View-graph filtering before mapping (issue 18): the verified pairs whose relative
 * rotation contradicts the rest of the graph are dropped, so that a pair that explains its matches
 * by a wrong motion (symmetric objects, repeated texture: the view of one side of a cylinder
 * matched to its other side) cannot fold the model.
 *
 * As the field does it: loop (triplet) consistency of relative rotations (Zach, Klopschitz and
 * Pollefeys, "Disambiguating visual relations using loop constraints", CVPR 2010) picks the edges
 * that many loops confirm; a maximum spanning tree over that support gives initial absolute
 * rotations, which robust rotation averaging (iteratively reweighted, Geman-McClure, as in
 * Chatterjee and Govindu 2013 and GLOMAP's rotation averager) refines; edges whose rotation
 * then disagrees with the averaged rotations by more than `maxResidualDeg` (GLOMAP's
 * relative-pose filter) are dropped. Pairs without a relative rotation are kept as they are.
 */
import { type Quat, quatConj, quatMul, rotationAngleDeg } from "../../engine-wasm/ts/accuracy";
import type { MappingPair } from "../../engine-wasm/ts/mapping";
import type { TwoViewCamera, TwoViewInput, TwoViewResult } from "../../engine-wasm/ts/two-view";
import type { TwoViewGeometriesFile } from "../../protocol/schemas/snapshot";
import {
  DEFAULT_FOCAL_LENGTH_FACTOR,
  type DatasetCameras,
  type InitialCamera,
  aspectGroups,
  twoViewCamera,
  withFocalLength,
} from "./cameras";

export interface ViewGraphEdge {
  image1: number;
  image2: number;
  /** cam2_from_cam1 rotation, Hamilton [w, x, y, z]; null when the pair gave none. */
  rotation: Quat | null;
  /** Inlier matches (the edge's weight). */
  weight: number;
}

export interface ViewGraphFilterOptions {
  /** A loop of three edges closes when its rotation is below this (degrees). */
  maxLoopErrorDeg?: number;
  /** Scale of the robust loss in rotation averaging (degrees). */
  lossScaleDeg?: number;
  /** Edges disagreeing with the averaged rotations by more than this are dropped (degrees). */
  maxResidualDeg?: number;
  /** Sweeps of rotation averaging. */
  iterations?: number;
}

export interface ViewGraphFilterResult {
  /** Per input edge: kept for mapping. */
  kept: boolean[];
  /** Per input edge: angle between its rotation and the averaged ones (degrees; NaN without rotation). */
  residualDeg: number[];
  /** Averaged cam_from_world rotations per image (absent: the image is on no edge with a rotation). */
  rotations: Map<number, Quat>;
  /** Per input edge: loops through it that close, and loops through it. */
  loops: Array<{ closed: number; total: number }>;
}

/** A verified pair (two_view_geometries.json, 2.14) as an edge, image ids as they are. */
export function viewGraphEdge(p: {
  image_id1: number;
  image_id2: number;
  num_inliers: number;
  "x-cam2_from_cam1"?: { rotation: { w: number; x: number; y: number; z: number } } | null;
}): ViewGraphEdge {
  const r = p["x-cam2_from_cam1"]?.rotation;
  return { image1: p.image_id1, image2: p.image_id2, rotation: r ? [r.w, r.x, r.y, r.z] : null, weight: p.num_inliers };
}

const DEFAULTS: Required<ViewGraphFilterOptions> = { maxLoopErrorDeg: 5, lossScaleDeg: 5, maxResidualDeg: 10, iterations: 100 };

const normalize = (q: Quat): Quat => {
  const n = Math.hypot(q[0], q[1], q[2], q[3]);
  return [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
};

/** Filters the view graph; see the module comment. Deterministic (no random sampling). */
export function filterViewGraph(edges: readonly ViewGraphEdge[], options: ViewGraphFilterOptions = {}): ViewGraphFilterResult {
  const o = { ...DEFAULTS, ...options };
  // Relative rotation from image a to image b along edge e (cam_b_from_cam_a).
  const rel = (e: number, from: number): Quat => {
    const q = edges[e]!.rotation!;
    return edges[e]!.image1 === from ? q : quatConj(q);
  };
  const adjacency = new Map<number, Map<number, number>>();
  const link = (a: number, b: number, e: number) => {
    let m = adjacency.get(a);
    if (!m) adjacency.set(a, (m = new Map()));
    const prev = m.get(b);
    // Duplicate pairs: the one with more inliers.
    if (prev === undefined || edges[prev]!.weight < edges[e]!.weight) m.set(b, e);
  };
  edges.forEach((e, i) => {
    if (!e.rotation || e.image1 === e.image2) return;
    link(e.image1, e.image2, i);
    link(e.image2, e.image1, i);
  });
  const usable = (i: number) => adjacency.get(edges[i]!.image1)?.get(edges[i]!.image2) === i;

  // Loops of three: i -> j -> k -> i.
  const loops = edges.map(() => ({ closed: 0, total: 0 }));
  const identity: Quat = [1, 0, 0, 0];
  edges.forEach((e, idx) => {
    if (!usable(idx)) return;
    const ni = adjacency.get(e.image1)!;
    const nj = adjacency.get(e.image2)!;
    const [small, large] = ni.size < nj.size ? [ni, nj] : [nj, ni];
    for (const [k, ek] of small) {
      const other = large.get(k);
      if (other === undefined || k === e.image1 || k === e.image2) continue;
      const eik = small === ni ? ek : other;
      const ejk = small === ni ? other : ek;
      // cam_i_from_cam_k * cam_k_from_cam_j * cam_j_from_cam_i
      const cycle = quatMul(rel(eik, k), quatMul(rel(ejk, e.image2), rel(idx, e.image1)));
      loops[idx]!.total += 1;
      if (rotationAngleDeg(cycle, identity) < o.maxLoopErrorDeg) loops[idx]!.closed += 1;
    }
  });

  // Maximum spanning forest over loop support (then inliers): Kruskal.
  const order = edges
    .map((_, i) => i)
    .filter(usable)
    .sort((a, b) => loops[b]!.closed - loops[a]!.closed || edges[b]!.weight - edges[a]!.weight || a - b);
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let r = x;
    while (parent.has(r) && parent.get(r) !== r) r = parent.get(r)!;
    parent.set(x, r);
    return r;
  };
  const tree = new Map<number, Array<[number, number]>>();
  for (const i of order) {
    const { image1: a, image2: b } = edges[i]!;
    const [ra, rb] = [find(a), find(b)];
    if (ra === rb) continue;
    parent.set(ra, rb);
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      if (!tree.has(x)) tree.set(x, []);
      tree.get(x)!.push([y, i]);
    }
  }
  const rotations = new Map<number, Quat>();
  const nodes = [...adjacency.keys()].sort((a, b) => a - b);
  for (const root of nodes) {
    if (rotations.has(root)) continue;
    rotations.set(root, identity);
    const queue = [root];
    while (queue.length) {
      const a = queue.shift()!;
      for (const [b, e] of tree.get(a) ?? []) {
        if (rotations.has(b)) continue;
        rotations.set(b, normalize(quatMul(rel(e, a), rotations.get(a)!)));
        queue.push(b);
      }
    }
  }

  // Robust rotation averaging: node-wise reweighted means (Gauss-Seidel sweeps).
  const scale = o.lossScaleDeg;
  for (let it = 0; it < o.iterations; it += 1) {
    let change = 0;
    for (const a of nodes) {
      const current = rotations.get(a)!;
      const sum: Quat = [0, 0, 0, 0];
      for (const [b, e] of adjacency.get(a)!) {
        // R_a = R_ab^-1 R_b where R_ab = cam_b_from_cam_a.
        let est = quatMul(quatConj(rel(e, a)), rotations.get(b)!);
        if (est[0] * current[0] + est[1] * current[1] + est[2] * current[2] + est[3] * current[3] < 0)
          est = [-est[0], -est[1], -est[2], -est[3]];
        const r = rotationAngleDeg(est, current) / scale;
        const w = Math.sqrt(edges[e]!.weight) / (1 + r * r) ** 2;
        for (let c = 0; c < 4; c += 1) sum[c]! += w * est[c]!;
      }
      if (Math.hypot(...sum) === 0) continue;
      const next = normalize(sum);
      change = Math.max(change, rotationAngleDeg(next, current));
      rotations.set(a, next);
    }
    if (change < 1e-4) break;
  }

  const residualDeg = edges.map((e, i) =>
    e.rotation && rotations.has(e.image1) && rotations.has(e.image2)
      ? rotationAngleDeg(quatMul(rel(i, e.image1), rotations.get(e.image1)!), rotations.get(e.image2)!)
      : NaN,
  );
  const kept = edges.map((e, i) => !e.rotation || !(residualDeg[i]! > o.maxResidualDeg));
  return { kept, residualDeg, rotations, loops };
}

/** Eigenvalues of a symmetric 3x3 matrix (row-major), cyclic Jacobi. */
function symmetricEigenvalues3(m: number[]): number[] {
  const a = [m.slice(0, 3), m.slice(3, 6), m.slice(6, 9)];
  for (let sweep = 0; sweep < 30; sweep += 1) {
    const off = a[0]![1]! ** 2 + a[0]![2]! ** 2 + a[1]![2]! ** 2;
    if (off < 1e-24 * (a[0]![0]! ** 2 + a[1]![1]! ** 2 + a[2]![2]! ** 2 + 1e-300)) break;
    for (const [p, q] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ] as const) {
      if (a[p]![q] === 0) continue;
      const theta = (a[q]![q]! - a[p]![p]!) / (2 * a[p]![q]!);
      const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
      const c = 1 / Math.sqrt(t * t + 1);
      const s = t * c;
      for (let k = 0; k < 3; k += 1) {
        const akp = a[k]![p]!;
        const akq = a[k]![q]!;
        a[k]![p] = c * akp - s * akq;
        a[k]![q] = s * akp + c * akq;
      }
      for (let k = 0; k < 3; k += 1) {
        const apk = a[p]![k]!;
        const aqk = a[q]![k]!;
        a[p]![k] = c * apk - s * aqk;
        a[q]![k] = s * apk + c * aqk;
      }
    }
  }
  return [a[0]![0]!, a[1]![1]!, a[2]![2]!];
}

/** Inliers of a pair whose fundamental matrix the focal length estimate prefers. */
const STRONG_PAIR_INLIERS = 50;

/**
 * A focal length is determined when the defect this factor away from it is at least
 * WELL_DETERMINED_RISE times its own plus WELL_DETERMINED_MIN_RISE (exact matrices of a critical
 * motion are essential at every focal length).
 */
const WELL_DETERMINED_FACTOR = 1.5;
const WELL_DETERMINED_RISE = 2;
const WELL_DETERMINED_MIN_RISE = 0.01;

/** The size of a pair's two photos, [width, height] each: their principal points and focal scales. */
export type PairSizes = readonly [readonly [number, number], readonly [number, number]];

/**
 * How far K2^T F K1 is from an essential matrix when each photo's focal length is `ratio` times
 * its larger side (principal point at the image centre, square pixels): (s1 - s2) / s1 of its
 * two largest singular values, 0 when it is one (the self-calibration criterion of Mendonca and
 * Cipolla, 1999).
 */
function essentialDefect(F: readonly number[], ratio: number, [[w1, h1], [w2, h2]]: PairSizes): number {
  const K = (w: number, h: number) => {
    const f = ratio * Math.max(w, h);
    return [f, 0, w / 2, 0, f, h / 2, 0, 0, 1];
  };
  const mul = (A: readonly number[], B: readonly number[], ta = false) => {
    const out = new Array<number>(9).fill(0);
    for (let i = 0; i < 3; i += 1)
      for (let j = 0; j < 3; j += 1) for (let k = 0; k < 3; k += 1) out[3 * i + j]! += (ta ? A[3 * k + i]! : A[3 * i + k]!) * B[3 * k + j]!;
    return out;
  };
  const E = mul(mul(K(w2, h2), F, true), K(w1, h1));
  const ev = symmetricEigenvalues3(mul(E, E, true))
    .map((v) => Math.sqrt(Math.max(0, v)))
    .sort((x, y) => y - x);
  return ev[0]! > 0 ? (ev[0]! - ev[1]!) / ev[0]! : 1;
}

/** A fundamental matrix for self-calibration. */
interface FundamentalForFocal {
  F: readonly number[];
  numInliers: number;
  sizes: PairSizes;
}

/**
 * Golden-section search for the maximum of a unimodal function on [a, b], driven by its caller so
 * that the function may be synchronous or not: yields each point to score, is sent its score
 * (the first `next()` sends nothing), and returns the middle of the last bracket. Each of the
 * `iterations` steps keeps one of the two inner points, and its score, and scores one new one.
 */
function* goldenSectionMax(a: number, b: number, iterations: number): Generator<number, number, number> {
  const g = (Math.sqrt(5) - 1) / 2;
  let [x1, x2] = [b - g * (b - a), a + g * (b - a)];
  let s1 = yield x1;
  let s2 = yield x2;
  for (let it = 0; it < iterations; it += 1) {
    if (s1 > s2) {
      [b, x2, s2] = [x2, x1, s1];
      x1 = b - g * (b - a);
      s1 = yield x1;
    } else {
      [a, x1, s1] = [x1, x2, s2];
      x2 = a + g * (b - a);
      s2 = yield x2;
    }
  }
  return (a + b) / 2;
}

/**
 * The focal length, as a ratio of each photo's larger side, that makes the fundamental matrices
 * of pairs of one camera (or of photos presumed of one device, resized or turned as photos found
 * online are) closest to essential matrices: median defect over the pairs, searched from 0.3 to
 * 3; null with fewer than `minPairs` matrices or where the matrices do not determine it (the
 * defect nearly flat around its minimum). For cameras without a focal length prior, whose pairs
 * the verification leaves without a relative pose.
 */
export function estimateFocalRatio(pairs: readonly FundamentalForFocal[], minPairs = 10): number | null {
  // Matrices of few inliers are poorly conditioned (and more often wrong): the well supported
  // ones, when there are enough of them. On gum (123 frames, focal 594 px) all 2821 F give
  // 513 px, the 1213 of >= 50 inliers 596 px.
  const strong = pairs.filter((p) => p.numInliers >= STRONG_PAIR_INLIERS);
  const used = strong.length >= minPairs ? strong : pairs;
  if (used.length < minPairs) return null;
  const cost = (ratio: number) => {
    const d = used.map((p) => essentialDefect(p.F, ratio, p.sizes)).sort((x, y) => x - y);
    return d[d.length >> 1]!;
  };
  let best = 0;
  let bestCost = Infinity;
  const steps = 60;
  const [lo, hi] = [Math.log(0.3), Math.log(3)];
  for (let s = 0; s <= steps; s += 1) {
    const r = Math.exp(lo + ((hi - lo) * s) / steps);
    const c = cost(r);
    if (c < bestCost) [best, bestCost] = [r, c];
  }
  // Golden-section refinement within one grid step either side.
  const step = (hi - lo) / steps;
  const search = goldenSectionMax(Math.log(best) - step, Math.log(best) + step, 30);
  let next = search.next();
  while (!next.done) next = search.next(-cost(Math.exp(next.value)));
  const ratio = Math.exp(next.value);
  // Only a focal length the matrices determine: where the defect barely grows away from the
  // minimum (level cameras moving in the plane of their optical axes, as along a street, make
  // self-calibration ill-conditioned), the minimum is noise, and rotations from it would make
  // the filter drop true pairs (opensfm-lund: defect 0.055 at the minimum, 0.059 at 1.5 times
  // it, and 83 of 233 pairs dropped; gum: 0.018, 0.109).
  const defect = cost(ratio);
  const sharp =
    Math.min(cost(ratio * WELL_DETERMINED_FACTOR), cost(ratio / WELL_DETERMINED_FACTOR)) >=
    WELL_DETERMINED_RISE * defect + WELL_DETERMINED_MIN_RISE;
  return sharp ? ratio : null;
}

/** Pairs re-verified in one engine call for their relative rotation. */
const ROTATION_PAIRS_PER_STEP = 16;

type VerifiedPairs = TwoViewGeometriesFile["pairs"];
type Verify = (batch: TwoViewInput[]) => Promise<TwoViewResult[]>;
type Keypoints = ReadonlyArray<{ xy: ArrayLike<number> }>;

/** A photo's size in either orientation: photos of one device turned a quarter share it. */
const sizeKey = ({ width, height }: { width: number; height: number }) => `${Math.max(width, height)}x${Math.min(width, height)}`;

/**
 * Each camera as relative rotations take it: its prior focal length, else (cameras without one,
 * whose pairs the verification leaves F/H only) the focal length that makes the camera's
 * fundamental matrices essential (estimateFocalRatio), or, for a camera of one photo, the
 * matrices among the photos of its size (either orientation), else of its aspect ratio; null
 * where none is possible.
 */
function rotationCameras(pairs: VerifiedPairs, { cameras, cameraOfImage }: DatasetCameras): Array<TwoViewCamera | null> {
  const cameraOf = (imageId: number) => cameraOfImage[imageId - 1]!;
  // Per-image cameras (one photo each) have no pair within their camera: photos presumed of one
  // device share an estimate, for the rotations only. First those of one size in either
  // orientation (frames of a video, a phone's photos), else those of one aspect ratio, whose
  // focal lengths scale with their size (photos found online, resized to varied sizes).
  const aspectGroup = aspectGroups(cameras);
  const [sizeOf, aspectOf] = [(ci: number) => `size ${sizeKey(cameras[ci]!)}`, (ci: number) => `aspect ${aspectGroup[ci]}`];
  // The fundamental matrices within each camera and within each group, in one pass.
  const within = new Map<string, FundamentalForFocal[]>();
  for (const p of pairs) {
    const [c1, c2] = [cameraOf(p.image_id1), cameraOf(p.image_id2)];
    if (!p.F || cameras[c1]!.hasPriorFocalLength || cameras[c2]!.hasPriorFocalLength) continue;
    const sizes: PairSizes = [
      [cameras[c1]!.width, cameras[c1]!.height],
      [cameras[c2]!.width, cameras[c2]!.height],
    ];
    for (const key of [
      c1 === c2 && `camera ${c1}`,
      sizeOf(c1) === sizeOf(c2) && sizeOf(c1),
      aspectOf(c1) === aspectOf(c2) && aspectOf(c1),
    ]) {
      if (!key) continue;
      if (!within.has(key)) within.set(key, []);
      within.get(key)!.push({ F: p.F, numInliers: p.num_inliers, sizes });
    }
  }
  const ratios = new Map<string, number | null>();
  const groupRatio = (key: string) => {
    if (!ratios.has(key)) ratios.set(key, estimateFocalRatio(within.get(key) ?? []));
    return ratios.get(key)!;
  };
  return cameras.map((c, ci): TwoViewCamera | null => {
    if (c.hasPriorFocalLength) return twoViewCamera(c);
    const ratio = groupRatio(`camera ${ci}`) ?? groupRatio(sizeOf(ci)) ?? groupRatio(aspectOf(ci));
    return ratio === null ? null : twoViewCamera(withFocalLength(c, ratio * Math.max(c.width, c.height)));
  });
}

/** The listed pairs' inliers verified again with these cameras (a pair with a side of none: null). */
async function reverify(
  pairs: VerifiedPairs,
  which: readonly number[],
  cameraOfImage: readonly number[],
  cameraFor: (ci: number) => TwoViewCamera | null,
  keypoints: Keypoints,
  seed: number | undefined,
  verify: Verify,
  maxMatches = Infinity,
): Promise<Array<TwoViewResult | null>> {
  // At most maxMatches of a pair's inliers, evenly through them.
  const some = (matches: VerifiedPairs[number]["inlier_matches"]) =>
    matches.length <= maxMatches
      ? matches
      : Array.from({ length: maxMatches }, (_, k) => matches[Math.floor((k * matches.length) / maxMatches)]!);
  const todo = which.map((i) => {
    const p = pairs[i]!;
    return { p, c1: cameraFor(cameraOfImage[p.image_id1 - 1]!), c2: cameraFor(cameraOfImage[p.image_id2 - 1]!) };
  });
  const out: Array<TwoViewResult | null> = [];
  for (let b = 0; b < todo.length; b += ROTATION_PAIRS_PER_STEP) {
    const batch = todo.slice(b, b + ROTATION_PAIRS_PER_STEP);
    const runnable = batch.filter((t) => t.c1 && t.c2);
    const results = await verify(
      runnable.map(({ p, c1, c2 }) => ({
        keypoints1: keypoints[p.image_id1 - 1]!.xy,
        keypoints2: keypoints[p.image_id2 - 1]!.xy,
        camera1: c1!,
        camera2: c2!,
        matches: some(p.inlier_matches),
        // Inliers already: a few trials find the model.
        options: { seed: seed ?? 0, minNumTrials: 10, maxNumTrials: 200, detectWatermark: false },
      })),
    );
    let k = 0;
    for (const t of batch) out.push(t.c1 && t.c2 ? results[k++]! : null);
  }
  return out;
}

const rotationOf = (pose: { rotation: { w: number; x: number; y: number; z: number } } | null | undefined): Quat | null =>
  pose ? [pose.rotation.w, pose.rotation.x, pose.rotation.y, pose.rotation.z] : null;

/** A pair's inliers the search of a focal length takes its rotation from, at most (agreementOf): with thousands a trial costs tens of ms. */
const AGREEMENT_MAX_MATCHES = 300;
/**
 * A camera's pairs it scores, at most (those of most inliers): each focal length tried re-verifies them, some 25 per
 * search, several ms each (a photo of an Internet collection may have a hundred pairs).
 */
const AGREEMENT_MAX_PAIRS = 30;

/** A camera's prior focal length is in doubt when it has at least this many pairs with a rotation and the view graph drops half of them or more. */
const DOUBTED_PRIOR_MIN_PAIRS = 3;
/** Focal lengths tried for a doubted camera: its prior times factors from 1/3 to 3, evenly in log scale. */
const DOUBTED_PRIOR_FACTORS = Array.from({ length: 25 }, (_, k) => 3 ** ((k - 12) / 12));
/** A focal length is a candidate when it is this factor or more away from the prior and its pairs agree this much better (contradictedPriors)... */
const DOUBTED_PRIOR_MIN_FACTOR = 1.2;
const DOUBTED_PRIOR_MIN_AGREEMENT = 1.2;
/** ...and it replaces the prior when the view graph then keeps this many times the inliers of the camera's pairs (mappingPairs). */
const DOUBTED_PRIOR_MIN_KEPT = 1.5;
/** Focal lengths tried for a camera rotations could not take: the guess without EXIF times factors from 1/3 to 3 (steps of 1.2). */
const UNCALIBRATED_FACTORS = Array.from({ length: 13 }, (_, k) => 3 ** ((k - 6) / 6));
/** It gets the one its pairs agree on best when they agree at most this fraction as well somewhere two to four steps either side... */
const UNCALIBRATED_MAX_AGREEMENT_AROUND = 0.8;
/** ...and keeps it when the view graph then keeps this fraction of their inliers (mappingPairs). */
const UNCALIBRATED_MIN_KEPT = 0.5;

/** The verified pairs with their rotations as the view graph filter took them, and how to verify them again. */
interface RotationGraph {
  pairs: VerifiedPairs;
  cams: DatasetCameras;
  /** Each camera as relative rotations take it (rotationCameras), null where none. */
  rotationCamera: ReadonlyArray<TwoViewCamera | null>;
  graph: ViewGraphFilterResult;
  keypoints: Keypoints;
  seed: number | undefined;
  verify: Verify;
}

/**
 * How well a camera's pairs agree on each of its photos' rotation with a focal length: its pairs'
 * inliers verified again with that focal length, each pair's rotation gives the photo an absolute
 * rotation from its partner's averaged one, and per photo the most inliers of pairs within
 * maxResidualDeg of one pair's, each pair's weighed down by its angle (a truncated quadratic, so
 * that the score peaks where they agree best, not anywhere they all fall within the bound).
 * `of`: the camera's pairs (their partners' cameras and averaged rotations known); it scores at most
 * AGREEMENT_MAX_PAIRS of them.
 */
function agreementOf(
  { pairs, cams: { cameras, cameraOfImage }, rotationCamera, graph, keypoints, seed, verify }: RotationGraph,
  ci: number,
  of: readonly number[],
): (focal: number) => Promise<number> {
  const cameraOf = (imageId: number) => cameraOfImage[imageId - 1]!;
  const which =
    of.length <= AGREEMENT_MAX_PAIRS
      ? of
      : [...of].sort((a, b) => pairs[b]!.num_inliers - pairs[a]!.num_inliers).slice(0, AGREEMENT_MAX_PAIRS);
  return async (focal) => {
    const own = twoViewCamera(withFocalLength(cameras[ci]!, focal));
    const results = await reverify(
      pairs,
      which,
      cameraOfImage,
      (c) => (c === ci ? own : (rotationCamera[c] ?? null)),
      keypoints,
      seed,
      verify,
      AGREEMENT_MAX_MATCHES,
    );
    const implied = new Map<number, Array<{ q: Quat; weight: number }>>();
    which.forEach((i, k) => {
      const p = pairs[i]!;
      const q = rotationOf(results[k]?.cam2_from_cam1);
      const mineFirst = cameraOf(p.image_id1) === ci;
      const [mine, other] = mineFirst ? [p.image_id1, p.image_id2] : [p.image_id2, p.image_id1];
      const partner = graph.rotations.get(other);
      if (!q || !partner) return;
      // cam2_from_cam1 = R2 R1^-1.
      const R = mineFirst ? quatMul(quatConj(q), partner) : quatMul(q, partner);
      if (!implied.has(mine)) implied.set(mine, []);
      implied.get(mine)!.push({ q: R, weight: p.num_inliers });
    });
    const bound = DEFAULTS.maxResidualDeg;
    let total = 0;
    for (const list of implied.values())
      total += Math.max(
        ...list.map((a) => list.reduce((sum, b) => sum + b.weight * Math.max(0, 1 - (rotationAngleDeg(a.q, b.q) / bound) ** 2), 0)),
      );
    return total;
  };
}

/**
 * The focal length, `start` times one of `factors` (evenly spaced in log scale; then refined
 * between its neighbours), where `score` peaks; null where `worthRefining` (the scores at
 * `factors` and the best one's index) says the peak is not worth it.
 */
async function bestFocalLength(
  score: (focal: number) => Promise<number>,
  start: number,
  factors: readonly number[],
  worthRefining: (scores: readonly number[], best: number) => boolean,
): Promise<number | null> {
  const scores: number[] = [];
  for (const factor of factors) scores.push(await score(start * factor));
  const best = scores.indexOf(Math.max(...scores));
  if (!worthRefining(scores, best)) return null;
  // Golden-section refinement within one step of the range either side.
  const step = Math.log(factors[1]! / factors[0]!);
  const search = goldenSectionMax(Math.log(factors[best]!) - step, Math.log(factors[best]!) + step, 12);
  let next = search.next();
  while (!next.done) next = search.next(await score(start * Math.exp(next.value)));
  return start * Math.exp(next.value);
}

/**
 * The cameras whose prior focal length their own pairs may contradict, with the focal length
 * that makes them agree instead and the camera's pairs with other cameras (mappingPairs keeps
 * the focal length where the view graph then keeps clearly more of those pairs). A photo
 * cropped or resized after it was taken keeps its original's EXIF, which then says too short a
 * focal length; the relative rotations of its pairs, taken through it, disagree with the loops
 * of the rest of the graph, which drops them (and with them the photo, however many inliers it
 * shares). For a camera half of whose pairs or more are dropped, each focal length of a range
 * is tried (agreementOf); the focal length whose pairs agree best on one rotation wins (then
 * refined), when it is far from the prior and they agree better than with the prior. (Its
 * fundamental matrices alone cannot tell: along a street, level cameras make the defect of
 * estimateFocalRatio nearly flat.)
 * Repeated structure also makes the graph drop a photo's pairs, but then no focal length makes
 * the wrong pairs agree, and the prior stands. On opensfm-lund with half its photos cropped and
 * their EXIF kept (bench/internet.ts --zoomed --exif --exif-uncropped, seed 1), 24.jpg (cropped
 * to 0.53) agrees 1.42 times better at twice its prior, and the graph then keeps 8 of its 10
 * pairs (3 before, 687 inliers instead of 212); a photo of a true prior there agrees 1.09
 * times better at most.
 */
async function contradictedPriors(graphOf: RotationGraph): Promise<Map<number, { focal: number; pairs: number[] }>> {
  const { pairs, cams, graph } = graphOf;
  const { cameras, cameraOfImage } = cams;
  const cameraOf = (imageId: number) => cameraOfImage[imageId - 1]!;
  // Per camera with a prior: its pairs with other cameras, those with a rotation, and how many of those the graph dropped.
  const pairsOf = new Map<number, { all: number[]; rotated: number[]; dropped: number }>();
  pairs.forEach((p, i) => {
    const [c1, c2] = [cameraOf(p.image_id1), cameraOf(p.image_id2)];
    if (c1 === c2) return;
    for (const c of [c1, c2]) {
      // A SPHERICAL camera is calibrated by its model, not by a focal length.
      if (!cameras[c]!.hasPriorFocalLength || cameras[c]!.model === "SPHERICAL") continue;
      if (!pairsOf.has(c)) pairsOf.set(c, { all: [], rotated: [], dropped: 0 });
      const of = pairsOf.get(c)!;
      of.all.push(i);
      if (Number.isNaN(graph.residualDeg[i])) continue;
      of.rotated.push(i);
      if (!graph.kept[i]) of.dropped += 1;
    }
  });
  const estimates = new Map<number, { focal: number; pairs: number[] }>();
  for (const [ci, { all, rotated, dropped }] of pairsOf) {
    if (rotated.length < DOUBTED_PRIOR_MIN_PAIRS || 2 * dropped < rotated.length) continue;
    const agreement = agreementOf(graphOf, ci, rotated);
    const prior = cameras[ci]!.params[0]!;
    const atPrior = await agreement(prior);
    const factors = DOUBTED_PRIOR_FACTORS.filter((factor) => Math.max(factor, 1 / factor) >= DOUBTED_PRIOR_MIN_FACTOR);
    const focal = await bestFocalLength(
      agreement,
      prior,
      factors,
      (scores, k) => scores[k]! > atPrior && scores[k]! >= DOUBTED_PRIOR_MIN_AGREEMENT * atPrior,
    );
    if (focal !== null) estimates.set(ci, { focal, pairs: all });
  }
  return estimates;
}

/**
 * Each camera rotations could not take (none of its own, not SPHERICAL) with its pairs with
 * photos of averaged rotations through cameras that rotations take.
 */
function pairsOfUncalibrated({ pairs, cams: { cameras, cameraOfImage }, graph, rotationCamera }: RotationGraph): Map<number, number[]> {
  const cameraOf = (imageId: number) => cameraOfImage[imageId - 1]!;
  const pairsOf = new Map<number, number[]>();
  pairs.forEach((p, i) => {
    const [c1, c2] = [cameraOf(p.image_id1), cameraOf(p.image_id2)];
    if (c1 === c2) return;
    for (const [c, other, otherImage] of [
      [c1, c2, p.image_id2],
      [c2, c1, p.image_id1],
    ] as const) {
      if (rotationCamera[c] || cameras[c]!.model === "SPHERICAL" || !rotationCamera[other] || !graph.rotations.has(otherImage)) continue;
      if (!pairsOf.has(c)) pairsOf.set(c, []);
      pairsOf.get(c)!.push(i);
    }
  });
  return pairsOf;
}

/**
 * The cameras rotations could not take that are of the size (either orientation) of cameras with
 * a prior focal length, each with those cameras' median focal length and its pairs
 * (pairsOfUncalibrated): a photo without EXIF of the size of photos with it is most often one of
 * the same device's whose EXIF an editor dropped. mappingPairs keeps such a focal length only where
 * the view graph then keeps most of the camera's pairs (as for uncalibratedCameras); photos of one
 * size from devices of other focal lengths, whose rotations it then bends, are left to the search.
 * `offered`: the cameras offered one before (updated here), not offered again.
 */
function sameSizePriors(graphOf: RotationGraph, offered: Set<number>): Map<number, { focal: number; pairs: number[] }> {
  const { cameras } = graphOf.cams;
  const priorsOfSize = new Map<string, number[]>();
  for (const c of cameras) {
    if (!c.hasPriorFocalLength || c.model === "SPHERICAL") continue;
    if (!priorsOfSize.has(sizeKey(c))) priorsOfSize.set(sizeKey(c), []);
    priorsOfSize.get(sizeKey(c))!.push(c.params[0]!);
  }
  const estimates = new Map<number, { focal: number; pairs: number[] }>();
  for (const [ci, own] of pairsOfUncalibrated(graphOf)) {
    const priors = priorsOfSize.get(sizeKey(cameras[ci]!));
    if (own.length < DOUBTED_PRIOR_MIN_PAIRS || !priors || offered.has(ci)) continue;
    offered.add(ci);
    estimates.set(ci, { focal: [...priors].sort((a, b) => a - b)[priors.length >> 1]!, pairs: own });
  }
  return estimates;
}

/**
 * The cameras rotations could not take (no prior focal length and no group estimate: a photo
 * without EXIF among photos with it), each with the focal length at which its pairs with photos
 * of averaged rotations agree best on its own rotation (agreementOf, over UNCALIBRATED_FACTORS
 * around DEFAULT_FOCAL_LENGTH_FACTOR times its larger side), and its pairs. Those with fewer than
 * DOUBTED_PRIOR_MIN_PAIRS such pairs, or whose pairs agree nearly as well at other focal lengths,
 * are left out; mappingPairs keeps an estimate only where the view graph then keeps most of the
 * camera's pairs. `tried`: the cameras searched in earlier rounds, each with how many such pairs
 * it had (updated here); one is searched again only with more. (GLOMAP calibrates such cameras by
 * their fundamental matrices, estimateFocalRatio's criterion per camera: on sacre-coeur's photos
 * without EXIF that gave the long lenses 1.3 to 2.0 times their larger side for 2.6 to 2.7, and no
 * minimum as sharp as estimateFocalRatio asks.)
 */
async function uncalibratedCameras(
  graphOf: RotationGraph,
  tried: Map<number, number>,
): Promise<Map<number, { focal: number; pairs: number[] }>> {
  const { cameras } = graphOf.cams;
  const estimates = new Map<number, { focal: number; pairs: number[] }>();
  for (const [ci, own] of pairsOfUncalibrated(graphOf)) {
    // A camera searched before is searched again only with more partners placed since.
    if (own.length < DOUBTED_PRIOR_MIN_PAIRS || own.length <= (tried.get(ci) ?? 0)) continue;
    tried.set(ci, own.length);
    const { width, height } = cameras[ci]!;
    const agreement = agreementOf(graphOf, ci, own);
    // Only a focal length the rotations determine, where they agree clearly less well two to four steps (1.44 to
    // 2.07 times) away on each side: along a street they agree at any focal length (opensfm-lund with every second
    // photo's EXIF taken away: peaks at 0.52 to 3.0 times the larger side for 0.71, 0.94 to 1.0 of the peak on one
    // side at least); around a building they peak, more broadly for a photo whose partners are all to one side
    // (sceaux-castle: 1.06 for 1.05, 0.59 and 0.69 of it two steps away; its first four photos without EXIF, 0.72 to
    // 0.76 of it four steps away on one side, 0.59 to 0.75 on the other).
    const focal = await bestFocalLength(
      agreement,
      DEFAULT_FOCAL_LENGTH_FACTOR * Math.max(width, height),
      UNCALIBRATED_FACTORS,
      (scores, k) => {
        const fallsAway = (side: readonly number[]) => Math.min(...side) <= UNCALIBRATED_MAX_AGREEMENT_AROUND * scores[k]!;
        return (
          scores[k]! > 0 &&
          k >= 2 &&
          k + 2 < scores.length &&
          fallsAway(scores.slice(Math.max(0, k - 4), k - 1)) &&
          fallsAway(scores.slice(k + 2, k + 5))
        );
      },
    );
    if (focal !== null) estimates.set(ci, { focal, pairs: own });
  }
  return estimates;
}

/**
 * The verified pairs the mapper takes: those with inliers whose relative rotation the view graph
 * does not contradict (filterViewGraph), as the engine's pairs (image indices from 0), and the
 * cameras to map them with. A pair's rotation is the verification's own pose
 * (`x-cam2_from_cam1`), else its inliers re-verified with the cameras' rotationCameras. A
 * camera whose prior focal length its pairs contradict (contradictedPriors) loses the prior and
 * starts from the focal length they determine, where that brings back more of its pairs; a camera
 * without one to take rotations through (uncalibratedCameras) starts from the focal length its
 * partners' rotations determine, where the graph then keeps most of its pairs. The
 * map stage's one path from two_view_geometries.json to mapping; the benchmarks call it too, so
 * that they measure what the service runs. `dropped`: the pairs the filter refused;
 * `priorsLetGo`: the cameras whose prior was let go; `calibrated`: the cameras without a prior or a
 * group estimate calibrated by their partners' rotations (uncalibratedCameras) or given the focal length of photos of
 * their size with one (sameSizePriors); `rotations`: the averaged rotations by
 * image id. `verify` runs a batch of pairs on an engine (and may be a cancel point).
 */
export async function mappingPairs(
  pairs: VerifiedPairs,
  cams: DatasetCameras,
  keypoints: Keypoints,
  seed: number | undefined,
  verify: Verify,
): Promise<{
  pairs: MappingPair[];
  cameras: InitialCamera[];
  withInliers: number;
  dropped: number;
  priorsLetGo: number;
  calibrated: number;
  rotations: Map<number, Quat>;
}> {
  const withInliers = pairs.filter((p) => p.num_inliers > 0);
  const rotationCamera = rotationCameras(withInliers, cams);
  const rotations = withInliers.map((p) => rotationOf(p["x-cam2_from_cam1"]));
  /** The rotations of these pairs from their inliers verified with `cameraFor`. */
  const rotate = async (which: number[], cameraFor: (ci: number) => TwoViewCamera | null) => {
    const results = await reverify(withInliers, which, cams.cameraOfImage, cameraFor, keypoints, seed, verify);
    which.forEach((i, k) => (rotations[i] = rotationOf(results[k]?.cam2_from_cam1)));
  };
  await rotate(
    withInliers.flatMap((_, i) => (rotations[i] === null ? [i] : [])),
    (ci) => rotationCamera[ci] ?? null,
  );
  const filter = () => filterViewGraph(withInliers.map((p, i) => ({ ...viewGraphEdge(p), rotation: rotations[i]! })));
  let graph = filter();

  const cameras = cams.cameras.map((c) => ({ ...c }));
  /**
   * Each camera's estimate, where the view graph with its pairs rotated through it keeps enough of
   * their inliers (`enough`, of those it kept before and of all of them): the camera then maps from
   * that focal length, without a prior. Answers how many were kept.
   */
  const recalibrate = async (
    estimates: Map<number, { focal: number; pairs: number[] }>,
    enough: (before: number, all: number) => number,
  ) => {
    let kept = 0;
    for (const [ci, { focal, pairs: own }] of estimates) {
      const keptOf = (g: ViewGraphFilterResult) => own.reduce((sum, i) => sum + (g.kept[i] ? withInliers[i]!.num_inliers : 0), 0);
      const before = own.map((i) => rotations[i]!);
      const recalibrated = twoViewCamera(withFocalLength(cameras[ci]!, focal));
      await rotate(own, (c) => (c === ci ? recalibrated : (rotationCamera[c] ?? null)));
      const next = filter();
      const all = own.reduce((sum, i) => sum + withInliers[i]!.num_inliers, 0);
      if (keptOf(next) >= enough(keptOf(graph), all)) {
        graph = next;
        rotationCamera[ci] = recalibrated;
        cameras[ci] = { ...withFocalLength(cameras[ci]!, focal), hasPriorFocalLength: false };
        kept += 1;
      } else own.forEach((i, k) => (rotations[i] = before[k]!));
    }
    return kept;
  };
  const graphOf = (): RotationGraph => ({ pairs: withInliers, cams, rotationCamera, graph, keypoints, seed, verify });
  const priorsLetGo = await recalibrate(await contradictedPriors(graphOf()), (before) => DOUBTED_PRIOR_MIN_KEPT * before);
  // Photos rotations could not take: calibrated against their partners' averaged rotations, where the graph then keeps
  // most of their pairs (before, their pairs had no rotation, and the global mapper could not place them). In rounds,
  // until one calibrates none: a photo whose partners lacked a focal length too is reached through those calibrated before.
  // Where the search settles no more (along a street rotations agree at any focal length), photos of the size of photos
  // with EXIF take theirs (sameSizePriors), and the search goes on from them.
  let calibrated = 0;
  const [searched, offered] = [new Map<number, number>(), new Set<number>()];
  const keepsMost = (_: number, all: number) => UNCALIBRATED_MIN_KEPT * all;
  for (;;) {
    let round = await recalibrate(await uncalibratedCameras(graphOf(), searched), keepsMost);
    if (round === 0) round = await recalibrate(sameSizePriors(graphOf(), offered), keepsMost);
    if (round === 0) break;
    calibrated += round;
  }
  return {
    pairs: withInliers
      .filter((_, i) => graph.kept[i])
      .map((p) => ({ image1: p.image_id1 - 1, image2: p.image_id2 - 1, matches: Int32Array.from(p.inlier_matches.flat()), type: p.type })),
    cameras,
    withInliers: withInliers.length,
    dropped: graph.kept.filter((k) => !k).length,
    priorsLetGo,
    calibrated,
    // The averaged cam_from_world rotations by image id, which the global mapper places the images with.
    rotations: graph.rotations,
  };
}

import { describe, expect, it } from "vitest";
import { type Quat, quatConj, quatMul, rotationAngleDeg } from "../../engine-wasm/ts/accuracy";
import { loadEngine } from "../../engine-wasm/ts/engine";
import { mulberry32 } from "../../engine-wasm/ts/testing/synthetic-texture";
import { verifyTwoView } from "../../engine-wasm/ts/two-view";
import type { TwoViewGeometriesFile } from "../../protocol/schemas/snapshot";
import { verifiedPair } from "../runner/executors/verify";
import { type InitialCamera, initialCamera, twoViewCamera } from "./cameras";
import { type ViewGraphEdge, estimateFocalRatio, filterViewGraph, mappingPairs } from "./view-graph";

const axisAngle = (axis: [number, number, number], deg: number): Quat => {
  const n = Math.hypot(...axis);
  const h = (deg * Math.PI) / 360;
  return [Math.cos(h), (axis[0] / n) * Math.sin(h), (axis[1] / n) * Math.sin(h), (axis[2] / n) * Math.sin(h)];
};

/**
 * Cameras on a circle around an object, looking at it (cam_from_world: a turn about the vertical
 * by the camera's azimuth, then a small tilt), with neighbours up to `window` apart matched and
 * every relative rotation perturbed by up to `noiseDeg`. `folded`: edges between cameras on
 * opposite sides whose rotation is that of a symmetric object's other side (a 180 deg turn about
 * the vertical on top of the true one), the way a cylinder or a keyboard fools two-view geometry.
 */
function ringScene(n: number, window: number, noiseDeg: number, folded: Array<[number, number]>, seed = 1) {
  const rnd = mulberry32(seed);
  const truth: Quat[] = Array.from({ length: n }, (_, i) =>
    quatMul(axisAngle([1, 0, 0], 10 + 5 * Math.sin(i)), axisAngle([0, 1, 0], (360 * i) / n)),
  );
  const noisy = (q: Quat): Quat => quatMul(axisAngle([rnd() - 0.5, rnd() - 0.5, rnd() - 0.5], noiseDeg * rnd()), q);
  const edges: ViewGraphEdge[] = [];
  const wrong = new Set<number>();
  for (let i = 0; i < n; i += 1) {
    for (let d = 1; d <= window; d += 1) {
      const j = (i + d) % n;
      edges.push({ image1: i, image2: j, rotation: noisy(quatMul(truth[j]!, quatConj(truth[i]!))), weight: 200 - 10 * d });
    }
  }
  for (const [i, j] of folded) {
    // The symmetric interpretation: image j's view taken as that of the opposite side.
    const flipped = quatMul(truth[j]!, axisAngle([0, 1, 0], 180));
    wrong.add(edges.length);
    // More inliers than any true edge: a strong pattern repeated on both sides.
    edges.push({ image1: i, image2: j, rotation: noisy(quatMul(flipped, quatConj(truth[i]!))), weight: 400 });
  }
  return { truth, edges, wrong };
}

/** The largest angle between averaged and true rotations after removing the gauge (image 0's). */
function maxAbsoluteErrorDeg(truth: Quat[], rotations: Map<number, Quat>): number {
  const gauge = quatMul(quatConj(rotations.get(0)!), truth[0]!);
  return Math.max(...truth.map((q, i) => rotationAngleDeg(quatMul(rotations.get(i)!, gauge), q)));
}

describe("filterViewGraph", () => {
  it("keeps every edge of a consistent graph and recovers the rotations", () => {
    const { truth, edges } = ringScene(36, 4, 1, []);
    const result = filterViewGraph(edges);
    expect(result.kept.every(Boolean)).toBe(true);
    expect(maxAbsoluteErrorDeg(truth, result.rotations)).toBeLessThan(2);
  });

  it("drops the symmetric (folded) edges, even with more inliers than the true ones, and no true edge", () => {
    // 36 cameras 10 deg apart, neighbours up to 40 deg apart matched; 12 pairs across the object
    // (150-180 deg apart) matched by its symmetry, two of them sharing a camera.
    const folded: Array<[number, number]> = [
      [0, 17],
      [0, 18],
      [2, 20],
      [4, 21],
      [6, 24],
      [9, 27],
      [11, 28],
      [13, 31],
      [19, 1],
      [23, 5],
      [26, 8],
      [30, 12],
    ];
    const { truth, edges, wrong } = ringScene(36, 4, 2, folded);
    const result = filterViewGraph(edges);
    edges.forEach((_, i) => expect(result.kept[i], `edge ${i}`).toBe(!wrong.has(i)));
    expect(maxAbsoluteErrorDeg(truth, result.rotations)).toBeLessThan(3);
    // Few loops through a folded edge close (only those with another folded edge of the same
    // camera, as 0-17-18), most through a true one do.
    for (const i of wrong) expect(result.loops[i]!.closed).toBeLessThanOrEqual(1);
    edges.forEach((_, i) => {
      if (!wrong.has(i)) expect(result.loops[i]!.closed).toBeGreaterThan(result.loops[i]!.total / 2);
    });
  });

  it("keeps pairs without a rotation and leaves images on no such edge out of the rotations", () => {
    const { edges } = ringScene(12, 2, 1, []);
    edges.push({ image1: 3, image2: 40, rotation: null, weight: 50 });
    const result = filterViewGraph(edges);
    expect(result.kept.at(-1)).toBe(true);
    expect(Number.isNaN(result.residualDeg.at(-1))).toBe(true);
    expect(result.rotations.has(40)).toBe(false);
    expect(result.rotations.size).toBe(12);
  });
});

/** Row-major 3x3 rotation of a unit quaternion. */
function matrixOf(q: Quat): number[] {
  const [w, x, y, z] = q;
  return [
    1 - 2 * (y * y + z * z),
    2 * (x * y - w * z),
    2 * (x * z + w * y),
    2 * (x * y + w * z),
    1 - 2 * (x * x + z * z),
    2 * (y * z - w * x),
    2 * (x * z - w * y),
    2 * (y * z + w * x),
    1 - 2 * (x * x + y * y),
  ];
}
const mul3 = (a: number[], b: number[]) =>
  Array.from({ length: 9 }, (_, k) => [0, 1, 2].reduce((s, i) => s + a[3 * Math.floor(k / 3) + i]! * b[3 * i + (k % 3)]!, 0));

describe("estimateFocalRatio", () => {
  const [w, h, f] = [720, 1280, 594];
  const sizes = [
    [w, h],
    [w, h],
  ] as const;
  /** K^-1 of a photo of `width` x `height` with focal length `focal`, principal point at the centre. */
  const kInverse = (focal: number, width: number, height: number) => [
    1 / focal,
    0,
    -width / 2 / focal,
    0,
    1 / focal,
    -height / 2 / focal,
    0,
    0,
    1,
  ];
  const transpose = (m: number[]) => [m[0]!, m[3]!, m[6]!, m[1]!, m[4]!, m[7]!, m[2]!, m[5]!, m[8]!];
  /** F = K2^-T [t]x R K1^-1. */
  const fundamental = (R: Quat, t: number[], K1inv = kInverse(f, w, h), K2inv = K1inv) => {
    const tx = [0, -t[2]!, t[1]!, t[2]!, 0, -t[0]!, -t[1]!, t[0]!, 0];
    return mul3(mul3(transpose(K2inv), mul3(tx, matrixOf(R))), K1inv);
  };

  it("finds the focal length that made the fundamental matrices of a camera, with some of them wrong", () => {
    const rnd = mulberry32(7);
    const Fs: Array<{ F: number[]; numInliers: number; sizes: typeof sizes }> = [];
    for (let i = 0; i < 40; i += 1) {
      const R = axisAngle([rnd() - 0.5, rnd() - 0.5, rnd() - 0.5], 5 + 30 * rnd());
      const t = [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5];
      // A quarter of the matrices are random (wrong pairs): the median ignores them.
      const F = i % 4 === 3 ? Array.from({ length: 9 }, () => rnd() - 0.5) : fundamental(R, t);
      Fs.push({ F, numInliers: 100, sizes });
    }
    expect((estimateFocalRatio(Fs)! * h) / f).toBeCloseTo(1, 2);
    expect(estimateFocalRatio(Fs.slice(0, 5))).toBeNull();
    // Weak pairs (few inliers) with a wrong focal length: ignored while there are enough strong ones.
    const weak = Fs.slice(0, 30).map(({ F }) => ({ F: F.map((v, k) => (k % 3 === 2 || k >= 6 ? v * 3 : v)), numInliers: 20, sizes }));
    expect((estimateFocalRatio([...Fs, ...weak])! * h) / f).toBeCloseTo(1, 2);
  });

  it("finds it for photos of one device resized and turned, as photos found online are", () => {
    const rnd = mulberry32(8);
    const photo = () => {
      const s = 0.4 + 0.6 * rnd();
      const [pw, ph] = rnd() < 0.5 ? [w * s, h * s] : [h * s, w * s];
      return { size: [pw, ph] as const, Kinv: kInverse((f / h) * Math.max(pw, ph), pw, ph) };
    };
    const Fs = Array.from({ length: 30 }, () => {
      const [a, b] = [photo(), photo()];
      const R = axisAngle([rnd() - 0.5, rnd() - 0.5, rnd() - 0.5], 5 + 30 * rnd());
      const F = fundamental(R, [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5], a.Kinv, b.Kinv);
      return { F, numInliers: 100, sizes: [a.size, b.size] as const };
    });
    expect(estimateFocalRatio(Fs)! / (f / h)).toBeCloseTo(1, 2);
  });

  it("gives none for level cameras moving in the plane of their optical axes (a street walked along)", () => {
    const rnd = mulberry32(9);
    // Turns about the vertical only, baselines horizontal: the matrices are essential at any
    // focal length, so the defect has no minimum to find.
    const Fs = Array.from({ length: 40 }, () => ({
      F: fundamental(axisAngle([0, 1, 0], 20 * (rnd() - 0.5)), [rnd() - 0.5, 0, 1 + rnd()]),
      numInliers: 100,
      sizes,
    }));
    expect(estimateFocalRatio(Fs)).toBeNull();
  });
});

describe("mappingPairs", () => {
  /**
   * Ten photos on an arc around 400 points (a 15 deg turn each, 6 units away), SIMPLE_RADIAL, 800x600
   * at f = 700 each unless `photoOf` says otherwise, every pair up to four apart verified as the
   * verification stage does (with each camera's prior). `priorOf`: each photo's prior focal length
   * (null: none, as without EXIF).
   */
  async function arcScene(
    priorOf: (i: number) => number | null,
    photoOf: (i: number) => { width: number; height: number; f: number } = () => ({ width: 800, height: 600, f: 700 }),
  ) {
    const engine = await loadEngine();
    const rnd = mulberry32(11);
    const n = 10;
    const points = Array.from({ length: 400 }, () => [2 * rnd() - 1, 2 * rnd() - 1, 2 * rnd() - 1] as const);
    const keypoints = Array.from({ length: n }, (_, i) => {
      const { width, height, f } = photoOf(i);
      const a = ((i - (n - 1) / 2) * 15 * Math.PI) / 180;
      const xy: number[] = [];
      for (const [x, y, z] of points) {
        const xc = Math.cos(a) * x - Math.sin(a) * z;
        const zc = Math.sin(a) * x + Math.cos(a) * z + 6;
        xy.push((f * xc) / zc + width / 2 + 0.3 * (rnd() - 0.5), (f * y) / zc + height / 2 + 0.3 * (rnd() - 0.5));
      }
      return { xy: Float64Array.from(xy) };
    });
    const cameras: InitialCamera[] = keypoints.map((_, i) => {
      const { width, height } = photoOf(i);
      const prior = priorOf(i);
      const camera = initialCamera("SIMPLE_RADIAL", width, height);
      return prior === null ? camera : { ...camera, params: [prior, width / 2, height / 2, 0], hasPriorFocalLength: true };
    });
    const cams = { cameras, cameraOfImage: cameras.map((_, i) => i) };
    const matches = points.map((_, k) => [k, k] as [number, number]);
    const pairs: TwoViewGeometriesFile["pairs"] = [];
    for (let i = 0; i < n; i += 1)
      for (let j = i + 1; j < Math.min(n, i + 5); j += 1) {
        const g = verifyTwoView(engine, {
          keypoints1: keypoints[i]!.xy,
          keypoints2: keypoints[j]!.xy,
          camera1: twoViewCamera(cameras[i]!),
          camera2: twoViewCamera(cameras[j]!),
          matches,
          options: { seed: 1 },
        });
        pairs.push(verifiedPair(i, j, g));
      }
    return mappingPairs(pairs, cams, keypoints, 1, async (batch) => batch.map((b) => verifyTwoView(engine, b)));
  }

  it("lets go of a prior focal length its pairs contradict, and keeps its pairs", async () => {
    // Photo 5 was cropped to half and kept its original's EXIF: its prior says half its focal length.
    const mapped = await arcScene((i) => (i === 4 ? 350 : 700));
    expect(mapped.priorsLetGo).toBe(1);
    expect(mapped.cameras[4]!.hasPriorFocalLength).toBe(false);
    expect(mapped.cameras[4]!.params[0]! / 700).toBeCloseTo(1, 0);
    expect(mapped.dropped).toBe(0);
  });

  /** Photos of another size than the rest (no photo with EXIF of their size: sameSizePriors has none to give). */
  const smaller = (which: readonly number[]) => (i: number) => ({
    ...(which.includes(i) ? { width: 640, height: 480 } : { width: 800, height: 600 }),
    f: 700,
  });

  it("calibrates a photo without EXIF among photos with it by its partners' rotations", async () => {
    // Photo 5 has no focal length and no group of its size to share an estimate with: before, its pairs had no rotation.
    const mapped = await arcScene((i) => (i === 4 ? null : 700), smaller([4]));
    expect(mapped.calibrated).toBe(1);
    expect(mapped.cameras[4]!.hasPriorFocalLength).toBe(false);
    expect(mapped.cameras[4]!.params[0]! / 700).toBeCloseTo(1, 1);
    expect(mapped.rotations.has(5)).toBe(true);
    expect(mapped.dropped).toBe(0);
  });

  it("reaches photos whose partners lack a focal length too, through those calibrated before", async () => {
    // Photos 2, 3, 5 and 6 have none: photo 2 sees two photos with one (1 and 4), too few to search, until photos 3, 5
    // and 6 (which see three to five) are calibrated.
    const without = [1, 2, 4, 5];
    const mapped = await arcScene((i) => (without.includes(i) ? null : 700), smaller(without));
    expect(mapped.calibrated).toBe(4);
    // Within 10%: a start for the mapper, which refines it.
    for (const i of without) expect(Math.abs(mapped.cameras[i]!.params[0]! / 700 - 1)).toBeLessThan(0.1);
    expect(without.every((i) => mapped.rotations.has(i + 1))).toBe(true);
    expect(mapped.dropped).toBe(0);
  });

  it("gives photos without EXIF whose focal length the search cannot settle that of photos of their size with it", async () => {
    // The arc's first three photos lost their EXIF in an editor: their partners are all to one side, and their pairs
    // agree nearly as well at any focal length. Photo 7, of the same size, was taken with twice the focal length: the
    // search finds it.
    const mapped = await arcScene(
      (i) => (i < 3 || i === 6 ? null : 700),
      (i) => ({ width: 800, height: 600, f: i === 6 ? 1400 : 700 }),
    );
    expect(mapped.calibrated).toBe(4);
    for (const i of [0, 1, 2]) expect(mapped.cameras[i]!.params[0]).toBe(700);
    expect(mapped.cameras[6]!.params[0]! / 1400).toBeCloseTo(1, 1);
    expect(mapped.dropped).toBe(0);
  });

  it("keeps true priors", async () => {
    const mapped = await arcScene(() => 700);
    expect(mapped.priorsLetGo).toBe(0);
    expect(mapped.dropped).toBe(0);
    expect(mapped.cameras.every((c) => c.hasPriorFocalLength && c.params[0] === 700)).toBe(true);
  });
});

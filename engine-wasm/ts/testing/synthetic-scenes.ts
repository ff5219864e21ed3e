/**
 * @module Small synthetic scenes with exact (or slightly noisy) projections, shared by the
 * binding tests: a two-view pair, a six-camera mapping input, a five-camera bundle adjustment.
 */
import type { BundleAdjustmentScene } from "../ba";
import type { MappingInput } from "../mapping";

// A synthetic pair: points in front of two pinholes 1 unit apart, exact projections.
export function syntheticTwoViewPair(count: number) {
  const f = 800,
    cx = 400,
    cy = 300;
  const keypoints1: number[] = [],
    keypoints2: number[] = [];
  let seed = 3;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const angle = 0.1; // camera 2 rotated about y, then shifted along x
  for (let i = 0; i < count; i += 1) {
    const X = (random() - 0.5) * 6,
      Y = (random() - 0.5) * 4,
      Z = 5 + random() * 4;
    keypoints1.push((f * X) / Z + cx, (f * Y) / Z + cy);
    const x2 = Math.cos(angle) * X + Math.sin(angle) * Z - 1;
    const z2 = -Math.sin(angle) * X + Math.cos(angle) * Z;
    keypoints2.push((f * x2) / z2 + cx, (f * Y) / z2 + cy);
  }
  const matches = Array.from({ length: count }, (_, i) => [i, i] as [number, number]);
  return { keypoints1, keypoints2, matches, camera: { model: "SIMPLE_PINHOLE" as const, width: 800, height: 600, params: [f, cx, cy] } };
}

/**
 * Six cameras on an arc around 300 points (SIMPLE_RADIAL f = 700 truth), keypoints
 * shuffled with distractors; cameras start at COLMAP's no-EXIF guess (f = 960).
 */
export function syntheticMappingInput(): MappingInput {
  let s = 7;
  const random = () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const width = 800,
    height = 600,
    f = 700,
    k = 0.02;
  const points = Array.from({ length: 300 }, () => [random(), random(), random()] as const);
  const keypointOf: Array<Map<number, number>> = [];
  const images = Array.from({ length: 6 }, (_, i) => {
    const a = 0.2 * (i - 2.5);
    const kps: number[] = [];
    const map = new Map<number, number>();
    points.forEach(([x, y, z], j) => {
      // The scene turned by a about its centre, 6 units in front: cameras orbit it.
      const xc = Math.cos(a) * x - Math.sin(a) * z;
      const zc = Math.sin(a) * x + Math.cos(a) * z + 6;
      const u = xc / zc,
        v = y / zc,
        r = 1 + k * (u * u + v * v);
      const px = f * u * r + width / 2 + 0.3 * random(),
        py = f * v * r + height / 2 + 0.3 * random();
      if (px < 0 || py < 0 || px >= width || py >= height) return;
      map.set(j, kps.length / 2);
      kps.push(px, py);
    });
    for (let d = 0; d < 40; d += 1) kps.push(((random() + 1) / 2) * width, ((random() + 1) / 2) * height);
    keypointOf.push(map);
    return { camera: 0, keypoints: Float64Array.from(kps) };
  });
  const pairs: MappingInput["pairs"] = [];
  for (let i = 0; i < 6; i += 1) {
    for (let j = i + 1; j < 6; j += 1) {
      const m: number[] = [];
      for (const [p, a] of keypointOf[i]!) {
        const b = keypointOf[j]!.get(p);
        if (b !== undefined) m.push(a, b);
      }
      pairs.push({ image1: i, image2: j, matches: Int32Array.from(m) });
    }
  }
  return { cameras: [{ model: "SIMPLE_RADIAL", width, height, params: [960, 400, 300, 0] }], images, pairs };
}

/** Five cameras on an arc looking at a unit cube of points, SIMPLE_RADIAL, f = 600. */
export function syntheticBundleAdjustment(noise: number, seed = 1): { truth: BundleAdjustmentScene; start: BundleAdjustmentScene } {
  let s = seed;
  const random = () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const f = 600,
    cx = 320,
    cy = 240,
    k = 0.02;
  const images = [0, 1, 2, 3, 4].map((i) => {
    const a = 0.2 * (i - 2);
    // Rotation about y by -a (camera looks at the origin from (5 sin a, 0, -5 cos a)).
    const qvec: [number, number, number, number] = [Math.cos(-a / 2), 0, Math.sin(-a / 2), 0];
    return { camera: 0, qvec, tvec: [0, 0, 5] as [number, number, number] };
  });
  const numPoints = 60;
  const points = new Float64Array(3 * numPoints).map(() => random());
  const obs: number[] = [];
  const xy: number[] = [];
  for (let j = 0; j < numPoints; j += 1) {
    images.forEach((_, i) => {
      const a = 0.2 * (i - 2);
      const [x, y, z] = [points[3 * j]!, points[3 * j + 1]!, points[3 * j + 2]!];
      const xc = Math.cos(a) * x - Math.sin(a) * z;
      const zc = Math.sin(a) * x + Math.cos(a) * z + 5;
      const u = xc / zc,
        v = y / zc;
      const r = 1 + k * (u * u + v * v);
      obs.push(i, j);
      xy.push(f * u * r + cx + noise * random(), f * v * r + cy + noise * random());
    });
  }
  const truth: BundleAdjustmentScene = {
    cameras: [{ model: "SIMPLE_RADIAL", width: 640, height: 480, params: [f, cx, cy, k] }],
    images,
    points,
    observations: Int32Array.from(obs),
    observationsXY: Float64Array.from(xy),
  };
  const start: BundleAdjustmentScene = {
    ...truth,
    cameras: [{ ...truth.cameras[0]!, params: [f * 1.02, cx, cy, 0] }],
    points: points.map((p) => p + 0.02 * random()),
    images: images.map((im, i) =>
      i === 0 ? im : { ...im, tvec: [im.tvec[0] + 0.03 * random(), im.tvec[1], im.tvec[2]] as [number, number, number] },
    ),
  };
  return { truth, start };
}

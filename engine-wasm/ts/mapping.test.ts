import { beforeAll, describe, expect, it } from "vitest";
import { loadEngine, type Engine } from "./engine";
import { IncrementalMapping, point3DIdsOfImage, type MappingInput } from "./mapping";

/**
 * Six cameras on an arc around 300 points (SIMPLE_RADIAL f = 700 truth), keypoints
 * shuffled with distractors; cameras start at COLMAP's no-EXIF guess (f = 960).
 */
function syntheticInput(): MappingInput {
  let s = 7;
  const random = () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const width = 800, height = 600, f = 700, k = 0.02;
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
      const u = xc / zc, v = y / zc, r = 1 + k * (u * u + v * v);
      const px = f * u * r + width / 2 + 0.3 * random(), py = f * v * r + height / 2 + 0.3 * random();
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

const OPTIONS = { seed: 3, init_min_tri_angle: 8, min_model_size: 3 };

describe("incremental mapping binding", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
  });

  it("maps a synthetic scene from uncalibrated cameras, with snapshots", () => {
    const input = syntheticInput();
    const mapping = new IncrementalMapping(engine, input, { ...OPTIONS, snapshot_frames_freq: 2 });
    const snapshots: number[] = [];
    const models = mapping.run((m) => snapshots.push(m.numRegistrations));
    mapping.free();
    expect(models).toHaveLength(1);
    const model = models[0]!;
    expect(model.images.map((im) => im.image).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // One snapshot each time the registration count reaches a new multiple of 2 (an
    // initial pair adds two at once; a filtered image registered again counts again).
    expect(snapshots.length).toBeGreaterThanOrEqual(3);
    snapshots.forEach((n, i) => {
      if (i > 0) expect(Math.floor(n / 2)).toBeGreaterThan(Math.floor(snapshots[i - 1]! / 2));
    });
    expect(model.meanReprojectionError).toBeLessThan(0.5);
    expect(model.cameras[0]!.params[0]).toBeCloseTo(700, -1);
    expect(model.points.length / 3).toBeGreaterThan(250);
    // Every track element points back to its point.
    const ids = point3DIdsOfImage(model, 0, input.images[0]!.keypoints.length / 2);
    expect(ids.filter((id) => id >= 0).length).toBeGreaterThan(150);
  });

  it("resumes from a checkpoint to the same result", () => {
    const input = syntheticInput();
    const straight = new IncrementalMapping(engine, input, OPTIONS);
    const expected = straight.run();
    straight.free();
    const first = new IncrementalMapping(engine, input, OPTIONS);
    expect(first.step(2)).toBe("running");
    const bytes = first.checkpoint();
    first.free();
    const resumed = new IncrementalMapping(engine, input, OPTIONS);
    resumed.restore(bytes);
    const models = resumed.run();
    expect(() => resumed.restore(bytes.slice(0, 10))).toThrow(/checkpoint/);
    resumed.free();
    expect(models[0]!.images.map((im) => im.image)).toEqual(expected[0]!.images.map((im) => im.image));
    for (let i = 0; i < models[0]!.images.length; i += 1) {
      for (let c = 0; c < 3; c += 1) expect(models[0]!.images[i]!.tvec[c]).toBeCloseTo(expected[0]!.images[i]!.tvec[c]!, 6);
    }
  });

  it("rejects invalid input", () => {
    const input = syntheticInput();
    expect(() => new IncrementalMapping(engine, { ...input, pairs: [{ image1: 0, image2: 9, matches: new Int32Array(0) }] })).toThrow(/invalid input/);
  });
});

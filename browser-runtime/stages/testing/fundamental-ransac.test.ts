import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../engine-wasm/ts/testing/synthetic-texture";
import { ransacFundamental, sampsonSquared } from "./fundamental-ransac";

describe("test-only fundamental RANSAC", () => {
  it("recovers the epipolar geometry of two synthetic cameras through 40% outliers", () => {
    const rand = mulberry32(4);
    const f = 500,
      cx = 320,
      cy = 240;
    // Camera 2: rotated 10 degrees about y and shifted along x.
    const a = (10 * Math.PI) / 180;
    const project = (p: number[], second: boolean): [number, number] => {
      let [x, , z] = p as [number, number, number];
      const y = p[1]!;
      if (second) [x, z] = [Math.cos(a) * x + Math.sin(a) * z - 1, -Math.sin(a) * x + Math.cos(a) * z];
      return [f * (x / z) + cx, f * (y / z) + cy];
    };
    const n = 300;
    const x1 = new Float64Array(2 * n),
      x2 = new Float64Array(2 * n);
    const truth: boolean[] = [];
    for (let i = 0; i < n; i += 1) {
      const p = [(rand() - 0.5) * 6, (rand() - 0.5) * 4, 4 + rand() * 6];
      const [u1, v1] = project(p, false);
      let [u2, v2] = project(p, true);
      const outlier = i % 5 < 2;
      if (outlier) [u2, v2] = [rand() * 640, rand() * 480];
      truth.push(!outlier);
      x1.set([u1 + (rand() - 0.5), v1 + (rand() - 0.5)], 2 * i);
      x2.set([u2 + (rand() - 0.5), v2 + (rand() - 0.5)], 2 * i);
    }
    const fit = ransacFundamental(x1, x2, 2, 500, 7);
    const found = new Set(fit.inliers);
    const recovered = truth.filter((t, i) => t && found.has(i)).length;
    expect(recovered).toBeGreaterThan(0.95 * 180);
    expect(fit.inliers.length).toBeLessThan(180 + 12); // few random outliers fit by chance
    for (const i of fit.inliers) expect(sampsonSquared(fit.f, x1, x2, i)).toBeLessThan(4);
  });
});

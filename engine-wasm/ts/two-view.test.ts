import { describe, expect, it } from "vitest";
import { loadEngine } from "./engine";
import { verifyTwoView } from "./two-view";

// A synthetic pair: points in front of two pinholes 1 unit apart, exact projections.
function syntheticPair(count: number) {
  const f = 800, cx = 400, cy = 300;
  const keypoints1: number[] = [], keypoints2: number[] = [];
  let seed = 3;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const angle = 0.1; // camera 2 rotated about y, then shifted along x
  for (let i = 0; i < count; i += 1) {
    const X = (random() - 0.5) * 6, Y = (random() - 0.5) * 4, Z = 5 + random() * 4;
    keypoints1.push(f * X / Z + cx, f * Y / Z + cy);
    const x2 = Math.cos(angle) * X + Math.sin(angle) * Z - 1;
    const z2 = -Math.sin(angle) * X + Math.cos(angle) * Z;
    keypoints2.push(f * x2 / z2 + cx, f * Y / z2 + cy);
  }
  const matches = Array.from({ length: count }, (_, i) => [i, i] as [number, number]);
  return { keypoints1, keypoints2, matches, camera: { model: "SIMPLE_PINHOLE" as const, width: 800, height: 600, params: [f, cx, cy] } };
}

describe("verifyTwoView binding", () => {
  it("classifies a general scene with known intrinsics as calibrated and returns E and the pose", async () => {
    const engine = await loadEngine();
    const pair = syntheticPair(120);
    const result = verifyTwoView(engine, { ...pair, camera1: pair.camera, camera2: pair.camera });
    expect(result.type).toBe("calibrated");
    expect(result.num_inliers).toBe(120);
    expect(result.inlier_matches[5]).toEqual([5, 5]);
    expect(result.E).toHaveLength(9);
    expect(result.F).toBeNull();
    expect(result.H).toBeNull();
    expect(result.models.F).toHaveLength(9);
    const q = result.cam2_from_cam1!.rotation;
    // Rotation of 0.1 rad about y: q = (cos 0.05, 0, sin 0.05, 0).
    expect(Math.abs(q.w)).toBeCloseTo(Math.cos(0.05), 6);
    expect(Math.abs(q.y)).toBeCloseTo(Math.sin(0.05), 6);
  });

  it("without intrinsics falls back to the fundamental matrix", async () => {
    const engine = await loadEngine();
    const pair = syntheticPair(120);
    const unknown = { model: null, width: 800, height: 600 } as const;
    const result = verifyTwoView(engine, { ...pair, camera1: unknown, camera2: unknown });
    expect(result.type).toBe("uncalibrated");
    expect(result.F).toHaveLength(9);
    expect(result.E).toBeNull();
    expect(result.cam2_from_cam1).toBeNull();
  });

  it("is degenerate with too few matches and undefined with invalid options", async () => {
    const engine = await loadEngine();
    const pair = syntheticPair(10);
    const input = { ...pair, camera1: pair.camera, camera2: pair.camera };
    expect(verifyTwoView(engine, input).type).toBe("degenerate");
    expect(verifyTwoView(engine, { ...input, options: { maxError: -1 } }).type).toBe("undefined");
    expect(() => verifyTwoView(engine, { ...input, camera1: { ...pair.camera, params: [1, 2] } })).toThrow(/takes 3 params/);
  });
});

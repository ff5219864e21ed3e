import { describe, expect, it } from "vitest";
import { loadEngine } from "./engine";
import { verifyTwoView } from "./two-view";
import { syntheticTwoViewPair } from "./testing/synthetic-scenes";

describe("verifyTwoView binding", () => {
  it("classifies a general scene with known intrinsics as calibrated and returns E and the pose", async () => {
    const engine = await loadEngine();
    const pair = syntheticTwoViewPair(120);
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
    const pair = syntheticTwoViewPair(120);
    const unknown = { model: null, width: 800, height: 600 } as const;
    const result = verifyTwoView(engine, { ...pair, camera1: unknown, camera2: unknown });
    expect(result.type).toBe("uncalibrated");
    expect(result.F).toHaveLength(9);
    expect(result.E).toBeNull();
    expect(result.cam2_from_cam1).toBeNull();
  });

  it("is degenerate with too few matches and undefined with invalid options", async () => {
    const engine = await loadEngine();
    const pair = syntheticTwoViewPair(10);
    const input = { ...pair, camera1: pair.camera, camera2: pair.camera };
    expect(verifyTwoView(engine, input).type).toBe("degenerate");
    expect(verifyTwoView(engine, { ...input, options: { maxError: -1 } }).type).toBe("undefined");
    expect(() => verifyTwoView(engine, { ...input, camera1: { ...pair.camera, params: [1, 2] } })).toThrow(/takes 3 params/);
  });
});

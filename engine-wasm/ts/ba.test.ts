import { beforeAll, describe, expect, it } from "vitest";
import { bundleAdjust } from "./ba";
import { loadEngine, type Engine } from "./engine";
import { syntheticBundleAdjustment } from "./testing/synthetic-scenes";

describe("bundle adjustment binding", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
  });

  it("converges from a perturbed start to sub-pixel error with the gauge fixed", () => {
    const { start } = syntheticBundleAdjustment(0.3);
    const result = bundleAdjust(engine, start, { fix_gauge: true });
    expect(result.converged).toBe(true);
    expect(result.finalCost).toBeLessThan(0.01 * result.initialCost);
    expect(result.meanReprojectionError).toBeLessThan(0.5);
    expect(result.scene.cameras[0]!.params[0]).toBeCloseTo(600, -1);
    // The gauge holds the first pose exactly.
    expect(result.scene.images[0]!.tvec).toEqual(start.images[0]!.tvec);
  });

  it("two_stage drops gross outliers and reports them", () => {
    const { start } = syntheticBundleAdjustment(0.3, 7);
    const xy = Float64Array.from(start.observationsXY);
    for (const o of [3, 50, 120]) xy[2 * o]! += 40;
    const result = bundleAdjust(
      engine,
      { ...start, observationsXY: xy },
      { mode: "two_stage", fix_gauge: true, max_reprojection_error: 4 },
    );
    expect(result.numObservationsKept).toBe(start.observations.length / 2 - 3);
    expect([3, 50, 120].map((o) => result.inliers[o])).toEqual([false, false, false]);
    expect(result.meanReprojectionError).toBeLessThan(0.5);
  });

  it("respects refine flags and rejects unknown kernels", () => {
    const { start } = syntheticBundleAdjustment(0.3);
    const held = bundleAdjust(engine, start, { fix_gauge: true, refine_focal_length: false, refine_extra_params: false });
    expect(held.scene.cameras[0]!.params).toEqual(start.cameras[0]!.params);
    // @ts-expect-error: a kernel the types rule out, as an untyped caller could pass it
    expect(() => bundleAdjust(engine, start, { loss_kernel: "arctan" })).toThrow(/loss kernel/);
  });
});

/**
 * A task whose input the engine refuses fails with a clear error, and the runner and its engine
 * go on (issue 22): the real Runner on the real Node host (wasm engine) runs `map` leases made
 * here, against an in-memory service. The first carries verified matches that name keypoints its
 * images do not have (what a lying upstream runner could post); the engine refuses them, the
 * runner reports `EngineError` with the rule that was broken. The next lease, valid, maps a
 * model on the same engine instance. So do degenerate scenes (NaN keypoints, one image, every
 * keypoint on one line), each failing with its own error; a zero EXIF focal length is no focal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Engine } from "../../engine-wasm/ts/engine";
import type { MappingInput } from "../../engine-wasm/ts/mapping";
import { nodeRunnerHost } from "./node-host";
import { Runner, type RunnerHost } from "./runner";
import { mapLease, memoryService } from "./testing/map-lease";

describe("a task the engine refuses", () => {
  let host: RunnerHost;
  let engine: Engine;
  beforeAll(async () => {
    host = await nodeRunnerHost("engine-faults", { engineWorkers: 1 });
    engine = await host.engine();
  });
  afterAll(() => host.engines.release());

  it("fails with EngineError naming the broken rule, and the same runner and engine then map a valid task", async () => {
    const service = memoryService();
    const runner = new Runner(service.client, host, { stages: ["map"] });
    const lying = await mapLease(service, "L1", (f) => ({
      ...f,
      pairs: f.pairs.map((p, i) => (i === 0 ? { ...p, inlier_matches: [...p.inlier_matches, [9999, 0]] } : p)),
    }));
    expect(await runner.runTask(lying)).toBe("failed");
    const failure = service.ended.get("L1")!.failed!;
    expect(failure.error_class).toBe("EngineError");
    expect(failure.message).toMatch(/pair 0's matches: pair \d+ \(9999, 0\) is outside/);

    expect(await runner.runTask(await mapLease(service, "L2", (f) => f))).toBe("completed");
    const outputs = service.ended.get("L2")!.completed!;
    expect(outputs.artifacts[0]!.kind).toBe("reconstruction.sparse.v1");
    expect(outputs.artifacts[0]!.summary.num_reg_images).toBe(6);
    expect(await host.engine()).toBe(engine);
    expect(engine.usable).toBe(true);
  });

  // Degenerate scenes (issue 22): each task fails with its own clear error; the runner and engine go on.
  const degenerate: Array<[string, (input: MappingInput) => MappingInput, RegExp]> = [
    [
      "NaN keypoint coordinates",
      (input) => ({
        ...input,
        images: input.images.map((im, i) => (i === 2 ? { ...im, keypoints: im.keypoints.map((v, k) => (k === 3 ? Number.NaN : v)) } : im)),
      }),
      /^WireFormatError: features: keypoint \d+ has a non-finite value/,
    ],
    [
      "one image",
      (input) => ({ ...input, images: input.images.slice(0, 1), pairs: [] }),
      /^NoModelError: .* from 1 images and 0 verified pairs/,
    ],
    [
      "every keypoint on one line",
      (input) => ({
        ...input,
        images: input.images.map((im) => ({ ...im, keypoints: im.keypoints.map((v, k) => (k % 2 === 1 ? 300 : v)) })),
      }),
      /^NoModelError: .* from 6 images and 15 verified pairs: no initial image pair/,
    ],
  ];
  it.each(degenerate)(
    "%s: the task fails with a clear error, and the same runner and engine then map a valid task",
    async (_, scene, message) => {
      const service = memoryService();
      const runner = new Runner(service.client, host, { stages: ["map"] });
      expect(await runner.runTask(await mapLease(service, "D1", (f) => f, {}, null, scene))).toBe("failed");
      const failure = service.ended.get("D1")!.failed!;
      expect(`${failure.error_class}: ${failure.message}`).toMatch(message);
      expect(await runner.runTask(await mapLease(service, "D2"))).toBe("completed");
      expect(service.ended.get("D2")!.completed!.artifacts[0]!.summary.num_reg_images).toBe(6);
      expect(await host.engine()).toBe(engine);
      expect(engine.usable).toBe(true);
    },
  );

  it("a zero EXIF focal length is taken as unknown (a guess the mapper refines), never handed to the engine as a focal of 0", async () => {
    const service = memoryService();
    const runner = new Runner(service.client, host, { stages: ["map"] });
    const lease = await mapLease(service, "Z1");
    for (const image of lease.inputs.dataset!.images) (image as { focal_length_35mm: number | null }).focal_length_35mm = 0;
    expect(await runner.runTask(lease)).toBe("completed");
    expect(service.ended.get("Z1")!.completed!.artifacts[0]!.summary.num_reg_images).toBe(6);
    expect(engine.usable).toBe(true);
  });
});

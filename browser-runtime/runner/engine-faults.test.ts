/**
 * A task whose input the engine refuses fails with a clear error, and the runner and its engine
 * go on (issue 22): the real Runner on the real Node host (wasm engine) runs `map` leases made
 * here, against an in-memory service. The first carries verified matches that name keypoints its
 * images do not have (what a lying upstream runner could post); the engine refuses them, the
 * runner reports `EngineError` with the rule that was broken. The next lease, valid, maps a
 * model on the same engine instance.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Engine } from "../../engine-wasm/ts/engine";
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
});

/**
 * The map stage's time budget (spec 2.12 `max_runtime_seconds`, issue 23): the real Runner on the
 * real Node host maps the synthetic six-image scene (testing/map-lease.ts). Once the budget is
 * spent the mapper finishes the model it is building, seals it with a WARNING and starts no
 * other; a resumed task counts the time its checkpoint says was already spent, so a budget spent
 * before the runner died is not granted again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunnerEvent } from "../../../client/index";
import { nodeRunnerHost } from "../node-host";
import { Runner, type RunnerHost } from "../runner";
import { mapLease, memoryService } from "../testing/map-lease";
import { MAPPING_SECONDS } from "./map";

const budgetWarnings = (events: RunnerEvent[] = []) =>
  events.filter((e) => e.kind === "log_line" && e.level === "WARNING" && /max_runtime_seconds \(\d+ s\) spent/.test(e.message));

describe("map: max_runtime_seconds", () => {
  let host: RunnerHost;
  beforeAll(async () => {
    host = await nodeRunnerHost("map-budget", { engineWorkers: 1 });
  });
  afterAll(() => host.engines.release());
  afterEach(() => vi.restoreAllMocks());

  it("bounds the mapper: the model being built is sealed as it stands, with a WARNING", async () => {
    const service = memoryService();
    const runner = new Runner(service.client, host, { stages: ["map"] });
    // Without a budget the scene maps whole.
    expect(await runner.runTask(await mapLease(service, "FULL"))).toBe("completed");
    expect(service.ended.get("FULL")!.completed!.artifacts[0]!.summary.num_reg_images).toBe(6);
    expect(budgetWarnings(service.events.get("FULL"))).toHaveLength(0);

    // A clock that moves 4 s at each look: a 10 s budget is spent after the model's start and
    // its first registration, whatever the machine's speed.
    let now = Date.now();
    vi.spyOn(Date, "now").mockImplementation(() => (now += 4000));
    expect(await runner.runTask(await mapLease(service, "BOUNDED", undefined, { max_runtime_seconds: 10 }))).toBe("completed");
    const summary = service.ended.get("BOUNDED")!.completed!.artifacts[0]!.summary;
    expect(summary.num_reg_images).toBeGreaterThanOrEqual(2);
    expect(summary.num_reg_images).toBeLessThan(6);
    expect(summary.num_models).toBe(1);
    expect(budgetWarnings(service.events.get("BOUNDED"))).toHaveLength(1);
  });

  it("a resumed task counts the time spent before its checkpoint", async () => {
    const service = memoryService();
    const runner = new Runner(service.client, host, { stages: ["map"] });
    // A first attempt stores a checkpoint every two registrations, with the time spent so far.
    const spec = { snapshot_frames_freq: 2, max_runtime_seconds: 600 };
    expect(await runner.runTask(await mapLease(service, "FIRST", undefined, spec))).toBe("completed");
    const checkpoint = service.checkpoints.get("FIRST")![0]!;
    expect(checkpoint.summary.num_registrations).toBe(2);
    const spent = checkpoint.summary[MAPPING_SECONDS];
    expect(typeof spent).toBe("number");
    expect(spent as number).toBeGreaterThanOrEqual(0);
    expect(spent as number).toBeLessThan(600);

    // Resumed with budget left: it maps the rest of the scene.
    expect(await runner.runTask(await mapLease(service, "RESUMED", undefined, spec, checkpoint))).toBe("completed");
    expect(service.ended.get("RESUMED")!.completed!.artifacts[0]!.summary.num_reg_images).toBe(6);
    expect(budgetWarnings(service.events.get("RESUMED"))).toHaveLength(0);

    // The same checkpoint after 601 s of mapping: the budget is spent, the model is sealed as it
    // stands (the two registered photos, and what the finishing step adds) with the WARNING.
    const late = { ...checkpoint, summary: { ...checkpoint.summary, [MAPPING_SECONDS]: 601 } };
    expect(await runner.runTask(await mapLease(service, "LATE", undefined, spec, late))).toBe("completed");
    expect(service.ended.get("LATE")!.completed!.artifacts[0]!.summary.num_reg_images).toBeLessThan(6);
    expect(budgetWarnings(service.events.get("LATE"))).toHaveLength(1);
  });
});

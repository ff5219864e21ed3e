import { describe, expect, it } from "vitest";
import { EventQueue } from "./task-context";

describe("runner event queue", () => {
  it("keeps the newest progress per phase with an items-per-second rate", () => {
    let t = 0;
    const q = new EventQueue(() => t);
    q.progress("feature_extraction", 0, 10);
    t = 2000;
    q.progress("feature_extraction", 4, 10);
    q.push({ kind: "metric", key: "num_features", value: 8000 });
    const events = q.take();
    expect(events).toEqual([
      { kind: "phase_progress", phase: "feature_extraction", current: 4, total: 10, rate: 2 },
      { kind: "metric", key: "num_features", value: 8000 },
    ]);
    expect(q.size).toBe(0);
  });
});

/**
 * What a runner sends while it computes a shard (runners.md "Shards"): the service counts a shard's
 * progress itself and drops the runner's, so none is sent, and with nothing queued the lease is held
 * every few seconds (SHARD_HEARTBEAT_MS) rather than every second as a whole task's is; events the
 * executor queues (a log line, a sub-phase's progress) still go within a second. Issue 17: the posts of
 * a second per lease cost the service and the lane more than the shards' results.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Lease, RunnerClient } from "../../client/index";
import { Runner, type RunnerHost } from "./runner";
import type { TaskContext } from "./task-context";
import { KeepAlive } from "./keep-alive/keep-alive";

/** The executor runs 12 s (fake time), reporting its phase's progress each second and one sub-phase's once, at 6 s. */
vi.mock("./executors", () => ({
  EXECUTORS: {
    extract: async (ctx: TaskContext) => {
      for (let s = 1; s <= 12; s += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        ctx.progress(s, 12);
        if (s === 6) ctx.progress(1, 1, "matching");
      }
      ctx.log("INFO", "done");
      return { artifacts: [], result: null };
    },
  },
}));

const leaseOf = (shard: boolean) =>
  ({
    lease_id: "L",
    task: { task_id: "T", job_id: "J", kind: "extract", phase: "feature_extraction", attempt: 1, params: {} },
    ...(shard ? { shard: { shard_id: "S", items: [] } } : {}),
  }) as unknown as Lease;

function service() {
  const posts: { at: number; events: { kind: string; phase?: string }[] }[] = [];
  const client = {
    heartbeat: async () => {
      posts.push({ at: Date.now(), events: [] });
      return { directive: "continue" };
    },
    postEvents: async (_lease: string, events: { kind: string; phase?: string }[]) => {
      posts.push({ at: Date.now(), events });
      return { directive: "continue" };
    },
    complete: async () => null,
  } as unknown as RunnerClient;
  return { posts, client };
}

const host = { name: "t", runtimeVersions: {}, abilities: {}, engines: { release: () => undefined } } as unknown as RunnerHost;

describe("posts while a lease computes", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  const run = async (shard: boolean) => {
    const { posts, client } = service();
    const runner = new Runner(client, host);
    runner.resource = { runner_id: "R", heartbeat_interval_seconds: 10 } as Runner["resource"];
    const done = runner.runTask(leaseOf(shard));
    await vi.advanceTimersByTimeAsync(13_000);
    expect(await done).toBe("completed");
    return posts;
  };

  it("a shard lease: no progress of its own phase, a bare heartbeat every 5 s, queued events within a second", async () => {
    const posts = await run(true);
    const events = posts.flatMap((p) => p.events);
    expect(events.filter((e) => e.kind === "phase_progress" && e.phase === "feature_extraction")).toEqual([]);
    // The sub-phase's progress and the log line went; the first within a second of being queued.
    expect(events.map((e) => e.kind)).toEqual(["phase_progress", "log_line"]);
    // 12 s of work: heartbeats at 5 and 10 s, the sub-phase's progress at 6 s, the log line before completing.
    expect(posts.length).toBe(4);
  });

  it("a whole task's lease is held and its progress sent every second", async () => {
    const posts = await run(false);
    expect(posts.length).toBeGreaterThanOrEqual(12);
    expect(
      posts.flatMap((p) => p.events).filter((e) => e.kind === "phase_progress" && e.phase === "feature_extraction").length,
    ).toBeGreaterThanOrEqual(11);
  });

  it("the keep-alive holds a shard lease every 5 s, a whole task's every second", async () => {
    const hold = vi.spyOn(KeepAlive.prototype, "hold").mockImplementation(() => {});
    const { client } = service();
    Object.assign(client, { target: () => ({ baseUrl: "http://service", authorization: null }) });
    const runner = new Runner(client, { ...host, keepAlive: () => ({}) as never } as RunnerHost);
    runner.resource = { runner_id: "R", heartbeat_interval_seconds: 10 } as Runner["resource"];
    for (const shard of [true, false]) {
      const done = runner.runTask(leaseOf(shard));
      await vi.advanceTimersByTimeAsync(13_000);
      await done;
    }
    expect(hold.mock.calls.map((c) => c[2])).toEqual([5000, 1000]);
    hold.mockRestore();
  });
});

/**
 * The runner asks for its next work in the request that completes a task (`x-lease_next`,
 * worker/routes/runners.md "Batching"): the lease a completion brings is run without another lease
 * request, and a runner stopping meanwhile gives it back at once instead of letting it expire.
 * (The service side: worker/routes/shards.test.ts.)
 */
import { describe, expect, it, vi } from "vitest";
import type { Lease, RunnerClient } from "../../client/index";
import { Runner, type RunnerHost } from "./runner";
import { RUNNER_PROTOCOL_VERSION } from "../../protocol";

vi.mock("./executors", () => ({ EXECUTORS: { extract: async () => ({ artifacts: [], result: null }) } }));

const leaseOf = (id: string) =>
  ({
    lease_id: id,
    task: { task_id: `T-${id}`, job_id: "J", kind: "extract", phase: "feature_extraction", attempt: 1, params: {} },
  }) as unknown as Lease;

/** A service handing out `first` on the first lease request, then `after` to each completion in turn. */
function service(first: Lease, after: Record<string, Lease | null>, onComplete?: () => void) {
  const calls: string[] = [];
  const client = {
    serviceVersion: async () => ({ "x-runner_protocol": RUNNER_PROTOCOL_VERSION }),
    register: async () => ({ runner_id: "R", rv_id: "v", service_rv_id: "v", heartbeat_interval_seconds: 10 }),
    lease: async () => {
      calls.push("lease");
      return calls.filter((c) => c === "lease").length === 1 ? first : null;
    },
    heartbeat: async () => ({ directive: "continue" }),
    postEvents: async () => ({ directive: "continue" }),
    complete: async (leaseId: string, _outputs: unknown, o: { leaseNext?: boolean } = {}) => {
      calls.push(`complete ${leaseId}${o.leaseNext ? " +next" : ""}`);
      onComplete?.();
      return after[leaseId] ?? null;
    },
    release: async (leaseId: string) => void calls.push(`release ${leaseId}`),
  } as unknown as RunnerClient;
  return { calls, client };
}

const host = { name: "t", runtimeVersions: {}, abilities: {}, engines: { release: () => undefined } } as unknown as RunnerHost;

describe("a completion that brings the next lease", () => {
  it("runs it without asking again; asks once the completions bring none", async () => {
    const { calls, client } = service(leaseOf("L1"), { L1: leaseOf("L2"), L2: leaseOf("L3") });
    expect(await new Runner(client, host).drain()).toBe(3);
    expect(calls).toEqual(["lease", "complete L1 +next", "complete L2 +next", "complete L3 +next", "lease"]);
  });

  it("a runner stopped while its completion brought a lease releases that lease at once", async () => {
    let runner: Runner | null = null;
    // The stop lands while the completion (sent with +next: the runner was running) is under way.
    const { calls, client } = service(leaseOf("L1"), { L1: leaseOf("L2") }, () => runner!.stop());
    runner = new Runner(client, host);
    await runner.run();
    expect(calls).toEqual(["lease", "complete L1 +next", "release L2"]);
  });
});

describe("a runner with several engine lanes (x-max_leases, :complete_leases)", () => {
  it("asks for one lease per lane, runs them side by side, completes them in one request that brings the next ones", async () => {
    const calls: string[] = [];
    const batches = [[leaseOf("L1"), leaseOf("L2")], []];
    const client = {
      serviceVersion: async () => ({ "x-runner_protocol": RUNNER_PROTOCOL_VERSION }),
      register: async () => ({ runner_id: "R", rv_id: "v", service_rv_id: "v", heartbeat_interval_seconds: 10 }),
      leaseBatch: async (_rid: string, _wait: number, max: number) => {
        calls.push(`lease x${max}`);
        return batches.shift() ?? [];
      },
      heartbeat: async () => ({ directive: "continue" }),
      postEvents: async () => ({ directive: "continue" }),
      completeLeases: async (_rid: string, done: { lease_id: string }[], o: { leaseNext?: boolean; maxLeases?: number }) => {
        calls.push(`complete ${done.map((d) => d.lease_id).join(",")}${o.leaseNext ? ` +next x${o.maxLeases}` : ""}`);
        // The first completion brings L4 along; the second, nothing.
        return { problems: done.map(() => null), next: done[0]!.lease_id === "L1" ? [leaseOf("L4")] : [] };
      },
    } as unknown as RunnerClient;
    const lanes = { ...host, engines: { size: 2, release: () => undefined } } as unknown as RunnerHost;
    expect(await new Runner(client, lanes).drain()).toBe(3);
    expect(calls).toEqual(["lease x2", "complete L1,L2 +next x2", "complete L4 +next x2", "lease x2"]);
  });
});

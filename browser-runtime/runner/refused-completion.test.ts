/**
 * A completion the service refuses ends the lease's run as refused, never as completed: a refusal
 * (422: the task failed, or a volunteer's shard went back to the queue; 404, 409: the lease is gone)
 * has ended the lease already, so nothing more is sent for it; a completion that fails as a whole
 * (the service or the network) leaves the leases held, and the runner `:fail`s each at once rather
 * than letting it lapse. The service side: worker/routes/validation.test.ts ("trusted results are
 * checked too"), whose refused leases are over at once.
 */
import { describe, expect, it, vi } from "vitest";
import { type Lease, type Problem, ProblemError, type RunnerClient } from "../../client/index";
import { RUNNER_PROTOCOL_VERSION } from "../../protocol";
import { Runner, type RunnerHost } from "./runner";

vi.mock("./executors", () => ({ EXECUTORS: { extract: async () => ({ artifacts: [], result: null }) } }));

const leaseOf = (id: string) =>
  ({
    lease_id: id,
    task: { task_id: `T-${id}`, job_id: "J", kind: "extract", phase: "feature_extraction", attempt: 1, params: {} },
    shard: { shard_id: `S-${id}`, index: 0, count: 2, items: [] },
  }) as unknown as Lease;

const problem = (status: number, detail: string): Problem => ({
  type: "http://x/errors/validation",
  title: "Validation failed",
  status,
  detail,
  instance: "/",
});

/** A service leasing `batch` once; `completeLeases` answers each lease's problem (or throws); every call recorded. */
function service(batch: Lease[], completeLeases: (ids: string[]) => (Problem | null)[], complete?: () => never) {
  const calls: string[] = [];
  const failures: Record<string, unknown>[] = [];
  const batches = [batch];
  const client = {
    serviceVersion: async () => ({ "x-runner_protocol": RUNNER_PROTOCOL_VERSION }),
    register: async () => ({ runner_id: "R", rv_id: "v", service_rv_id: "v", heartbeat_interval_seconds: 10 }),
    lease: async () => batches.shift()?.[0] ?? null,
    leaseBatch: async () => batches.shift() ?? [],
    heartbeat: async () => ({ directive: "continue" }),
    postEvents: async () => ({ directive: "continue" }),
    complete: async (leaseId: string) => {
      calls.push(`complete ${leaseId}`);
      return complete ? complete() : null;
    },
    completeLeases: async (_rid: string, done: { lease_id: string }[]) => {
      const ids = done.map((d) => d.lease_id);
      calls.push(`complete ${ids.join(",")}`);
      return { problems: completeLeases(ids), next: [] };
    },
    fail: async (leaseId: string, error: Record<string, unknown>) => {
      calls.push(`fail ${leaseId}`);
      failures.push(error);
    },
  } as unknown as RunnerClient;
  return { calls, failures, client };
}

const host = (lanes: number) =>
  ({ name: "t", runtimeVersions: {}, abilities: {}, engines: { size: lanes, release: () => undefined } }) as unknown as RunnerHost;

async function drain(client: RunnerClient, lanes: number) {
  const log: string[] = [];
  await new Runner(client, host(lanes), { onLog: (line) => log.push(line) }).drain();
  return log;
}

describe("a refused completion", () => {
  it("in a batch (422): that lease's run ends refused, nothing more is sent for it; the other lease completed", async () => {
    const { calls, client } = service([leaseOf("L1"), leaseOf("L2")], (ids) =>
      ids.map((id) => (id === "L2" ? problem(422, "the file has 3 keypoints, the summary says 4") : null)),
    );
    const log = await drain(client, 2);
    expect(calls).toEqual(["complete L1,L2"]);
    expect(log.filter((l) => /completed|refused|failed/.test(l)).sort()).toEqual([
      "[runner t] completed extract T-L1",
      "[runner t] the completion of extract T-L2 was refused: Validation failed: the file has 3 keypoints, the summary says 4",
    ]);
  });

  it.each([404, 409, 422])("by :complete (%i): ends refused, not failed again", async (status) => {
    const { calls, client } = service(
      [leaseOf("L1")],
      () => [],
      () => {
        throw new ProblemError(problem(status, "refused"));
      },
    );
    const log = await drain(client, 1);
    expect(calls).toEqual(["complete L1"]);
    expect(log).toContain("[runner t] the completion of extract T-L1 was refused: Validation failed: refused");
  });

  it("a batch completion that fails as a whole (503) leaves the leases held: each is failed at once, with the problem", async () => {
    const unavailable = { ...problem(503, "try again"), title: "Service unavailable" };
    const { calls, failures, client } = service([leaseOf("L1"), leaseOf("L2")], () => {
      throw new ProblemError(unavailable);
    });
    await drain(client, 2);
    expect(calls.sort()).toEqual(["complete L1,L2", "fail L1", "fail L2"]);
    expect(failures[0]).toEqual({
      error_class: "ProblemError",
      message: "Service unavailable: try again",
      detail: { problem: unavailable },
    });
  });
});

/**
 * An idle runner is quiet (issue 17): while nothing is ready it long-polls (`wait=25`, the service
 * holds the request and answers 204), logs nothing and reports idle once, however long it waits.
 */
import { describe, expect, it } from "vitest";
import type { RunnerClient } from "../../client/index";
import { Runner, type RunnerHost, type RunnerStatus } from "./runner";
import { RUNNER_PROTOCOL_VERSION } from "../../protocol";

describe("an idle runner", () => {
  it("asks with wait=25 and logs nothing while no work comes", async () => {
    const waits: number[] = [];
    let runner: Runner | null = null;
    const client = {
      serviceVersion: async () => ({ "x-runner_protocol": RUNNER_PROTOCOL_VERSION }),
      register: async () => ({ runner_id: "R", rv_id: "v", service_rv_id: "v" }),
      lease: async (_id: string, wait: number) => {
        waits.push(wait);
        if (waits.length === 5) runner!.stop();
        return null; // the service's 204 once the wait is over
      },
    } as unknown as RunnerClient;
    const host = { name: "t", runtimeVersions: {}, abilities: {}, engines: { release: () => undefined } } as unknown as RunnerHost;
    const logs: string[] = [];
    const statuses: RunnerStatus[] = [];
    runner = new Runner(client, host, { onLog: (l) => logs.push(l), onStatus: (s) => statuses.push(s) });
    await runner.register();
    logs.length = 0;
    await runner.run();
    expect(waits).toEqual([25, 25, 25, 25, 25]);
    expect(logs).toEqual([]);
    expect(statuses).toEqual([{ state: "idle" }, { state: "stopped" }]);
  });
});

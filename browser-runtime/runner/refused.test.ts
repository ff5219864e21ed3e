/**
 * A runner whose credential the service refuses (a revoked token: 401; a token quarantined for a
 * wrong result: 403, runners.md "Trust") stops leasing and says why, instead of asking again forever.
 */
import { describe, expect, it } from "vitest";
import { ProblemError, type RunnerClient } from "../../client/index";
import { RUNNER_PROTOCOL_VERSION } from "../../protocol";
import { Runner, type RunnerHost, type RunnerStatus } from "./runner";

describe("a refused credential", () => {
  it.each([401, 403])("%i on a lease stops the runner with the service's reason", async (status) => {
    let leases = 0;
    const client = {
      serviceVersion: async () => ({ "x-runner_protocol": RUNNER_PROTOCOL_VERSION }),
      register: async () => ({ runner_id: "R", rv_id: "v", service_rv_id: "v" }),
      lease: async () => {
        leases++;
        throw new ProblemError({
          type: "http://x/errors/auth",
          title: "Authentication required",
          status,
          detail: "this runner token is quarantined since then: reasons",
          instance: "/",
        });
      },
    } as unknown as RunnerClient;
    const host = { name: "test", runtimeVersions: {}, abilities: {}, engines: { release: () => undefined } } as unknown as RunnerHost;
    const statuses: RunnerStatus[] = [];
    await new Runner(client, host, { onStatus: (s) => statuses.push(s) }).run();
    expect(leases).toBe(1);
    expect(statuses).toEqual([
      { state: "stopped", refused: "Authentication required: this runner token is quarantined since then: reasons" },
    ]);
  });
});

/**
 * A small run of the load benchmark (issue 22, Load; `npm run bench -- load` is the full one):
 * concurrent chunked uploads of real photos, SSE and WebSocket clients on one running job, read
 * routes under closed-loop load and runners leasing at once, on the local stack. Asserts what must
 * hold at any size (every hash right, no event lost or duplicated for any client, no read failing,
 * every job done), never a speed.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadFailures, runLoad } from "../../scripts/load";
import { type Server, startServer } from "../conformance/server";

let server: Server;
beforeAll(async () => {
  server = await startServer({ SVC_TEST_CAPABILITIES: "features.extract.sift", SVC_LEASE_TTL_SECONDS: "600" });
});
afterAll(() => server?.stop());

it("many clients at once: uploads hash right, every SSE and WebSocket client gets each event once, reads answer 2xx, every leased job succeeds", async () => {
  const r = await runLoad(server.base, {
    uploads: 6,
    chunkKib: 256,
    sse: 12,
    ws: 6,
    events: 10,
    readSeconds: 2,
    readConnections: 6,
    runners: 3,
    leaseJobs: 4,
  });
  expect(loadFailures(r)).toEqual([]);
  expect(r.fanout.connected_before_events).toBe(18);
  expect(r.reads.requests).toBeGreaterThan(0);
});

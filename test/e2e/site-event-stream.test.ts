/**
 * The site's job event stream (site/src/jobs/event-stream.ts, on the client's client/events.ts)
 * against a server that drops the connection mid-job: it reconnects with `Last-Event-ID` set to the last event it saw (spec 4.8,
 * 6), delivers every event once and in order, surfaces an unknown kind instead of failing
 * (6.1), and ends after the terminal job_status.
 */
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JobEventStream, type StreamEvent } from "../../site/src/jobs/event-stream";

const JOB = "01JOBJOBJOBJOBJOBJOBJOBJOB";
const event = (event_id: number, body: Record<string, unknown>) => ({
  schema_version: 1,
  event_id,
  seq: event_id,
  ts: "2026-01-01T00:00:00.000Z",
  job_id: JOB,
  task_id: null,
  ...body,
});
const EVENTS = [
  event(1, { kind: "phase_started", phase: "feature_extraction" }),
  event(2, { kind: "phase_progress", phase: "feature_extraction", current: 1, total: 2, rate: null }),
  event(3, { kind: "a_kind_from_the_future", anything: true }),
  event(4, { kind: "job_status", status: "succeeded", error_class: null }),
];

const seenLastEventIds: (string | undefined)[] = [];
let base = "";
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const after = Number(req.headers["last-event-id"] ?? 0);
  seenLastEventIds.push(req.headers["last-event-id"] as string | undefined);
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  res.write(": keep-alive\n\n");
  // The first connection drops after two events; the next one carries the rest.
  const batch = EVENTS.filter((e) => e.event_id > after).slice(0, after === 0 ? 2 : undefined);
  for (const e of batch) res.write(`id: ${e.event_id}\ndata: ${JSON.stringify(e)}\n\n`);
  res.end();
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The site's client speaks to the page's own origin and reads its API key from localStorage.
  Object.assign(globalThis, { location: new URL(base), localStorage: { getItem: () => null } });
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it("resumes after a dropped connection from the last event id and ends at the terminal status", async () => {
  const received: StreamEvent[] = [];
  const states: string[] = [];
  await new Promise<void>((resolve) => {
    new JobEventStream(JOB, 0, {
      onEvent: (e) => received.push(e),
      onState: (s) => {
        states.push(s);
        if (s === "ended") resolve();
      },
    });
  });
  expect(received.map((e) => (e.known ? e.event.event_id : e.id))).toEqual([1, 2, 3, 4]);
  expect(received[2]).toMatchObject({ known: false, kind: "a_kind_from_the_future" });
  expect(seenLastEventIds).toEqual([undefined, "2"]);
  expect(states).toEqual(["live", "reconnecting", "live", "ended"]);
});

/**
 * @module A job's events (spec 6) as an async iterable, over SSE (`GET /v1/jobs/{jid}/events`)
 * or WebSocket (`/ws/v1/jobs/{jid}`), resumed after any drop from the last event received
 * (`Last-Event-ID`, `?last_event_id` on a WebSocket), until the server closes the stream after
 * the job's terminal `job_status` (spec 6).
 * SSE is read with fetch rather than EventSource: EventSource can neither send `Authorization`
 * (api_key mode, spec 5) nor choose the `Last-Event-ID` of a fresh connection. Frames are parsed
 * by eventsource-parser (the WHATWG event-stream format).
 */
import { createParser } from "eventsource-parser";
import { ProblemError, type Transport, sleep } from "./http.js";
import type { components } from "./schema.js";

export type ProgressEvent = components["schemas"]["ProgressEvent"];
export type JobStatus = components["schemas"]["Job"]["status"];
export type Phase = components["schemas"]["Lease"]["task"]["phase"];
export type TaskKind = components["schemas"]["Task"]["kind"];

/** An event of a kind this client does not know: surfaced, never fatal (spec 6 rule 1). */
export interface UnknownEvent {
  kind: string;
  event_id: number;
  [field: string]: unknown;
}

export type JobEvent = ProgressEvent | UnknownEvent;

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set<JobStatus>(["succeeded", "failed", "cancelled", "cancelled_dirty"]);

/** The event that ends a job's stream: its `job_status` of a terminal status. */
export function isTerminal(e: JobEvent): boolean {
  return e.kind === "job_status" && TERMINAL_STATUSES.has((e as { status: JobStatus }).status);
}

export type StreamState = "live" | "reconnecting";

export interface EventStreamOptions {
  /** Events after this `event_id` (0: from the start of the job's log). */
  after?: number;
  signal?: AbortSignal;
  /** Connect again after a drop (default true); false ends the iteration where the stream ends. */
  reconnect?: boolean;
  /** Connection state, for a UI: live, or reconnecting (with why). */
  onState?(state: StreamState, detail?: string): void;
  /** SSE comments (the server's `: keep-alive` while the job is idle). */
  onComment?(text: string): void;
}

const MAX_BACKOFF_MS = 15_000;

/** One connection's events, pushed by the transport as they arrive; `end` when it closes. */
interface Connection {
  next(): Promise<JobEvent[] | null>;
  close(): void;
}

/**
 * Follows a stream across connections: each connection resumes after the last event seen; an
 * answer that will not heal (a 4xx other than 429: unknown job, bad key) is thrown; anything
 * else (network, 5xx, a close before the terminal event) is retried with backoff.
 */
async function* follow(
  connect: (after: number) => Promise<Connection>,
  nothingAfter: (after: number) => Promise<boolean>,
  o: EventStreamOptions,
): AsyncGenerator<JobEvent> {
  let after = o.after ?? 0;
  for (let failures = 0; ;) {
    o.signal?.throwIfAborted();
    let connection: Connection | null = null;
    try {
      connection = await connect(after);
      o.onState?.("live");
      failures = 0;
      // A terminal status ends the stream when the server then closes it: a job resumed after it
      // ended has its old terminal status in the log it replays, followed by what came after.
      let ended = false;
      let received = 0;
      for (let batch = await connection.next(); batch; batch = await connection.next()) {
        for (const e of batch) {
          if (e.event_id > after) after = e.event_id;
          received++;
          yield e;
          if (e.kind === "job_status") ended = isTerminal(e);
        }
      }
      if (ended || o.reconnect === false) return;
      // Resumed after an ended job's last event, the server replays nothing and closes: only the
      // job's status and cursor tell that from a stream cut short.
      if (received === 0 && (await nothingAfter(after))) return;
      o.onState?.("reconnecting", "the server closed the stream");
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason;
      if (e instanceof ProblemError && e.status >= 400 && e.status < 500 && e.status !== 429) throw e;
      if (o.reconnect === false) throw e;
      failures++;
      o.onState?.("reconnecting", e instanceof Error ? e.message : String(e));
    } finally {
      connection?.close();
    }
    await sleep(Math.min(MAX_BACKOFF_MS, 250 * 2 ** failures), o.signal);
  }
}

function parseEvent(data: string, id: string | undefined): JobEvent | null {
  let raw: unknown;
  try {
    raw = JSON.parse(data);
  } catch {
    return null; // not JSON: nothing a client could use
  }
  if (!raw || typeof raw !== "object") return null;
  const e = raw as UnknownEvent;
  e.event_id = Number(id ?? e.event_id);
  if (typeof e.kind !== "string") e.kind = "unknown";
  return e;
}

/**
 * Whether the job has ended with no event after `after` (a stream that closed with nothing new then
 * has nothing to wait for). The progress view reads status and cursor together (4.8): the job's
 * status alone would end a stream cut short just before the job ended, losing its last events.
 */
function nothingAfter(transport: Transport, jobId: string, signal?: AbortSignal): (after: number) => Promise<boolean> {
  return async (after) => {
    const res = await transport.fetch(`/v1/jobs/${encodeURIComponent(jobId)}/progress`, { signal });
    const view = (await res.json()) as { status: JobStatus; latest_event_id: number };
    return TERMINAL_STATUSES.has(view.status) && view.latest_event_id <= after;
  };
}

/** The SSE stream of a job (4.8). */
export function sseEvents(transport: Transport, jobId: string, o: EventStreamOptions = {}): AsyncGenerator<JobEvent> {
  return follow(
    async (after) => {
      const abort = new AbortController();
      const unlink = link(o.signal, abort);
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      if (after > 0) headers["Last-Event-ID"] = String(after);
      const res = await transport.fetch(`/v1/jobs/${encodeURIComponent(jobId)}/events`, { headers, signal: abort.signal });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let batch: JobEvent[] = [];
      const parser = createParser({
        onEvent(message) {
          const e = parseEvent(message.data, message.id);
          if (e) batch.push(e);
        },
        onComment: (text) => o.onComment?.(text.trim()),
      });
      return {
        async next() {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return null;
            parser.feed(value);
            if (batch.length > 0) {
              const out = batch;
              batch = [];
              return out;
            }
          }
        },
        close() {
          unlink();
          abort.abort();
          reader.cancel().catch(() => {});
        },
      };
    },
    nothingAfter(transport, jobId, o.signal),
    o,
  );
}

/** Opens a WebSocket; the default is the platform's, which cannot send `Authorization` (a browser's never can). */
export type WebSocketFactory = (url: string, headers: Record<string, string>) => WebSocket;

/** The WebSocket stream of a job (6): one JSON text frame per event. */
export function socketEvents(
  transport: Transport,
  jobId: string,
  o: EventStreamOptions & { webSocket?: WebSocketFactory } = {},
): AsyncGenerator<JobEvent> {
  const open = o.webSocket ?? ((url: string) => new WebSocket(url));
  return follow(
    async (after) => {
      const url = new URL(transport.url(`/ws/v1/jobs/${encodeURIComponent(jobId)}`), globalThis.location?.href);
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      if (after > 0) url.searchParams.set("last_event_id", String(after));
      const auth = transport.authorization();
      const ws = open(url.href, auth ? { Authorization: auth } : {});
      const queue: JobEvent[] = [];
      let closed: Error | "clean" | null = null;
      let wake: (() => void) | null = null;
      const poke = () => {
        wake?.();
        wake = null;
      };
      ws.addEventListener("message", (m) => {
        const e = typeof m.data === "string" ? parseEvent(m.data, undefined) : null;
        if (e) queue.push(e);
        poke();
      });
      ws.addEventListener("close", (c) => {
        closed = c.code === 1000 ? "clean" : new Error(`WebSocket closed (${c.code}${c.reason ? ` ${c.reason}` : ""})`);
        poke();
      });
      ws.addEventListener("error", () => {
        closed ??= new Error("WebSocket error");
        poke();
      });
      const abort = () => ws.close(1000);
      o.signal?.addEventListener("abort", abort, { once: true });
      await new Promise<void>((resolve, reject) => {
        ws.addEventListener("open", () => resolve(), { once: true });
        ws.addEventListener("close", () => reject(closed instanceof Error ? closed : new Error("WebSocket refused")), { once: true });
      });
      return {
        async next() {
          while (queue.length === 0) {
            if (closed === "clean") return null;
            if (closed) throw closed;
            await new Promise<void>((r) => (wake = r));
          }
          return queue.splice(0);
        },
        close() {
          o.signal?.removeEventListener("abort", abort);
          if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(1000);
        },
      };
    },
    nothingAfter(transport, jobId, o.signal),
    o,
  );
}

/** Aborts `controller` when `signal` does; answers the unlinking. */
function link(signal: AbortSignal | undefined, controller: AbortController): () => void {
  if (!signal) return () => {};
  if (signal.aborted) controller.abort(signal.reason);
  const abort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", abort, { once: true });
  return () => signal.removeEventListener("abort", abort);
}

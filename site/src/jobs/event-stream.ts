/**
 * @module A job's SSE stream (spec 4.8, 6), resumed with `Last-Event-ID` after any drop. Read
 * with fetch rather than EventSource: EventSource cannot send `Authorization` (api_key mode,
 * spec 5) nor choose the `Last-Event-ID` of a fresh connection, and both are needed here. The
 * parser follows the WHATWG event-stream format (id/data fields, comments, blank-line dispatch).
 */
import { ProgressEvent } from "../../../protocol/events";
import { TERMINAL_STATUSES } from "../../../protocol/events";
import { ProblemError, request } from "../api/client";

/** A validated event, or one of a kind this client does not know (6.1: surfaced, never fatal). */
export type StreamEvent = { known: true; event: ProgressEvent } | { known: false; id: number; kind: string; raw: unknown };

export interface StreamHandlers {
  onEvent(e: StreamEvent): void;
  /** Connection state for the UI: live, reconnecting (with why), ended (terminal status), failed. */
  onState(state: "live" | "reconnecting" | "ended" | "failed", detail?: string): void;
}

const MAX_BACKOFF_MS = 15_000;

export class JobEventStream {
  private abort = new AbortController();
  private lastEventId: number;
  private ended = false;

  constructor(
    private readonly jobId: string,
    after: number,
    private readonly handlers: StreamHandlers,
  ) {
    this.lastEventId = after;
    void this.run();
  }

  close(): void {
    this.ended = true;
    this.abort.abort();
  }

  private async run(): Promise<void> {
    for (let failures = 0; !this.ended; ) {
      try {
        const res = await request(`/v1/jobs/${this.jobId}/events`, {
          headers: { Accept: "text/event-stream", ...(this.lastEventId > 0 ? { "Last-Event-ID": String(this.lastEventId) } : {}) },
          signal: this.abort.signal,
        });
        this.handlers.onState("live");
        failures = 0;
        await this.read(res);
        if (this.ended) return;
        this.handlers.onState("reconnecting", "the server closed the stream");
      } catch (e) {
        if (this.ended) return;
        // 4xx other than 429 will not heal by retrying (unknown job, bad key).
        if (e instanceof ProblemError && e.status >= 400 && e.status < 500 && e.status !== 429) {
          this.handlers.onState("failed", e.message);
          return;
        }
        failures++;
        this.handlers.onState("reconnecting", e instanceof Error ? e.message : String(e));
      }
      await new Promise((r) => setTimeout(r, Math.min(MAX_BACKOFF_MS, 500 * 2 ** failures)));
    }
  }

  private async read(res: Response): Promise<void> {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let data: string[] = [];
    let id: string | null = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) this.dispatch(id, data.join("\n"));
          data = [];
          id = null;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(val);
        else if (field === "id") id = val;
      }
    }
  }

  private dispatch(id: string | null, data: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(data);
    } catch {
      return; // not JSON: nothing this client could show
    }
    const eventId = Number(id ?? (raw as { event_id?: unknown }).event_id);
    if (Number.isFinite(eventId) && eventId > this.lastEventId) this.lastEventId = eventId;
    const parsed = ProgressEvent.safeParse(raw);
    if (!parsed.success) {
      this.handlers.onEvent({ known: false, id: eventId, kind: String((raw as { kind?: unknown }).kind ?? "unknown"), raw });
      return;
    }
    this.handlers.onEvent({ known: true, event: parsed.data });
    if (parsed.data.kind === "job_status" && TERMINAL_STATUSES.has(parsed.data.status)) {
      this.ended = true;
      this.abort.abort();
      this.handlers.onState("ended");
    }
  }
}

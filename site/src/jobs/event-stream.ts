/**
 * @module A job's SSE stream (spec 4.8, 6) for the live view: the client's event stream
 * (client/events.ts: read with fetch so it can send `Authorization`, resumed with `Last-Event-ID`
 * after any drop, ended by the terminal job_status), each event validated against the protocol's
 * schema; one of a kind this page does not know is surfaced, never fatal (6.1).
 */
import { ProgressEvent } from "../../../protocol/events";
import { api, describeError } from "../api/client";

/** A validated event, or one of a kind this client does not know (6.1: surfaced, never fatal). */
export type StreamEvent = { known: true; event: ProgressEvent } | { known: false; id: number; kind: string; raw: unknown };

export interface StreamHandlers {
  onEvent(e: StreamEvent): void;
  /** Connection state for the UI: live, reconnecting (with why), ended (terminal status), failed. */
  onState(state: "live" | "reconnecting" | "ended" | "failed", detail?: string): void;
}

export class JobEventStream {
  private readonly abort = new AbortController();

  /** Starts following the job's events after `after` (0: from the start of its log). */
  constructor(jobId: string, after: number, handlers: StreamHandlers) {
    void this.run(jobId, after, handlers);
  }

  close(): void {
    this.abort.abort();
  }

  private async run(jobId: string, after: number, handlers: StreamHandlers): Promise<void> {
    const { signal } = this.abort;
    try {
      for await (const e of api().events(jobId, { after, signal, onState: (state, detail) => handlers.onState(state, detail) })) {
        const parsed = ProgressEvent.safeParse(e);
        handlers.onEvent(parsed.success ? { known: true, event: parsed.data } : { known: false, id: e.event_id, kind: e.kind, raw: e });
      }
      if (!signal.aborted) handlers.onState("ended");
    } catch (e) {
      // Closed by the page, or an answer that will not heal by retrying (unknown job, bad key).
      if (!signal.aborted) handlers.onState("failed", describeError(e));
    }
  }
}

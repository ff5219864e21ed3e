/**
 * @module Live fan-out of the job's events (spec 6): SSE streams, held by this object instance,
 * and hibernatable WebSockets. Each starts with the backlog a client resumes after
 * (events.ts `openStream`), then new events follow until the job ends.
 */
import type { JobStatus } from "../../../protocol";

const encoder = new TextEncoder();
const sseFrame = (eventId: number, body: string) => encoder.encode(`id: ${eventId}\ndata: ${body}\n\n`);

export type Backlog = { event_id: number; body: string }[];

interface SseSubscriber {
  controller: ReadableStreamDefaultController<Uint8Array>;
  keepAlive: ReturnType<typeof setInterval>;
}

export class Fanout {
  private readonly streams = new Set<SseSubscriber>();

  constructor(private readonly state: DurableObjectState) {}

  /** Sends one event to every stream and socket; `closing` (a terminal job status) then ends them. */
  broadcast(eventId: number, text: string, closing: JobStatus | null): void {
    for (const s of this.streams) {
      try {
        s.controller.enqueue(sseFrame(eventId, text));
        if (closing) this.close(s);
      } catch {
        this.close(s);
      }
    }
    for (const ws of this.state.getWebSockets()) {
      try {
        ws.send(text);
        if (closing) ws.close(1000, `job ${closing}`);
      } catch {
        // A socket closing concurrently: its close handler cleans up.
      }
    }
  }

  /** Ends every stream and socket (the job is deleted). */
  closeAll(reason: string): void {
    for (const s of this.streams) this.close(s);
    for (const ws of this.state.getWebSockets()) ws.close(1000, reason);
  }

  /** Accepts a hibernatable WebSocket, replays the backlog, and closes it at once when the job has ended (`closing`). */
  websocket(backlog: Backlog, closing: JobStatus | null): Response {
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.state.acceptWebSocket(server);
    for (const e of backlog) server.send(e.body);
    if (closing) server.close(1000, `job ${closing}`);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** An SSE stream: the backlog, then (unless the job has ended) every new event, with keep-alive comments. */
  sse(jobId: string, backlog: Backlog, ended: boolean, keepAliveMs: number): Response {
    // Replay and subscription happen in one synchronous turn, so no event falls between them.
    let subscriber: SseSubscriber | null = null;
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        controller.enqueue(encoder.encode(`retry: 2000\n: job ${jobId}\n\n`));
        for (const e of backlog) controller.enqueue(sseFrame(e.event_id, e.body));
        if (ended) return controller.close();
        const keepAlive = setInterval(() => {
          try {
            controller.enqueue(encoder.encode(": keep-alive\n\n"));
          } catch {
            if (subscriber) this.close(subscriber);
          }
        }, keepAliveMs);
        subscriber = { controller, keepAlive };
        this.streams.add(subscriber);
      },
      cancel: () => {
        if (subscriber) this.close(subscriber);
      },
    });
    return new Response(stream, {
      headers: { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no" },
    });
  }

  private close(s: SseSubscriber): void {
    clearInterval(s.keepAlive);
    this.streams.delete(s);
    try {
      s.controller.close();
    } catch {
      // Already closed or cancelled by the client.
    }
  }
}

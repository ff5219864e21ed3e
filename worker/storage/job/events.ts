/**
 * @module The job's append-only event log (spec 6): each event stamped with its common fields,
 * mirrored into its task's progress view (4.8) and fanned out live (fanout.ts); and the streams
 * that read it, resumed after `Last-Event-ID` (or `?last_event_id`).
 */
import type { EventBody, Phase, RunnerEvent } from "../../../protocol";
import { TERMINAL_STATUSES } from "../../../protocol";
import { readConfig } from "../../config";
import { exists, first, nowIso } from "../sql";
import type { JobContext } from "./context";
import type { Backlog } from "./fanout";
import { jobRow } from "./records";

export function latestEventId(cx: JobContext): number {
  return cx.sql.exec<{ n: number | null }>("SELECT MAX(event_id) AS n FROM events").one().n ?? 0;
}

/** Appends one event with its common fields (6), updates the task's progress view, and fans it out. */
export function appendEvent(cx: JobContext, taskId: string | null, body: EventBody | RunnerEvent): void {
  const job = jobRow(cx)!;
  const eventId = latestEventId(cx) + 1;
  const event = { schema_version: 1, event_id: eventId, ts: nowIso(), job_id: job.job_id, task_id: taskId, seq: eventId, ...body };
  const text = JSON.stringify(event);
  cx.sql.exec("INSERT INTO events (event_id, task_id, kind, body) VALUES (?, ?, ?, ?)", eventId, taskId, body.kind, text);
  if (taskId) {
    cx.sql.exec("UPDATE tasks SET latest_event_kind = ? WHERE task_id = ?", body.kind, taskId);
    if (body.kind === "phase_progress") {
      cx.sql.exec("UPDATE tasks SET progress_current = ?, progress_total = ? WHERE task_id = ?", body.current, body.total, taskId);
    }
  }
  const closing = body.kind === "job_status" && TERMINAL_STATUSES.has(body.status) ? body.status : null;
  cx.fanout.broadcast(eventId, text, closing);
}

/** The events after `cursor` (a Last-Event-ID), oldest first. */
export function eventsAfter(cx: JobContext, cursor: number): Backlog {
  return cx.sql
    .exec<{ event_id: number; body: string }>("SELECT event_id, body FROM events WHERE event_id > ? ORDER BY event_id", cursor)
    .toArray();
}

/** Whether `snapshot_available` was already logged for the seq. */
export function snapshotAnnounced(cx: JobContext, snapshotSeq: number): boolean {
  return exists(cx.sql, "SELECT 1 FROM events WHERE kind = 'snapshot_available' AND json_extract(body, '$.snapshot_seq') = ?", snapshotSeq);
}

/** The phase of the latest phase event, or null before any. */
export function latestPhase(cx: JobContext): Phase | null {
  const phase = first<{ body: string }>(
    cx.sql,
    "SELECT body FROM events WHERE kind IN ('phase_started', 'phase_progress', 'phase_completed') ORDER BY event_id DESC LIMIT 1",
  );
  return phase ? ((JSON.parse(phase.body) as { phase: Phase }).phase ?? null) : null;
}

/** Answers a request for the job's event stream: a WebSocket upgrade, else SSE; 404 when there is no job. */
export function openStream(cx: JobContext, request: Request): Response {
  const job = jobRow(cx);
  if (!job) return new Response(null, { status: 404 });
  const url = new URL(request.url);
  const raw = request.headers.get("Last-Event-ID") ?? url.searchParams.get("last_event_id") ?? "0";
  const cursor = /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : 0;
  const ended = TERMINAL_STATUSES.has(job.status);
  const backlog = eventsAfter(cx, cursor);
  if (request.headers.get("Upgrade")?.toLowerCase() === "websocket") return cx.fanout.websocket(backlog, ended ? job.status : null);
  return cx.fanout.sse(job.job_id, backlog, ended, readConfig(cx.env).sseKeepAliveMs);
}

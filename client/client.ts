/**
 * @module The client: one transport (origin, credential, retries, problem+json errors), every
 * route typed from `/openapi.json` (`api`), and the parts a generator cannot give: resumable
 * uploads, event streams, waiting for a job with progress, the runner protocol.
 */
import { type Api, createApi } from "./api.js";
import { type EventStreamOptions, type JobEvent, type WebSocketFactory, socketEvents, sseEvents } from "./events.js";
import { Transport, type TransportOptions } from "./http.js";
import { type JobDetail, type WaitOptions, waitForJob } from "./jobs.js";
import { RunnerClient } from "./runner.js";
import { type UploadOptions, type UploadResult, uploadBlob } from "./uploads.js";

export interface ClientOptions extends TransportOptions {
  /** Opens the WebSockets of `socket()` (default: the platform's `WebSocket`). */
  webSocket?: WebSocketFactory;
}

export class EdgeSfmClient {
  readonly transport: Transport;
  /** Every route of `/openapi.json`, typed (openapi-fetch); `unwrap()` turns an error answer into a ProblemError. */
  readonly api: Api;
  /** The runner protocol (reference-only extension; worker/routes/runners.md). */
  readonly runner: RunnerClient;

  constructor(private readonly o: ClientOptions = {}) {
    this.transport = new Transport(o);
    this.api = createApi(this.transport);
    this.runner = new RunnerClient(this.transport);
  }

  /** Bytes (or a file) as a blob of the tenant: chunked, resumable, retried; skipped when the server holds them. */
  upload(data: Uint8Array | Blob, o?: UploadOptions): Promise<UploadResult> {
    return uploadBlob(this.api, data, o);
  }

  /** A job's events over SSE, resumed after drops, until its terminal status. */
  events(jobId: string, o?: EventStreamOptions): AsyncGenerator<JobEvent> {
    return sseEvents(this.transport, jobId, o);
  }

  /** A job's events over WebSocket, resumed after drops, until its terminal status. */
  socket(jobId: string, o?: EventStreamOptions): AsyncGenerator<JobEvent> {
    return socketEvents(this.transport, jobId, { ...o, webSocket: this.o.webSocket });
  }

  /** Follows a job to its terminal status with progress callbacks; answers its final JobDetail. */
  waitForJob(jobId: string, o?: WaitOptions): Promise<JobDetail> {
    return waitForJob(this.api, (jid, so) => this.events(jid, so), jobId, o);
  }

  /** A request of any path (bytes, tiles, anything not worth a typed call): 2xx or one of `accept`, else a ProblemError. */
  fetch(path: string, init?: RequestInit & { idempotent?: boolean; accept?: number[] }): Promise<Response> {
    return this.transport.fetch(path, init);
  }
}

export function createEdgeSfmClient(o: ClientOptions = {}): EdgeSfmClient {
  return new EdgeSfmClient(o);
}

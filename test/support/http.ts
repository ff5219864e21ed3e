/**
 * @module A raw HTTP helper for suites that check statuses and bodies of a real server: each call
 * answers status, headers, parsed JSON and bytes, through the client's transport. `http.client`
 * is the typed client of the same server, for what is not under test (uploads, waiting for jobs).
 */
import { EdgeSfmClient, type ProgressEvent, collect } from "../../client/index";

export interface HttpResult {
  status: number;
  headers: Headers;
  json: any;
  raw: Uint8Array;
}

export type Http = ((method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<HttpResult>) & {
  client: EdgeSfmClient;
};

export function httpClient(base: string, defaults: Record<string, string> = {}): Http {
  const client = new EdgeSfmClient({ baseUrl: base, authorization: defaults.Authorization });
  const { transport } = client;
  async function http(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
    const init: RequestInit = { method, headers: { ...defaults, ...headers } };
    if (body instanceof Uint8Array || typeof body === "string") init.body = body as BodyInit;
    else if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)["Content-Type"] = "application/json";
    }
    const res = await transport.send(new Request(transport.url(path), init));
    const raw = new Uint8Array(await res.arrayBuffer());
    const json =
      /json/.test(res.headers.get("Content-Type") ?? "") && raw.length > 0 ? JSON.parse(new TextDecoder().decode(raw)) : undefined;
    return { status: res.status, headers: res.headers, json, raw };
  }
  return Object.assign(http, { client });
}

/** Uploads bytes with the client (the one upload path); answers the blob sha. */
export async function uploadBytes(http: Http, bytes: Uint8Array): Promise<string> {
  return (await http.client.upload(bytes)).blob_sha;
}

/**
 * Every event of an ended job, as one SSE connection read by the client delivers them (the
 * service's own kinds), checked to be one log: ids 1..N without gap or repeat.
 */
export async function eventLog(client: EdgeSfmClient, jobId: string): Promise<ProgressEvent[]> {
  const events = (await collect(client.events(jobId, { reconnect: false }))) as ProgressEvent[];
  const ids = events.map((e) => e.event_id);
  if (ids.some((id, i) => id !== i + 1)) throw new Error(`the event log of ${jobId} is not one log: ids ${ids.join(",")}`);
  return events;
}

/** Follows the job with the client until it ends; answers its final JobDetail as JSON the suite checks. */
export function waitForJob(http: Http, jobId: string): Promise<any> {
  return http.client.waitForJob(jobId);
}

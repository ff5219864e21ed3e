/** @module A small JSON-over-HTTP helper for suites, benchmarks and scripts that drive a real server. */
import { Transport } from "../../client/index";

export interface HttpResult {
  status: number;
  headers: Headers;
  json: any;
  raw: Uint8Array;
}

export function httpClient(base: string, defaults: Record<string, string> = {}) {
  const transport = new Transport({ baseUrl: base });
  return async function http(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
    const init: RequestInit = { method, headers: { ...defaults, ...headers } };
    if (body instanceof Uint8Array || typeof body === "string") init.body = body as BodyInit;
    else if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)["Content-Type"] = "application/json";
    }
    const res = await transport.send(new Request(transport.url(path), init));
    const raw = new Uint8Array(await res.arrayBuffer());
    const json = /json/.test(res.headers.get("Content-Type") ?? "") && raw.length > 0 ? JSON.parse(new TextDecoder().decode(raw)) : undefined;
    return { status: res.status, headers: res.headers, json, raw };
  };
}

/** Uploads bytes in one chunk and finalizes them; answers the blob sha. */
export async function uploadBytes(http: ReturnType<typeof httpClient>, bytes: Uint8Array): Promise<string> {
  const up = await http("POST", "/v1/uploads", { expected_size: bytes.byteLength });
  if (up.status !== 201) throw new Error(`upload: ${up.status} ${JSON.stringify(up.json)}`);
  const id = up.json.upload_id as string;
  const put = await http("PATCH", `/v1/uploads/${id}`, bytes, { "Content-Range": `bytes 0-${bytes.byteLength - 1}/${bytes.byteLength}` });
  if (put.status !== 200) throw new Error(`chunk: ${put.status} ${JSON.stringify(put.json)}`);
  const fin = await http("POST", `/v1/uploads/${id}:finalize`);
  if (fin.status !== 200) throw new Error(`finalize: ${fin.status} ${JSON.stringify(fin.json)}`);
  return fin.json.blob_sha as string;
}

/**
 * @module Chunked, resumable uploads (spec 4.3). Each file is hashed first (in a Web Worker); the
 * upload is then created with `Idempotency-Key: sha256:<hex>:<size>`, so the server answers with
 * the upload it already has for these exact bytes: a finalized one means the bytes are already
 * there and nothing is sent; an open one is resumed from its `received_bytes`. Chunks go with
 * `Content-Range`; failures are retried with backoff after re-reading `received_bytes`; finalize
 * sends `X-Content-SHA256` so the server checks the bytes.
 */
import { wrap, proxy, type Remote } from "comlink";
import type { Upload } from "../../../protocol/schemas/upload";
import { ProblemError, getJson, request, sendJson } from "../api/client";
import type { Hasher } from "./hash-worker";

/** Small enough for fine progress on a phone's uplink, large enough to keep requests few. */
export const CHUNK_BYTES = 2 * 1024 * 1024;
const MAX_ATTEMPTS = 4;

export type UploadPhase = "hashing" | "uploading" | "finalizing";
export interface UploadProgress {
  phase: UploadPhase;
  /** Bytes done in this phase. */
  done: number;
  total: number;
}
export interface UploadResult {
  blobSha: string;
  /** True when the server already held every byte, so none were sent. */
  skipped: boolean;
  /** Bytes this session actually sent. */
  sent: number;
}

let hasher: Remote<Hasher> | null = null;
function hashWorker(): Remote<Hasher> {
  hasher ??= wrap<Hasher>(new Worker(new URL("./hash-worker.ts", import.meta.url), { type: "module" }));
  return hasher;
}

export async function sha256Hex(file: Blob, onProgress: (done: number) => void): Promise<string> {
  return hashWorker().sha256Hex(file, proxy(onProgress));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Network errors, rate limits and server errors are worth another try; 4xx answers are not. */
function retryable(e: unknown): boolean {
  return e instanceof ProblemError && (e.status === 0 || e.status === 429 || e.status >= 500);
}

async function withRetries<T>(what: () => Promise<T>, resync?: () => Promise<void>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await what();
    } catch (e) {
      const conflict = e instanceof ProblemError && e.status === 409 && resync;
      if (attempt >= MAX_ATTEMPTS || !(retryable(e) || conflict)) throw e;
      await sleep(250 * 2 ** attempt);
      await resync?.();
    }
  }
}

export async function uploadFile(file: File, onProgress: (p: UploadProgress) => void): Promise<UploadResult> {
  onProgress({ phase: "hashing", done: 0, total: file.size });
  const sha = await sha256Hex(file, (done) => onProgress({ phase: "hashing", done, total: file.size }));
  let upload = await withRetries(() =>
    sendJson<Upload>(
      "POST",
      "/v1/uploads",
      { expected_size: file.size, expected_sha: sha, ...(file.type ? { content_type: file.type } : {}) },
      { "Idempotency-Key": `sha256:${sha}:${file.size}` },
    ),
  );
  if (upload.state === "finalized" && upload.blob_sha) return { blobSha: upload.blob_sha, skipped: true, sent: 0 };

  const resync = async () => {
    upload = await getJson<Upload>(`/v1/uploads/${upload.upload_id}`);
  };
  let sent = 0;
  while (upload.received_bytes < file.size) {
    const start = upload.received_bytes;
    const end = Math.min(file.size, start + CHUNK_BYTES);
    onProgress({ phase: "uploading", done: start, total: file.size });
    upload = await withRetries(async () => {
      const res = await request(`/v1/uploads/${upload.upload_id}`, {
        method: "PATCH",
        headers: { "Content-Range": `bytes ${start}-${end - 1}/${file.size}`, "Content-Type": "application/octet-stream" },
        body: file.slice(start, end),
      });
      return (await res.json()) as Upload;
    }, resync);
    sent += end - start;
  }
  onProgress({ phase: "finalizing", done: file.size, total: file.size });
  const finalized = await withRetries(async () => {
    const res = await request(`/v1/uploads/${upload.upload_id}:finalize`, { method: "POST", headers: { "X-Content-SHA256": sha } });
    return (await res.json()) as Upload;
  });
  return { blobSha: finalized.blob_sha ?? sha, skipped: false, sent };
}

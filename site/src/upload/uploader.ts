/**
 * @module Uploads of the demo's photos (spec 4.3) with the client's resumable upload
 * (client/uploads.ts: created with `Idempotency-Key: sha256:<hex>:<size>`, so bytes the server
 * holds are never sent again and an interrupted upload resumes from its `received_bytes`; chunks
 * with `Content-Range`, retried; finalized with `X-Content-SHA256`). Each file is hashed first in
 * a Web Worker, so a folder of large photos never blocks the page.
 */
import { type Remote, proxy, wrap } from "comlink";
import type { UploadProgress } from "../../../client/index";
import { api } from "../api/client";
import type { Hasher } from "./hash-worker";

export type { UploadPhase, UploadProgress } from "../../../client/index";

/** Small enough for fine progress on a phone's uplink, large enough to keep requests few. */
export const CHUNK_BYTES = 2 * 1024 * 1024;

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

async function sha256Hex(file: Blob, onProgress: (done: number) => void): Promise<string> {
  return hashWorker().sha256Hex(file, proxy(onProgress));
}

export async function uploadFile(file: File, onProgress: (p: UploadProgress) => void): Promise<UploadResult> {
  onProgress({ phase: "hashing", done: 0, total: file.size });
  const sha = await sha256Hex(file, (done) => onProgress({ phase: "hashing", done, total: file.size }));
  const result = await api().upload(file, {
    sha256: sha,
    ...(file.type ? { contentType: file.type } : {}),
    chunkBytes: CHUNK_BYTES,
    // Hashing was reported above, by the worker.
    onProgress: (p) => p.phase !== "hashing" && onProgress(p),
  });
  return { blobSha: result.blob_sha, skipped: result.skipped, sent: result.sent };
}

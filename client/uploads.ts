/**
 * @module Chunked, resumable uploads (spec 4.3) that never send bytes the server holds. The
 * upload is created with `Idempotency-Key: sha256:<hex>:<size>`, so the server answers with the
 * upload it already has for these exact bytes: a finalized one means the bytes are there and
 * nothing is sent; an open one is resumed from its `received_bytes` (after a crash, in another
 * process or tab). Chunks go with `Content-Range`; a failed chunk is sent again after re-reading
 * `received_bytes` (a 409 means the server holds more or other bytes than this session thought);
 * finalize sends `X-Content-SHA256`, so the server checks the bytes.
 */
import { type Api, unwrap } from "./api.js";
import { ProblemError, sleep } from "./http.js";
import { sha256Hex } from "./sha256.js";
import type { components } from "./schema.js";

export type Upload = components["schemas"]["Upload"];

export type UploadPhase = "hashing" | "uploading" | "finalizing";

export interface UploadProgress {
  phase: UploadPhase;
  /** Bytes done in this phase. */
  done: number;
  total: number;
}

export interface UploadOptions {
  /** The bytes' SHA-256 when the caller has it (e.g. hashed in a Web Worker); otherwise hashed here. */
  sha256?: string;
  contentType?: string;
  /** Bytes per PATCH (default 8 MiB; the server's cap is `SVC_MAX_CHUNK_BYTES`). */
  chunkBytes?: number;
  /** Tries of each step before its error is thrown (default 4). */
  attempts?: number;
  signal?: AbortSignal;
  onProgress?(p: UploadProgress): void;
}

export interface UploadResult {
  blob_sha: string;
  /** True when the server already held every byte, so none were sent. */
  skipped: boolean;
  /** Bytes this call actually sent. */
  sent: number;
}

export const DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * How many files a client uploads at once (the demo's photo panel, `npm run reconstruct`): enough to
 * overlap one file's hashing and round trips with another's transfer, few enough not to crowd a link.
 */
export const PARALLEL_UPLOADS = 3;

/** Worth another try: the network, rate limits and server errors; the service's verdicts on the request are not. */
function retryable(e: unknown): boolean {
  return e instanceof TypeError || (e instanceof ProblemError && (e.status === 429 || e.status >= 500));
}

export async function uploadBlob(api: Api, data: Uint8Array | Blob, o: UploadOptions = {}): Promise<UploadResult> {
  const size = data instanceof Uint8Array ? data.byteLength : data.size;
  const chunkBytes = o.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const attempts = o.attempts ?? 4;
  const signal = o.signal;
  const progress = (phase: UploadPhase, done: number) => o.onProgress?.({ phase, done, total: size });

  /** Runs a step again after a retryable failure (and, with `resync`, after a 409), backing off. */
  async function step<T>(what: () => Promise<T>, resync?: () => Promise<void>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await what();
      } catch (e) {
        const conflict = resync && e instanceof ProblemError && e.status === 409;
        if (attempt >= attempts || signal?.aborted || !(retryable(e) || conflict)) throw e;
        await sleep(250 * 2 ** attempt, signal);
        await resync?.();
      }
    }
  }

  progress("hashing", 0);
  const sha = o.sha256 ?? (await sha256Hex(data, (done) => progress("hashing", done)));
  signal?.throwIfAborted();
  // The key names the bytes, so creating it again (a retry, a second run) answers the same upload.
  let upload = await step(() =>
    unwrap(
      api.POST("/v1/uploads", {
        body: { expected_size: size, expected_sha: sha, ...(o.contentType ? { content_type: o.contentType } : {}) },
        params: { header: { "idempotency-key": `sha256:${sha}:${size}` } },
        signal,
      }),
    ),
  );
  if (upload.state === "finalized" && upload.blob_sha) return { blob_sha: upload.blob_sha, skipped: true, sent: 0 };

  const path = { uid: upload.upload_id };
  const resync = async () => {
    upload = await unwrap(api.GET("/v1/uploads/{uid}", { params: { path }, signal }));
  };
  let sent = 0;
  while (upload.received_bytes < size) {
    const start = upload.received_bytes;
    const end = Math.min(size, start + chunkBytes);
    progress("uploading", start);
    upload = await step(
      () =>
        unwrap(
          api.PATCH("/v1/uploads/{uid}", {
            params: { path, header: { "content-range": `bytes ${start}-${end - 1}/${size}` } },
            headers: { "Content-Type": "application/octet-stream" },
            // Raw bytes, not JSON; a chunk re-sent at the same offset is idempotent (4.3).
            body: data.slice(start, end),
            bodySerializer: (chunk) => chunk,
            signal,
          }),
        ),
      resync,
    );
    sent += end - start;
  }
  progress("finalizing", size);
  const finalized = await step(() =>
    unwrap(api.POST("/v1/uploads/{uid}:finalize", { params: { path, header: { "x-content-sha256": sha } }, signal })),
  );
  progress("finalizing", size);
  return { blob_sha: finalized.blob_sha ?? sha, skipped: false, sent };
}

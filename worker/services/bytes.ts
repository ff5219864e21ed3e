/**
 * @module Serving stored bytes with the spec's web rules (4, caching rules 1-3): a strong
 * ETag on immutable content, `If-None-Match` -> 304, `Range: bytes=A-B` -> 206 (RFC 9110
 * 13.1.2, 14), and `Cache-Control` for immutable files. The body is one R2 object, or a
 * sequence of parts (R2 objects and bytes in memory) served as one resource (an archive).
 */
import { ApiError, notFound } from "../errors";

/** A piece of a composite body: an R2 object of `size` bytes, or bytes in memory. */
export type BytePart = { key: string; size: number } | { bytes: Uint8Array };

const partSize = (p: BytePart) => ("bytes" in p ? p.bytes.length : p.size);

interface ServeCommon {
  etag: string;
  contentType: string;
  /** Immutable content may be cached for a year; `shared: false` keeps it out of shared caches. */
  cache: { immutable: boolean; shared: boolean };
  /** `download=true`: attachment disposition with this file name. */
  downloadName?: string | undefined;
}

/** The object at `key`, or the concatenation of `parts`. */
export type ServeOptions = ServeCommon & (ObjectBody | { parts: BytePart[] });

interface ObjectBody {
  key: string;
  /**
   * The byte length; or, for content derived on first request (thumbnails), a function that makes
   * sure the object exists at `key` and returns its length, called only when a body is needed.
   */
  size: number | (() => Promise<number>);
}

type ByteRange = { offset: number; length: number };

/** Parses one `bytes=` range against `size`; null means serve the whole body (absent or multi-range). */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return null; // multi-range or other units: ignoring Range is allowed (RFC 9110 14.2)
  const [, a, b] = m;
  if (a === "" && b === "") return null;
  if (a === "") {
    const n = Math.min(Number(b), size);
    return n === 0 ? "unsatisfiable" : { offset: size - n, length: n };
  }
  const start = Number(a);
  // `last < first` is an invalid range-spec, ignored like any other (RFC 9110 14.1.1).
  if (b !== "" && Number(b) < start) return null;
  const end = b === "" ? size - 1 : Math.min(Number(b), size - 1);
  if (start >= size) return "unsatisfiable";
  return { offset: start, length: end - start + 1 };
}

/** `If-None-Match` (RFC 9110 13.1.2): weak comparison, so `W/` tags and `*` match too. */
export const etagMatches = (header: string | undefined, etag: string) =>
  !!header && header.split(",").some((t) => t.trim() === "*" || t.trim().replace(/^W\//, "") === etag);

export async function serveBytes(bucket: R2Bucket, req: Request, o: ServeOptions): Promise<Response> {
  const headers = new Headers({
    ETag: o.etag,
    "Accept-Ranges": "bytes",
    "Cache-Control": o.cache.immutable ? `${o.cache.shared ? "public" : "private"}, max-age=31536000, immutable` : "private, no-cache",
    "Content-Type": o.contentType,
  });
  if (o.downloadName) headers.set("Content-Disposition", `attachment; filename="${o.downloadName.replace(/["\\\r\n]/g, "_")}"`);
  if (etagMatches(req.headers.get("If-None-Match") ?? undefined, o.etag)) return new Response(null, { status: 304, headers });

  const size = "parts" in o ? o.parts.reduce((s, p) => s + partSize(p), 0) : typeof o.size === "number" ? o.size : await o.size();
  const range = parseRange(req.headers.get("Range") ?? undefined, size);
  if (range === "unsatisfiable") {
    throw new ApiError(
      416,
      "range_not_satisfiable",
      `the range is outside the ${size} bytes of this resource`,
      {},
      {
        "Content-Range": `bytes */${size}`,
      },
    );
  }
  const body =
    "key" in o
      ? (await bucket.get(o.key, range ? { range } : undefined))?.body
      : concatenate(bucket, o.parts, range ?? { offset: 0, length: size }, () => notFound("content"));
  if (!body) throw notFound("content");
  if (req.method === "HEAD") {
    headers.set("Content-Length", String(range ? range.length : size));
    return new Response(null, { status: range ? 206 : 200, headers });
  }
  if (range) {
    headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
    headers.set("Content-Length", String(range.length));
    return new Response(body, { status: 206, headers });
  }
  headers.set("Content-Length", String(size));
  return new Response(body, { status: 200, headers });
}

/**
 * Bytes `range` of the parts laid end to end, as one stream; R2 objects are read one at a time,
 * each only over the bytes the range needs. `missing` is thrown when an object is gone.
 */
export function concatenate(
  bucket: R2Bucket,
  parts: readonly BytePart[],
  range: ByteRange,
  missing: () => Error,
): ReadableStream<Uint8Array> {
  const slices: { part: BytePart; offset: number; length: number }[] = [];
  let start = 0;
  for (const part of parts) {
    const size = partSize(part);
    const from = Math.max(range.offset, start);
    const to = Math.min(range.offset + range.length, start + size);
    if (to > from) slices.push({ part, offset: from - start, length: to - from });
    start += size;
  }
  let i = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (!reader) {
          const slice = slices[i++];
          if (!slice) return controller.close();
          const { part, offset, length } = slice;
          if ("bytes" in part) return controller.enqueue(part.bytes.subarray(offset, offset + length));
          const whole = offset === 0 && length === part.size;
          const obj = await bucket.get(part.key, whole ? undefined : { range: { offset, length } });
          if (!obj) throw missing();
          reader = obj.body.getReader();
        }
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        reader = null;
      }
    },
  });
}

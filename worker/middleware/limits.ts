/**
 * @module Request size limits (spec 8): JSON bodies are capped at SVC_MAX_JSON_BYTES, upload
 * chunks at SVC_MAX_CHUNK_BYTES; both as the body streams in, so a body without a
 * Content-Length is refused as soon as it passes the limit, not after it was buffered.
 */
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { payloadTooLarge } from "../errors";

const capBody = (max: number, what: string) =>
  bodyLimit({
    maxSize: max,
    onError: () => {
      throw payloadTooLarge(`${what} are limited to ${max} bytes`);
    },
  });

/** A runner's output blob keeps its media type (a JSON file, say) but is bytes, capped by its route at SVC_MAX_CHUNK_BYTES. */
const isLeaseBlob = (method: string, path: string) => method === "PUT" && /^\/v1\/leases\/[^/]+\/blobs\//.test(path);

export const jsonBodyLimit = createMiddleware<AppEnv>(async (c, next) => {
  if (!/json/i.test(c.req.header("Content-Type") ?? "") || isLeaseBlob(c.req.method, c.req.path)) return next();
  return capBody(c.var.config.maxJsonBytes, "JSON bodies")(c, next);
});

/** A one-shot request's image (4.15, 8): SVC_ONESHOT_MAX_REQUEST_BYTES. */
export const oneshotBodyLimit = createMiddleware<AppEnv>(async (c, next) =>
  capBody(c.var.config.oneshotMaxBytes, "one-shot requests")(c, next),
);

export const chunkBodyLimit = createMiddleware<AppEnv>(async (c, next) => capBody(c.var.config.maxChunkBytes, "upload chunks")(c, next));

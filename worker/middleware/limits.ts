/**
 * @module Request size limits (spec 8): JSON bodies are capped at SVC_MAX_JSON_BYTES;
 * upload chunks are capped in their own route (SVC_MAX_CHUNK_BYTES).
 */
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { payloadTooLarge } from "../errors";

export const jsonBodyLimit = createMiddleware<AppEnv>(async (c, next) => {
  const type = c.req.header("Content-Type") ?? "";
  if (!/json/i.test(type)) return next();
  const max = c.var.config.maxJsonBytes;
  return bodyLimit({
    maxSize: max,
    onError: () => {
      throw payloadTooLarge(`JSON bodies are limited to ${max} bytes`);
    },
  })(c, next);
});

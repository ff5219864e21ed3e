/**
 * @module Shared field shapes of spec section 2.0 (conventions) and 7 (errors).
 * Defined once with zod: they validate requests, type the code and generate /openapi.json.
 */
import { z } from "zod";

/** Opaque id, safe in URL paths; ours are 26-character ULIDs (2.0). */
export const Id = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_-]+$/, "must be URL-safe");
/** RFC 3339 UTC timestamp with `Z` (2.0). */
export const Timestamp = z.string().meta({ format: "date-time", example: "2026-01-01T00:00:00.000Z" });
/** Lower-case hex SHA-256 (2.0). */
export const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lower-case hex characters");

export const Link = z.object({ href: z.string() }).meta({ id: "Link" });
export const Links = z.record(z.string(), Link).meta({ id: "Links" });

/**
 * AIP-158 page tokens (2.0): opaque to clients; for this server, base64url of `{k: <last key seen>}`.
 * Defined here so that a token this server never issued fails validation like any other field.
 */
export function encodePageToken(lastKey: string): string {
  return btoa(JSON.stringify({ k: lastKey }))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replaceAll("=", "");
}

/** The key to continue after, or null when the token is not one `encodePageToken` made. */
export function decodePageToken(token: string): string | null {
  try {
    const k = (JSON.parse(atob(token.replaceAll("-", "+").replaceAll("_", "/"))) as { k?: unknown }).k;
    return typeof k === "string" && k.length > 0 && k.length <= 256 ? k : null;
  } catch {
    return null;
  }
}

/**
 * A number in the query string (`?page_size=20`): the parameter's string read as a number, then
 * checked by `schema`. Unlike `z.coerce.number()`, only strings are read: coercion turned null into
 * 0, so a parameter whose range includes 0 accepted null and /openapi.json called it nullable,
 * though a query string cannot carry null (its generator probes each schema with null).
 */
export function queryNumber<T extends z.ZodNumber>(schema: T) {
  return z.preprocess((v) => (typeof v === "string" ? Number(v) : v), schema);
}

/** AIP-158 query parameters (2.0, 8). */
export const PageQuery = z.object({
  page_token: z
    .string()
    .max(512)
    .refine((t) => decodePageToken(t) !== null, "is not a page token this server issued")
    .optional(),
  page_size: queryNumber(z.number().int().min(1).max(500)).default(50),
});

/** AIP-158 envelope: `{items, next_page_token, total}`. */
export function Page<T extends z.ZodType>(item: T, id: string) {
  return z.object({ items: z.array(item), next_page_token: z.string().nullable(), total: z.number().int().nullable() }).meta({ id });
}

/** RFC 7807 problem details, with the spec's extra members (7). */
export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string(),
    capability: z.string().optional(),
    errors: z
      .array(z.object({ path: z.string(), message: z.string(), code: z.string() }))
      .optional()
      .describe("validation failures (422): field path, message and code"),
  })
  .meta({ id: "Problem" });
export type Problem = z.infer<typeof Problem>;

/** Comma-separated update mask of a PATCH (4.2). */
export const UpdateMaskQuery = z.object({ update_mask: z.string().max(1024).optional() });

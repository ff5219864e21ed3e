/**
 * @module PATCH update masks (spec 4.2): `update_mask` names the body paths to apply; each
 * named path must be allowed and present in the body. Without a mask, present fields apply.
 */
import { validation } from "../errors";

export function applyUpdateMask<T extends Record<string, unknown>>(
  body: T,
  mask: string | undefined,
  allowed: readonly string[],
): Partial<T> {
  if (mask === undefined) return body;
  const paths = mask
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  const errors = paths.flatMap((p) => {
    if (!allowed.includes(p))
      return [{ path: `update_mask.${p}`, message: `'${p}' cannot be updated; allowed: ${allowed.join(", ")}`, code: "not_allowed" }];
    if (!(p in body)) return [{ path: p, message: `'${p}' is named in update_mask but absent from the body`, code: "missing" }];
    return [];
  });
  if (paths.length === 0) errors.push({ path: "update_mask", message: "update_mask names no field", code: "empty" });
  if (errors.length) throw validation("invalid update_mask", errors);
  return Object.fromEntries(paths.map((p) => [p, body[p]])) as Partial<T>;
}

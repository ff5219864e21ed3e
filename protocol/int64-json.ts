/**
 * @module JSON with 64-bit integers kept whole under chosen keys (pose priors' `timestamp_ns`: a
 * Unix time in nanoseconds is near 2^61, beyond the 2^53 a double holds exactly). Parsing reads such
 * a number's source text (ES2025 JSON.parse source text access, in V8 since 11.4, so in workerd) and
 * keeps it as a decimal string; writing turns those strings back into bare JSON integers.
 */

type SourceContext = { source?: string } | undefined;

/** JSON.parse, with the integers under `keys` that are not safe doubles kept as decimal strings. */
export function parseInt64Json(text: string, keys: ReadonlySet<string>): unknown {
  return JSON.parse(text, function (this: unknown, key: string, value: unknown, context?: SourceContext) {
    if (typeof value !== "number" || !keys.has(key) || Number.isSafeInteger(value)) return value;
    const source = context?.source;
    if (source && /^-?\d+$/.test(source)) return source;
    return Number.isInteger(value) ? BigInt(value).toString() : value;
  } as (key: string, value: unknown) => unknown);
}

const MARK = "\u0000int64:";

/** JSON.stringify, with the decimal strings under `keys` written as bare JSON integers. */
export function stringifyInt64Json(value: unknown, keys: ReadonlySet<string>): string {
  const text = JSON.stringify(value, (key, v: unknown) =>
    keys.has(key) && typeof v === "string" && /^-?\d+$/.test(v) ? `${MARK}${v}` : v,
  );
  return text.replace(/"\\u0000int64:(-?\d+)"/g, "$1");
}

/** The keys of pose priors (2.13) whose integers are 64-bit. */
export const PRIOR_INT64_KEYS: ReadonlySet<string> = new Set(["timestamp_ns"]);

/** A timestamp as a BigInt, whether it arrived as a safe number or as a decimal string. */
export const timestampBigInt = (t: number | string): bigint => BigInt(t);

/**
 * @module The runtime-version map (spec 2.15, 9.7) and its id `rv_id`, rolled into every task's
 * cache key so that a changed engine invalidates cached results.
 *
 * Where the versions come from: the deployment sets `SVC_RUNTIME_VERSIONS` to a JSON map of
 * build ids, e.g. `{"engine-wasm":"<sha256 of engine.wasm>","shaders":"<sha256 of the WGSL
 * sources>"}`, written by the build that produced the runner bundle. Unset (local development)
 * the map says `unbuilt`.
 *
 * How runners report theirs: `POST /v1/runners` carries the runner's own `runtime_versions`,
 * computed from the wasm and shader bytes it actually loaded. The runner's map hashes to its
 * `rv_id` exactly as below, and a runner leases only tasks whose `rv_id` equals its own, so a
 * result is always cached under the runtime that computed it.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

const UNBUILT = { "engine-wasm": "unbuilt", shaders: "unbuilt" } as const;

export function runtimeVersions(env: Env): Record<string, string> {
  const raw = (env as unknown as Record<string, string | undefined>).SVC_RUNTIME_VERSIONS;
  if (!raw) return { ...UNBUILT };
  const parsed: unknown = JSON.parse(raw);
  if (!parsed || typeof parsed !== "object" || Object.values(parsed).some((v) => typeof v !== "string")) {
    throw new Error("SVC_RUNTIME_VERSIONS must be a JSON object of strings");
  }
  return parsed as Record<string, string>;
}

/**
 * Canonical JSON (object keys sorted at every level, no whitespace; RFC 8785 for the values we
 * hash: strings, finite numbers, booleans, null, arrays, objects).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** SHA-256 of the canonical JSON of `value`. */
export const hashJson = (value: unknown) => bytesToHex(sha256(utf8ToBytes(canonicalJson(value))));

/** The id of a runtime-version map. */
export const rvIdOf = (versions: Record<string, string>) => hashJson(versions);

/** `cache_key` = SHA-256 of the canonical JSON of `{kind, inputs_hash, params_hash, rv_id}` (3.2.1). */
export const cacheKeyOf = (t: { kind: string; inputs_hash: string; params_hash: string; rv_id: string }) =>
  hashJson({ kind: t.kind, inputs_hash: t.inputs_hash, params_hash: t.params_hash, rv_id: t.rv_id });

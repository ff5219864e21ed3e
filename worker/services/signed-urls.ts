/**
 * @module Signed links to sealed snapshot files in `api_key` mode (issue 22, Security; spec 4,
 * caching rule 2). Sealed files carry `Cache-Control: public, max-age=31536000, immutable`, so a
 * shared cache in front of the service may keep them and hand them to anyone asking for the same
 * URL. Under the spec's path alone, a second tenant who learned or guessed a recon id could then
 * read a first tenant's bytes from the cache, without a key. So in `api_key` mode the spec's path,
 * asked with a key, answers 307 to the same path carrying a signature (HMAC-SHA-256 over method,
 * tenant, path and expiry): only that URL serves the bytes, with rule 2's header unchanged. The
 * URL is unguessable (256-bit key), given only to a key holder of the tenant, and honoured by the
 * service until it expires (`SVC_SIGNED_URL_SECONDS`, rounded up to a 10-minute window, so every
 * request of a window gets the same URL and shared caches do hit). A cache may keep the immutable
 * bytes under it for the year rule 2 allows: nothing goes stale, and only holders of the URL can
 * ask for them.
 *
 * The key is `SVC_URL_SIGNING_KEY` when set (a secret: `wrangler secret put`), else one the
 * KeyRegistry draws once and keeps, so links survive restarts and hold across isolates.
 */
import { keyRegistry } from "./stores";

/** Expiries are rounded up to this, so a window's requests share one URL (cache hits). */
const WINDOW_SECONDS = 600;
/** The query parameters of a signed link. */
export const SIGNATURE = { tenant: "x-tenant", expires: "x-expires", signature: "x-signature" } as const;

const text = new TextEncoder();
let cached: { source: string; key: CryptoKey } | null = null;

async function hmacKey(env: Env): Promise<CryptoKey> {
  const configured = (env as unknown as Record<string, string | undefined>).SVC_URL_SIGNING_KEY;
  const source = configured || (await keyRegistry(env).urlSigningSecret());
  if (cached?.source !== source) {
    const key = await crypto.subtle.importKey("raw", text.encode(source), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    cached = { source, key };
  }
  return cached.key;
}

const payload = (tenant: string, path: string, expires: number) => text.encode(`GET\n${tenant}\n${path}\n${expires}`);

const base64url = (bytes: ArrayBuffer) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replaceAll("=", "");

const fromBase64url = (s: string): Uint8Array<ArrayBuffer> | null => {
  if (!/^[A-Za-z0-9_-]{43}$/.test(s)) return null;
  return Uint8Array.from(atob(s.replaceAll("-", "+").replaceAll("_", "/")), (ch) => ch.charCodeAt(0));
};

/** The signed link to `path` for `tenant`, valid at least `lifetimeSeconds` from `nowMs`; `keep` are query parameters carried along (download). */
export async function signedLink(
  env: Env,
  tenant: string,
  path: string,
  nowMs: number,
  lifetimeSeconds: number,
  keep: URLSearchParams,
): Promise<string> {
  const expires = Math.ceil((nowMs / 1000 + lifetimeSeconds) / WINDOW_SECONDS) * WINDOW_SECONDS;
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(env), payload(tenant, path, expires));
  const q = new URLSearchParams(keep);
  q.set(SIGNATURE.tenant, tenant);
  q.set(SIGNATURE.expires, String(expires));
  q.set(SIGNATURE.signature, base64url(mac));
  return `${path}?${q}`;
}

/**
 * A MAC of `message` under the same key (base64url), for the deployment's other secrets derived
 * from ids: a keyless volunteer's runner token (services/runners.ts). Callers prefix their purpose.
 */
export async function deploymentMac(env: Env, message: string): Promise<string> {
  return base64url(await crypto.subtle.sign("HMAC", await hmacKey(env), text.encode(message)));
}

/** The tenant a signed GET of `url` speaks for, or null (no signature, a wrong one, expired). */
export async function signedTenant(env: Env, method: string, url: URL, nowMs: number): Promise<string | null> {
  if (method !== "GET" && method !== "HEAD") return null;
  const tenant = url.searchParams.get(SIGNATURE.tenant);
  const expires = Number(url.searchParams.get(SIGNATURE.expires));
  const mac = fromBase64url(url.searchParams.get(SIGNATURE.signature) ?? "");
  if (!tenant || !mac || !Number.isSafeInteger(expires) || expires * 1000 < nowMs) return null;
  const valid = await crypto.subtle.verify("HMAC", await hmacKey(env), mac, payload(tenant, url.pathname, expires));
  return valid ? tenant : null;
}

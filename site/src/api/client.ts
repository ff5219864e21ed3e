/**
 * @module The demo's API client: the repository's one typed client (client/, @edgesfm/client) on
 * the page's own origin, sending the visitor's API key (spec 5, `Authorization: Bearer`) when one
 * is set. Its transport retries what is safe to retry, and every non-2xx answer is a
 * `ProblemError` holding the RFC 7807 problem+json body (spec 7), so the UI can show its `title`
 * and `detail`.
 */
import { EdgeSfmClient } from "../../../client/index";

export { ProblemError, describeError } from "../../../client/index";

const KEY_STORAGE = "edgesfm.api_key";

/** The stored API key (api_key mode), or "" in the open `none` mode. */
export function apiKey(): string {
  return localStorage.getItem(KEY_STORAGE) ?? "";
}

export function setApiKey(key: string): void {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

let client: EdgeSfmClient | null = null;

/** The page's client, made at first use; the key is read at each request, so a new key applies at once. */
export function api(): EdgeSfmClient {
  client ??= new EdgeSfmClient({
    baseUrl: globalThis.location?.origin ?? "",
    authorization: () => {
      const key = apiKey();
      return key ? `Bearer ${key}` : null;
    },
  });
  return client;
}

/**
 * A request of the API for bytes (snapshot files, tiles, artifacts, photos): typed calls go
 * through `api().api` (resources.ts). A non-2xx answer (except those listed in `accept`) throws a ProblemError.
 */
export function request(path: string, init: RequestInit = {}, accept: number[] = []): Promise<Response> {
  return api().fetch(path, { ...init, accept });
}

/** An object URL for bytes that need the API key (an <img src> cannot send Authorization). */
export async function authedObjectUrl(path: string): Promise<string> {
  return URL.createObjectURL(await (await request(path)).blob());
}

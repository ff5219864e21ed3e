/**
 * @module Every route of the service's `/openapi.json`, typed: openapi-fetch over the generated
 * `paths` (schema.ts), sending through the one transport. A call answers `{data, error, response}`;
 * `unwrap` gives the data or throws the answer's ProblemError.
 */
import createClient, { type Client } from "openapi-fetch";
import { ProblemError, type Transport } from "./http.js";
import type { input, paths } from "./schema.js";

type Method = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";

/** Each operation answers as `paths` says (defaulted fields present) and takes its body as `input.paths` does (they may be left out). */
export type ApiPaths = {
  [P in keyof paths]: {
    [K in keyof paths[P]]: K extends Method & keyof input.paths[P]
      ? Omit<paths[P][K], "requestBody"> & Pick<input.paths[P][K], "requestBody" & keyof input.paths[P][K]>
      : paths[P][K];
  };
};

export type Api = Client<ApiPaths>;

export function createApi(transport: Transport): Api {
  return createClient<ApiPaths>({ baseUrl: transport.baseUrl, fetch: transport.send });
}

/** The data of a 2xx answer; any other answer throws its ProblemError. */
export async function unwrap<D>(call: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<Exclude<D, undefined>> {
  const { data, error, response } = await call;
  if (!response.ok) throw ProblemError.fromBody(response, error);
  return data as Exclude<D, undefined>;
}

/** A page of a listing (spec 2.0: AIP-158). */
export interface Page<T> {
  items: T[];
  next_page_token: string | null;
}

/**
 * Every item of a listing, walking its pages: `page(token)` fetches one page (the first with
 * `undefined`), e.g. `(page_token) => api.GET("/v1/jobs", { params: { query: { page_size: 500, page_token } } })`.
 */
export async function* pages<T>(
  page: (token: string | undefined) => Promise<{ data?: Page<T>; error?: unknown; response: Response }>,
): AsyncGenerator<T> {
  let token: string | undefined;
  do {
    const p = await unwrap(page(token));
    yield* p.items;
    token = p.next_page_token ?? undefined;
  } while (token);
}

/** Collects an async iterable (e.g. `pages(...)`) into an array. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

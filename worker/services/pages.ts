/** @module AIP-158 pages over an in-memory list (small fixed lists such as camera models). */
import { decodePageToken, encodePageToken } from "../../protocol";
import type { PageRequest, PageResult } from "../storage/sql";

export function paginateArray<T>(all: T[], key: (t: T) => string, page: PageRequest): PageResult<T> {
  // PageQuery has validated the token.
  const after = page.page_token ? decodePageToken(page.page_token) : null;
  const rest = after === null ? all : all.filter((t) => key(t) > after);
  const items = rest.slice(0, page.page_size);
  const last = items.at(-1);
  return {
    items,
    next_page_token: rest.length > page.page_size && last ? encodePageToken(key(last)) : null,
    total: all.length,
  };
}

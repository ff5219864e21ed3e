/**
 * @module Small helpers over Durable Object SQLite storage: versioned migrations, AIP-158
 * keyset pagination (spec 2.0) on ULID primary keys, which sort by creation time, and row lookups.
 */
import { decodePageToken, encodePageToken } from "../../protocol";

/** Applies the migrations not yet applied, each in one transaction. Append-only: never edit a released step. */
export function migrate(storage: DurableObjectStorage, steps: readonly (readonly string[])[]): void {
  const { sql } = storage;
  sql.exec("CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
  const applied = sql.exec<{ v: number }>("SELECT COALESCE(MAX(version), 0) AS v FROM _migrations").one().v;
  for (let v = applied; v < steps.length; v++) {
    storage.transactionSync(() => {
      for (const stmt of steps[v]!) sql.exec(stmt);
      sql.exec("INSERT INTO _migrations (version, applied_at) VALUES (?, ?)", v + 1, new Date().toISOString());
    });
  }
}

export interface PageRequest {
  page_size: number;
  page_token?: string | undefined;
}

export interface PageResult<T> {
  items: T[];
  next_page_token: string | null;
  total: number;
}

/** A token that reached storage unvalidated: PageQuery rejects such tokens at the edge. */
function afterKey(token: string | undefined): string | null {
  if (!token) return null;
  const k = decodePageToken(token);
  if (k === null) throw new Error("page_token reached storage without validation");
  return k;
}

/**
 * Keyset pagination over `table` ordered by `key`, filtered by `where` (a SQL fragment with
 * `?` placeholders bound to `params`). Rows are mapped with `map`.
 */
export function paginate<R extends Record<string, SqlStorageValue>, T>(
  sql: SqlStorage,
  q: { table: string; key: string; where: string; params: SqlStorageValue[] },
  page: PageRequest,
  map: (row: R) => T,
): PageResult<T> {
  const after = afterKey(page.page_token);
  const total = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q.table} WHERE ${q.where}`, ...q.params).one().n;
  const rows = sql
    .exec<R>(
      `SELECT * FROM ${q.table} WHERE ${q.where}${after ? ` AND ${q.key} > ?` : ""} ORDER BY ${q.key} LIMIT ?`,
      ...q.params,
      ...(after ? [after] : []),
      page.page_size + 1,
    )
    .toArray();
  const more = rows.length > page.page_size;
  const items = rows.slice(0, page.page_size);
  const last = items.at(-1);
  return {
    items: items.map(map),
    next_page_token: more && last ? encodePageToken(String(last[q.key])) : null,
    total,
  };
}

export const nowIso = () => new Date().toISOString();

/** The first row a query answers, as the record its columns make (the caller names it), or null. */
export function first<R = Record<string, SqlStorageValue>>(sql: SqlStorage, query: string, ...params: SqlStorageValue[]): R | null {
  return (sql.exec(query, ...params).toArray()[0] as R | undefined) ?? null;
}

/** Whether a query answers any row. */
export function exists(sql: SqlStorage, query: string, ...params: SqlStorageValue[]): boolean {
  return sql.exec(query, ...params).toArray().length > 0;
}

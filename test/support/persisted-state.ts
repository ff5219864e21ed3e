/**
 * @module What a stopped local stack left on disk (test/support/stack-process.ts's state directory),
 * read by Miniflare on the same directory without the Worker: the keys of the R2 bucket under a prefix,
 * and the rows of a job's Durable Object (JobStore) table by table. For fault tests that must show
 * nothing was left behind; only while no stack runs on that directory.
 */
import { join } from "node:path";
import { Miniflare } from "miniflare";

/** wrangler.toml's names: the Worker (wrangler keys each Durable Object class's storage by `<worker>-<class>`) and its bucket. */
const WORKER = "edgesfm";
const BUCKET = "edgesfm-blobs";

/**
 * A JobStore of this name's tables and their row counts (SQLite's and workerd's own tables left out), and the R2 keys
 * under a prefix, as served by a stand-in Worker whose JobStore class only reads its storage.
 */
const INSPECTOR = `
import { DurableObject } from "cloudflare:workers";
export class JobStore extends DurableObject {
  async fetch() {
    const sql = this.ctx.storage.sql;
    const tables = sql
      .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) != 'sqlite_' AND substr(name, 1, 4) != '_cf_'")
      .toArray()
      .map((r) => r.name);
    return Response.json(Object.fromEntries(tables.map((t) => [t, sql.exec('SELECT count(*) AS n FROM "' + t + '"').one().n])));
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/job") return env.JOB.get(env.JOB.idFromName(url.searchParams.get("name"))).fetch(request);
    const keys = [];
    for (let cursor; ; ) {
      const listed = await env.BLOBS.list({ prefix: url.searchParams.get("prefix"), cursor });
      keys.push(...listed.objects.map((o) => o.key));
      if (!listed.truncated) break;
      cursor = listed.cursor;
    }
    return Response.json(keys);
  },
};
`;

export interface PersistedState {
  /** The R2 keys under `prefix`. */
  blobKeys(prefix: string): Promise<string[]>;
  /** Rows per table of the job object named `<tenant>/<job>` (worker/storage/stubs.ts jobStore). */
  jobRows(tenantId: string, jobId: string): Promise<Record<string, number>>;
  dispose(): Promise<void>;
}

/** Opens the state a stack persisted in `stateDir` (wrangler's layout: `<dir>/v3/{do,r2}`). */
export async function openPersistedState(stateDir: string): Promise<PersistedState> {
  const mf = new Miniflare({
    modules: true,
    script: INSPECTOR,
    compatibilityDate: "2026-04-20",
    durableObjects: { JOB: { className: "JobStore", useSQLite: true, unsafeUniqueKey: `${WORKER}-JobStore` } },
    durableObjectsPersist: join(stateDir, "v3", "do"),
    r2Buckets: { BLOBS: BUCKET },
    r2Persist: join(stateDir, "v3", "r2"),
  });
  const get = async (path: string) => (await mf.dispatchFetch(`http://inspector${path}`)).json();
  return {
    blobKeys: async (prefix) => (await get(`/blobs?prefix=${encodeURIComponent(prefix)}`)) as string[],
    jobRows: async (tenantId, jobId) => (await get(`/job?name=${encodeURIComponent(`${tenantId}/${jobId}`)}`)) as Record<string, number>,
    dispose: () => mf.dispose(),
  };
}

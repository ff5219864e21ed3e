/**
 * @module What a tenant has stored, read directly from its Durable Objects' SQLite tables and its
 * R2 objects and digested per table: tests compare it before and after a request that must change
 * nothing (a rejected write, a write that storage failed).
 */
import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { sha256Hex } from "../services/blobs";

/** Columns that change on reads by design (a runner's last poll). */
const VOLATILE = /^(last_seen_at|claiming_until)$/;
/** Tables that background work changes at any moment: the garbage collector's queue, drained by its alarm. */
const BACKGROUND = new Set(["r2_garbage"]);

async function dumpSql(storage: DurableObjectStorage): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const tables = storage.sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name",
    )
    .toArray();
  for (const { name } of tables) {
    if (BACKGROUND.has(name)) continue;
    const rows = storage.sql
      .exec(`SELECT * FROM "${name}"`)
      .toArray()
      .map((r) => Object.entries(r).filter(([k]) => !VOLATILE.test(k)));
    out[name] = JSON.stringify(rows);
  }
  return out;
}

async function digest(v: string): Promise<string> {
  return (await sha256Hex(new TextEncoder().encode(v))).slice(0, 16);
}

/** The ids of the objects of `ns` that exist. */
async function liveIds<T extends Rpc.DurableObjectBranded | undefined>(ns: DurableObjectNamespace<T>): Promise<Set<string>> {
  return new Set((await listDurableObjectIds(ns)).map(String));
}

/** The tables of one object, digested per table into `state`; objects that do not exist are not created. */
async function dumpObject<T extends Rpc.DurableObjectBranded | undefined>(
  label: string,
  ns: DurableObjectNamespace<T>,
  id: DurableObjectId,
  live: Set<string>,
  state: Record<string, string>,
) {
  if (!live.has(id.toString())) return;
  const tables = await runInDurableObject(ns.get(id), (_o, s) => dumpSql(s.storage));
  for (const [t, v] of Object.entries(tables)) state[`${label}.${t}`] = (state[`${label}.${t}`] ?? "") + (await digest(v));
}

/**
 * Everything a tenant stores, digested by table: its TenantStore, its dispatch queue, the JobStore
 * of every job name in `jobNames` (an object for an absent job must not appear), and its R2
 * objects. (The key registry and the volunteer pool are global; other files' tests change them.)
 */
export function storageState(tenant: string, jobNames: Iterable<string>): () => Promise<Record<string, string>> {
  return async () => {
    const state: Record<string, string> = {};
    await dumpObject("TenantStore", env.TENANT, env.TENANT.idFromName(tenant), await liveIds(env.TENANT), state);
    await dumpObject("Dispatcher", env.DISPATCH, env.DISPATCH.idFromName(`tenant/${tenant}`), await liveIds(env.DISPATCH), state);
    const jobs = await liveIds(env.JOB);
    for (const name of [...jobNames].sort())
      await dumpObject(`JobStore(${name})`, env.JOB, env.JOB.idFromName(`${tenant}/${name}`), jobs, state);
    const objects: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await env.BLOBS.list({ prefix: `t/${tenant}/`, cursor, limit: 1000 });
      objects.push(...page.objects.map((o) => `${o.key}:${o.etag}`));
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
    state.R2 = await digest(objects.join("\n"));
    return state;
  };
}

/**
 * Schema upgrades: a Durable Object whose database was created at any earlier migration version
 * is upgraded to the latest one, when the object starts, with its data intact.
 *
 * How: real data is made through the API (a project, a dataset of images, an upload, a pipeline
 * job run to a sealed reconstruction with its artifacts, a pose prior, a runner). For every
 * earlier version v of each object's migration list, the object's database is rebuilt as it was
 * at v: the first v steps, then every row of the real data on the columns those steps have. The
 * object is then restarted (its constructor applies the remaining steps, exactly as a deploy
 * does) and must hold: the schema of a fresh database, every row with every value it had at v,
 * and the same API answers about those rows as before. Steps appended later (migrations are
 * append-only lists) are covered by the same loop. The KeyRegistry has one version, so nothing
 * to upgrade from.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { expectStatus, getSealed, tenantClient, uploadBlob, type Call } from "../test/helpers";
import { LUND_01 } from "../test/photos";
import { scene, sealedReconstruction } from "../test/scene";
import { MIGRATIONS as DISPATCHER_MIGRATIONS } from "./dispatcher";
import { JOB_MIGRATIONS } from "./job-migrations";
import { migrate } from "./sql";
import { TENANT_MIGRATIONS } from "./tenant-migrations";

const TENANT = "migrations";

type Row = Record<string, SqlStorageValue>;
type Tables = Record<string, Row[]>;

/** The tables in the order they were made (a table before those whose foreign keys name it). */
const userTables = (sql: SqlStorage) =>
  sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> '_migrations' ORDER BY rowid",
    )
    .toArray()
    .map((t) => t.name);

const columnsOf = (sql: SqlStorage, table: string) =>
  sql
    .exec<{ name: string }>(`PRAGMA table_info("${table}")`)
    .toArray()
    .map((c) => c.name);

/** Every row of every table, in primary-key order (rowid order for tables without one). */
function rowsOf(sql: SqlStorage): Tables {
  return Object.fromEntries(userTables(sql).map((t) => [t, sql.exec<Row>(`SELECT * FROM "${t}" ORDER BY rowid`).toArray()]));
}

/** The schema as SQLite keeps it: every table's and index's DDL. */
const schemaOf = (sql: SqlStorage) =>
  sql
    .exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE '_cf_%' ORDER BY type, name")
    .toArray()
    .map((r) => r.sql.replace(/\s+/g, " "));

async function dump<T extends Rpc.DurableObjectBranded | undefined>(
  stub: DurableObjectStub<T>,
): Promise<{ rows: Tables; schema: string[]; version: number }> {
  return runInDurableObject(stub, (_o, state) => {
    const { sql } = state.storage;
    return {
      rows: rowsOf(sql),
      schema: schemaOf(sql),
      version: sql.exec<{ v: number }>("SELECT MAX(version) AS v FROM _migrations").one().v,
    };
  });
}

/**
 * Rebuilds the object's database as it was at `version`: the first `version` steps, then `rows`
 * on the columns those steps made (tables they had not made yet are left out). Then restarts the
 * object, whose constructor runs the remaining steps on the next request.
 */
async function rebuildAt<T extends Rpc.DurableObjectBranded | undefined>(
  ns: DurableObjectNamespace<T>,
  name: string,
  steps: readonly (readonly string[])[],
  version: number,
  rows: Tables,
): Promise<Tables> {
  const kept = await runInDurableObject(ns.get(ns.idFromName(name)), (_o, state) => {
    const { sql } = state.storage;
    for (const t of [...userTables(sql).reverse(), "_migrations"]) sql.exec(`DROP TABLE IF EXISTS "${t}"`);
    migrate(state.storage, steps.slice(0, version));
    const at: Tables = {};
    for (const table of userTables(sql)) {
      const columns = columnsOf(sql, table);
      at[table] = (rows[table] ?? []).map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
      for (const r of at[table]) {
        sql.exec(
          `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
          ...columns.map((c) => r[c]!),
        );
      }
    }
    return at;
  });
  // A restart, as a deploy of new code does: the next request constructs the object anew.
  await runInDurableObject(ns.get(ns.idFromName(name)), (_o, state) => state.abort("upgrade")).catch(() => undefined);
  return kept;
}

/** Rows of `now` restricted to the columns `before` has: equal to `before` when nothing was lost or changed. */
function asBefore(before: Tables, now: Tables): Tables {
  return Object.fromEntries(
    Object.entries(before).map(([t, rows]) => [
      t,
      (now[t] ?? []).map((r) => Object.fromEntries(Object.keys(rows[0] ?? r).map((c) => [c, r[c] ?? null]))),
    ]),
  );
}

const earlier = (steps: readonly unknown[]) => Array.from({ length: steps.length - 1 }, (_, i) => i + 1);

interface Probe {
  /** A table the answer depends on: probed only when the database had it at that version. */
  table: string;
  path: string;
  /** What of the answer to compare (default: all of it). */
  pick?: (json: any) => unknown;
}

describe("schema upgrades from every earlier version (append-only migrations)", () => {
  let as: Call;
  let ids: { pid: string; did: string; rid: string; jid: string; iid: string; uid: string; runner: string };
  let probes: Probe[];
  /** The API's answers before any rebuild. */
  const answers = new Map<string, unknown>();

  beforeAll(async () => {
    const tenant = await tenantClient(TENANT);
    as = tenant.call;
    const sealed = await sealedReconstruction(scene(12), tenant);
    const photo = await uploadBlob(LUND_01, {}, as);
    const image = await expectStatus(as("POST", `/v1/datasets/${sealed.did}/images`, { name: "lund.jpg", blob_sha: photo }), 201);
    await expectStatus(
      as("PUT", `/v1/images/${image.json.image_id}/pose_prior`, {
        cam_from_world: { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [1, 2, 3] },
      }),
      200,
    );
    const open = await expectStatus(as("POST", "/v1/uploads", { expected_size: 10 }, { "Idempotency-Key": "migrations-upload" }), 201);
    await expectStatus(as("PATCH", `/v1/uploads/${open.json.upload_id}`, new Uint8Array(4), { "Content-Range": "bytes 0-3/10" }), 200);
    ids = {
      pid: sealed.pid,
      did: sealed.did,
      rid: sealed.rid,
      jid: sealed.jid,
      iid: image.json.image_id,
      uid: open.json.upload_id,
      runner: sealed.runner.runner!.runner_id,
    };
    const taskStates = (j: any) => ({ status: j.status, tasks: j.tasks.map((t: any) => [t.kind, t.status, t.attempts, t.cache_key]) });
    probes = [
      { table: "projects", path: `/v1/projects/${ids.pid}` },
      {
        table: "datasets",
        path: `/v1/projects/${ids.pid}/datasets/${ids.did}`,
        pick: ({ manifest_hash, name, camera_model, source_id }) => ({ manifest_hash, name, camera_model, source_id }),
      },
      {
        table: "images",
        path: `/v1/datasets/${ids.did}/images`,
        pick: (j) => j.items.map((i: any) => [i.image_id, i.name, i.content_sha, i.width, i.height]),
      },
      { table: "images", path: `/v1/images/${ids.iid}/bytes`, pick: (j) => j },
      { table: "uploads", path: `/v1/uploads/${ids.uid}` },
      { table: "jobs", path: `/v1/jobs?page_size=500`, pick: (j) => j.items.map((x: any) => [x.job_id, x.status]) },
      { table: "jobs", path: `/v1/jobs/${ids.jid}`, pick: taskStates },
      { table: "tasks", path: `/v1/jobs/${ids.jid}`, pick: taskStates },
      { table: "events", path: `/v1/jobs/${ids.jid}/events` },
      {
        table: "events",
        path: `/v1/jobs/${ids.jid}/progress`,
        pick: ({ latest_event_id, progress, task_counts }) => ({ latest_event_id, progress, task_counts }),
      },
      { table: "reconstructions", path: `/v1/reconstructions/${ids.rid}` },
      { table: "snapshots", path: `/v1/reconstructions/${ids.rid}/snapshots` },
      { table: "snapshot_files", path: `/v1/reconstructions/${ids.rid}/snapshots/1/cameras.json` },
      {
        table: "submodels",
        path: `/v1/reconstructions/${ids.rid}/submodels`,
        pick: (j) => j.items.map((s: any) => [s.submodel_id, s.idx, s.snapshot_seq, s.summary]),
      },
      {
        table: "artifacts",
        path: `/v1/jobs/${ids.jid}/artifacts?page_size=500`,
        pick: (j) => j.items.map((a: any) => [a.artifact_id, a.kind, a.files]),
      },
      { table: "pose_priors", path: `/v1/images/${ids.iid}/pose_prior` },
      {
        table: "runners",
        path: `/v1/runners/${ids.runner}`,
        pick: ({ runner_id, name, rv_id, stages }) => ({ runner_id, name, rv_id, stages }),
      },
    ];
    for (const p of probes) answers.set(p.path, await answer(p));
  }, 120_000);

  async function answer(p: Probe): Promise<unknown> {
    const r = await expectStatus(getSealed(as, p.path), 200);
    // An event stream (of a finished job: the whole log, then closed) as its text; other bytes by their length.
    const body =
      r.json ??
      (r.headers.get("Content-Type")?.startsWith("text/event-stream") ? await r.res.text() : (await r.res.arrayBuffer()).byteLength);
    return (p.pick ?? ((x) => x))(body);
  }

  /** The upgrade of one object from `version`, checked: schema, rows, and the API's answers. */
  async function upgradeFrom<T extends Rpc.DurableObjectBranded | undefined>(
    ns: DurableObjectNamespace<T>,
    name: string,
    steps: readonly (readonly string[])[],
    version: number,
  ) {
    const stub = () => ns.get(ns.idFromName(name));
    const latest = await dump(stub());
    const kept = await rebuildAt(ns, name, steps, version, latest.rows);
    expect(
      Object.values(kept).some((rows) => rows.length > 0),
      "the rebuilt database holds data",
    ).toBe(true);
    // The first request starts the object: its constructor upgrades the database.
    for (const p of probes) {
      if (!(p.table in kept)) continue;
      expect(await answer(p), `GET ${p.path} after the upgrade from version ${version}`).toEqual(answers.get(p.path));
    }
    const upgraded = await dump(stub());
    expect(upgraded.version).toBe(steps.length);
    expect(upgraded.schema).toEqual(latest.schema);
    expect(asBefore(kept, upgraded.rows)).toEqual(kept);
    // Back to the full data, for the next version's rebuild.
    await rebuildAt(ns, name, steps, steps.length, latest.rows);
  }

  it.each(earlier(TENANT_MIGRATIONS))(
    "a TenantStore at version %i is upgraded to the latest with its rows and answers intact",
    async (version) => {
      await upgradeFrom(env.TENANT, TENANT, TENANT_MIGRATIONS, version);
    },
  );

  it.each(earlier(JOB_MIGRATIONS))(
    "a JobStore at version %i is upgraded to the latest with its job, tasks and events intact",
    async (version) => {
      await upgradeFrom(env.JOB, `${TENANT}/${ids.jid}`, JOB_MIGRATIONS, version);
    },
  );

  it.each(earlier(DISPATCHER_MIGRATIONS))(
    "a Dispatcher at version %i is upgraded to the latest with its runners and queue intact",
    async (version) => {
      await upgradeFrom(env.DISPATCH, `tenant/${TENANT}`, DISPATCHER_MIGRATIONS, version);
    },
  );
});

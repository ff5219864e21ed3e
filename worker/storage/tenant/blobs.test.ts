/**
 * Reference counts of a tenant's blobs (docs/architecture.md, "Storage"): bytes are stored once per
 * tenant, each holder keeps references, and the last one released queues them for deletion.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { tenantStore } from "../stubs";
import * as blobs from "./blobs";

/** Runs `body` on the storage of a tenant object of its own. */
const inTenant = <T>(body: (db: DurableObjectStorage) => T) =>
  runInDurableObject(tenantStore(env, `blobs-test-${crypto.randomUUID()}`), (_o, state) => body(state.storage));

const facts = (sha: string) => ({
  sha,
  r2_key: `t/blobs-test/blobs/${sha}`,
  size: 3,
  media_type: null,
  width: null,
  height: null,
  focal_length_35mm: null,
  gps_json: null,
});
const garbage = (db: DurableObjectStorage) =>
  db.sql
    .exec<{ r2_key: string }>("SELECT r2_key FROM r2_garbage ORDER BY r2_key")
    .toArray()
    .map((r) => r.r2_key);

describe("blob references", () => {
  it("a blob held by a job, a reconstruction and an artifact stays stored until the last lets go; then its bytes and derived objects are garbage", async () => {
    const result = await inTenant((db) => {
      blobs.retain(db, facts("a1"));
      blobs.hold(db, "job", "J", "a1");
      blobs.hold(db, "recon", "R", "a1");
      blobs.hold(db, "artifact", "A", "a1");
      const counts = [blobs.get(db, "a1")?.refcount];
      blobs.release(db, "a1");
      blobs.letGoAll(db, "job", "J");
      blobs.letGo(db, "recon", "R", "a1");
      counts.push(blobs.get(db, "a1")?.refcount);
      const before = garbage(db);
      blobs.letGoAll(db, "artifact", "A");
      return { counts, before, stored: blobs.get(db, "a1"), after: garbage(db) };
    });
    expect(result.counts).toEqual([4, 1]);
    expect(result.before).toEqual([]);
    expect(result.stored).toBeNull();
    expect(result.after).toEqual(["t/blobs-test/blobs/a1", "t/blobs-test/blobs/a1/"]);
  });

  it("a holder holds a blob once: holding it again takes no second reference", async () => {
    const refcount = await inTenant((db) => {
      blobs.retain(db, facts("b1"));
      blobs.hold(db, "job", "J", "b1");
      blobs.hold(db, "job", "J", "b1");
      blobs.holdNew(db, "job", "J", facts("b1"));
      return blobs.get(db, "b1")?.refcount;
    });
    expect(refcount).toBe(2);
  });

  it("bytes stored again while queued as garbage leave the queue", async () => {
    const result = await inTenant((db) => {
      blobs.holdNew(db, "job", "J", facts("c1"));
      blobs.letGoAll(db, "job", "J");
      const queued = garbage(db);
      blobs.retain(db, facts("c1"));
      return { queued, after: garbage(db), refcount: blobs.get(db, "c1")?.refcount };
    });
    expect(result.queued).toEqual(["t/blobs-test/blobs/c1", "t/blobs-test/blobs/c1/"]);
    expect(result.after).toEqual([]);
    expect(result.refcount).toBe(1);
  });

  it("bytes stored before their focal length was read gain it when finalized again; bytes stored again without one keep it", async () => {
    const focal = await inTenant((db) => {
      blobs.retain(db, facts("d1"));
      blobs.retain(db, { ...facts("d1"), focal_length_35mm: 35 });
      blobs.holdNew(db, "job", "J", facts("d1"));
      return blobs.get(db, "d1")?.focal_length_35mm;
    });
    expect(focal).toBe(35);
  });
});

/**
 * @module The runner's content-addressed cache: bytes keyed by SHA-256, so a runner never
 * downloads the same image or artifact twice. IndexedDB (idb) in browsers, a bounded
 * in-memory map elsewhere; both evict the least recently used entries past their budget.
 */
import { openDB, type IDBPDatabase } from "idb";

export interface BlobCache {
  get(sha: string): Promise<Uint8Array | undefined>;
  put(sha: string, bytes: Uint8Array): Promise<void>;
}

export class MemoryBlobCache implements BlobCache {
  private readonly entries = new Map<string, Uint8Array>();
  private bytes = 0;

  constructor(private readonly budgetBytes = 512 * 1024 * 1024) {}

  async get(sha: string): Promise<Uint8Array | undefined> {
    const hit = this.entries.get(sha);
    if (hit) {
      // Re-insert: Map iteration order is the recency order.
      this.entries.delete(sha);
      this.entries.set(sha, hit);
    }
    return hit;
  }

  async put(sha: string, bytes: Uint8Array): Promise<void> {
    if (this.entries.has(sha) || bytes.byteLength > this.budgetBytes) return;
    this.entries.set(sha, bytes);
    this.bytes += bytes.byteLength;
    for (const [key, value] of this.entries) {
      if (this.bytes <= this.budgetBytes) break;
      this.entries.delete(key);
      this.bytes -= value.byteLength;
    }
  }
}

interface Entry {
  sha: string;
  bytes: Uint8Array;
  size: number;
  used_at: number;
}

export class IdbBlobCache implements BlobCache {
  private db: Promise<IDBPDatabase> | null = null;

  constructor(
    private readonly budgetBytes = 1024 * 1024 * 1024,
    private readonly name = "edgesfm-blobs",
  ) {}

  private open(): Promise<IDBPDatabase> {
    this.db ??= openDB(this.name, 1, {
      upgrade(db) {
        const store = db.createObjectStore("blobs", { keyPath: "sha" });
        store.createIndex("used_at", "used_at");
      },
    });
    return this.db;
  }

  async get(sha: string): Promise<Uint8Array | undefined> {
    const db = await this.open();
    const entry = (await db.get("blobs", sha)) as Entry | undefined;
    if (!entry) return undefined;
    await db.put("blobs", { ...entry, used_at: Date.now() });
    return entry.bytes;
  }

  async put(sha: string, bytes: Uint8Array): Promise<void> {
    const db = await this.open();
    await db.put("blobs", { sha, bytes, size: bytes.byteLength, used_at: Date.now() } satisfies Entry);
    await this.evict(db);
  }

  private async evict(db: IDBPDatabase): Promise<void> {
    const tx = db.transaction("blobs", "readwrite");
    let total = 0;
    for (let c = await tx.store.openCursor(); c; c = await c.continue()) total += (c.value as Entry).size;
    for (let c = await tx.store.index("used_at").openCursor(); c && total > this.budgetBytes; c = await c.continue()) {
      total -= (c.value as Entry).size;
      await c.delete();
    }
    await tx.done;
  }
}

/** IndexedDB where the platform has it, memory otherwise. */
export function defaultBlobCache(): BlobCache {
  return typeof indexedDB !== "undefined" ? new IdbBlobCache() : new MemoryBlobCache();
}

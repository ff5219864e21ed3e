import { describe, expect, it } from "vitest";
import { MemoryBlobCache } from "./blob-cache";

describe("runner blob cache", () => {
  it("returns what was put and evicts the least recently used past its budget", async () => {
    const cache = new MemoryBlobCache(10);
    await cache.put("a", new Uint8Array(4));
    await cache.put("b", new Uint8Array(4));
    await cache.get("a"); // a is now the most recent
    await cache.put("c", new Uint8Array(4));
    expect(await cache.get("a")).toBeDefined();
    expect(await cache.get("b")).toBeUndefined();
    expect(await cache.get("c")).toBeDefined();
  });

  it("never holds an entry larger than the whole budget", async () => {
    const cache = new MemoryBlobCache(3);
    await cache.put("big", new Uint8Array(4));
    expect(await cache.get("big")).toBeUndefined();
  });
});

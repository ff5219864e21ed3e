// The bounded image cache of the match executor and the order it visits a block's pairs in.
import { describe, expect, it } from "vitest";
import { HeldImages, localityOrder } from "./held-images";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("HeldImages", () => {
  it("warm reads what is not held, unpinned, once; a later acquire takes it without reading again", async () => {
    const loads: string[] = [];
    const held = new HeldImages(3, async (name) => {
      loads.push(name);
      if (name === "x") throw new Error("unreadable");
      return name.toUpperCase();
    });
    await held.acquire(["a"]);
    held.warm(["a", "b", "x"]);
    expect(loads).toEqual(["a", "b", "x"]);
    expect(await held.acquire(["b"])).toEqual(["B"]);
    expect(loads).toEqual(["a", "b", "x"]);
    // A warmed read that failed fails the acquire that meets it, as its own read would have; nothing is left pending.
    await expect(held.acquire(["x"])).rejects.toThrow("unreadable");
    await held.settled();
    expect(held.reads).toBe(3);
  });

  it("holds at most `capacity` images, evicting the least recently used, and reads an image once while held", async () => {
    const loads: string[] = [];
    const held = new HeldImages(2, async (name) => (loads.push(name), name.toUpperCase()));
    expect(await held.acquire(["a", "b"])).toEqual(["A", "B"]);
    held.release(["a", "b"]);
    await held.acquire(["a"]); // a is now the most recent
    held.release(["a"]);
    await held.acquire(["c"]); // evicts b
    held.release(["c"]);
    await held.acquire(["a"]);
    held.release(["a"]);
    await held.acquire(["b"]);
    held.release(["b"]);
    expect(loads).toEqual(["a", "b", "c", "b"]);
    expect(held.peak).toBe(2);
    expect(held.reads).toBe(4);
  });

  it("never evicts an image in use, and pairs in flight share one read of an image", async () => {
    let loading = 0;
    const held = new HeldImages(2, async (name) => {
      loading += 1;
      await sleep(5);
      return name;
    });
    const first = held.acquire(["a", "b"]);
    const second = held.acquire(["a", "c"]); // a is read once; b and a stay pinned, so c goes past capacity
    expect(await Promise.all([first, second])).toEqual([
      ["a", "b"],
      ["a", "c"],
    ]);
    expect(loading).toBe(3);
    expect(held.peak).toBe(3);
    held.release(["a", "b"]);
    held.release(["a", "c"]);
    await held.acquire(["d"]);
    expect(held.reads).toBe(4);
  });

  it("lets go of an image whose read failed", async () => {
    const held = new HeldImages(1, async (name) => {
      if (name === "bad") throw new Error("no such image");
      return name;
    });
    await expect(held.acquire(["bad"])).rejects.toThrow("no such image");
    expect(await held.acquire(["good"])).toEqual(["good"]);
  });
});

describe("localityOrder", () => {
  it("is a permutation visiting the pairs tile pair by tile pair, each tile pair reading at most two tiles", () => {
    const names = Array.from({ length: 20 }, (_, i) => `i${i}`);
    const pairs = names.flatMap((a, i) => names.slice(i + 1).map((b) => ({ imageName1: a, imageName2: b })));
    const order = localityOrder(pairs, 4);
    expect([...order].sort((x, y) => x - y)).toEqual(pairs.map((_, k) => k));
    // Replay with a cache of two tiles: far fewer reads than pairs.
    const held = new HeldImages(8, async (name: string) => name);
    return (async () => {
      for (const k of order) {
        const names = [pairs[k]!.imageName1, pairs[k]!.imageName2];
        await held.acquire(names);
        held.release(names);
      }
      expect(held.peak).toBe(8);
      expect(held.reads).toBeLessThan(pairs.length / 2);
    })();
  });
});

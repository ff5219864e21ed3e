/**
 * @module The images a match shard holds while it matches (issue 18, Memory): a block can hold
 * hundreds of images (the pairs between two content groups of a large set), so their features are
 * read as pairs need them and kept in a cache of at most `capacity` images, least recently used
 * out first. `localityOrder` visits a block's pairs tile by tile (two tiles of `capacity / 2`
 * images each), so that each image is read a few times per block rather than once per pair.
 */
import type { ImagePair } from "../../stages/pairs";

export class HeldImages<T> {
  /** Map order is recency order: the first unpinned entry is evicted first. */
  private readonly entries = new Map<string, { value: Promise<T>; pins: number }>();
  /** The most images held at once. */
  peak = 0;
  /** Images read (a re-read after eviction counts again). */
  reads = 0;

  constructor(
    readonly capacity: number,
    private readonly load: (name: string) => Promise<T>,
  ) {}

  /**
   * The named images' values, held until `release`d with the same names. Loads what is not held,
   * first evicting unpinned images past `capacity` (pinned ones stay: at most two per pair in flight).
   */
  async acquire(names: readonly string[]): Promise<T[]> {
    const entries = names.map((name) => {
      let entry = this.entries.get(name);
      if (entry) this.entries.delete(name);
      else {
        this.evict(this.capacity - 1);
        this.reads += 1;
        entry = { value: this.load(name), pins: 0 };
      }
      this.entries.set(name, entry);
      entry.pins += 1;
      return entry;
    });
    this.peak = Math.max(this.peak, this.entries.size);
    try {
      return await Promise.all(entries.map((e) => e.value));
    } catch (error) {
      // Nothing keeps a failed read: the next acquire reads the image again.
      this.release(names);
      for (const name of names) if (this.entries.get(name)?.pins === 0) this.entries.delete(name);
      throw error;
    }
  }

  /**
   * Starts reading the named images that are not held, unpinned (a later `acquire` finds them
   * there): the next pairs' features are read while this pair is matched. An `acquire` that meets
   * a failed read fails as its own read would have.
   */
  warm(names: readonly string[]): void {
    for (const name of names) {
      if (this.entries.has(name)) continue;
      this.evict(this.capacity - 1);
      this.reads += 1;
      const value = this.load(name);
      value.catch(() => {});
      this.entries.set(name, { value, pins: 0 });
      this.peak = Math.max(this.peak, this.entries.size);
    }
  }

  /** Settles when every read started so far has (nothing a task started outlives it). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.entries.values()].map((e) => e.value));
  }

  release(names: readonly string[]): void {
    for (const name of names) {
      const entry = this.entries.get(name);
      if (entry) entry.pins -= 1;
    }
  }

  private evict(keep: number): void {
    for (const [name, entry] of this.entries) {
      if (this.entries.size <= keep) return;
      if (entry.pins === 0) this.entries.delete(name);
    }
  }
}

/**
 * The indices of `pairs` in an order that visits them tile by tile: the images numbered as the
 * pairs first name them, cut into tiles of `tile` images, and the pairs between two tiles (or
 * within one) taken together, in their own order. A tile pair reads at most 2 x `tile` images.
 */
export function localityOrder(pairs: readonly ImagePair[], tile: number): number[] {
  const number = new Map<string, number>();
  const tileOf = (name: string) => {
    if (!number.has(name)) number.set(name, number.size);
    return Math.floor(number.get(name)! / Math.max(1, tile));
  };
  const keyed = pairs.map((p, k) => {
    const [a, b] = [tileOf(p.imageName1), tileOf(p.imageName2)].sort((x, y) => x - y) as [number, number];
    return { a, b, k };
  });
  return keyed.sort((x, y) => x.a - y.a || x.b - y.b || x.k - y.k).map((e) => e.k);
}

import { describe, expect, it } from "vitest";
import { type ImageCluster, type WeightedEdge, connectedParts, partitionViewGraph } from "./partition";

/** A chain of photos (a walk): each matches its next with 200 inliers and the one after with 80. */
const chain = (n: number): WeightedEdge[] =>
  Array.from({ length: n }, (_, i) => [
    ...(i + 1 < n ? [{ image1: i, image2: i + 1, weight: 200 }] : []),
    ...(i + 2 < n ? [{ image1: i, image2: i + 2, weight: 80 }] : []),
  ]).flat();

/** A w x h grid of photos, each matching its 4 neighbours (inliers falling off with the index, so no two weights tie). */
const grid = (w: number, h: number): WeightedEdge[] => {
  const edges: WeightedEdge[] = [];
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      if (x + 1 < w) edges.push({ image1: i, image2: i + 1, weight: 150 + ((7 * i) % 13) });
      if (y + 1 < h) edges.push({ image1: i, image2: i + w, weight: 120 + ((5 * i) % 11) });
    }
  return edges;
};

/** Every image of `nodes` reached from the first through edges inside `nodes`. */
function connected(edges: readonly WeightedEdge[], nodes: readonly number[]): boolean {
  const inside = new Set(nodes);
  const seen = new Set([nodes[0]!]);
  const queue = [nodes[0]!];
  while (queue.length) {
    const a = queue.pop()!;
    for (const e of edges) {
      const b = e.image1 === a ? e.image2 : e.image2 === a ? e.image1 : null;
      if (b !== null && inside.has(b) && !seen.has(b)) {
        seen.add(b);
        queue.push(b);
      }
    }
  }
  return seen.size === inside.size;
}

/** The properties every partition has: cores of at most maxSize, disjoint, covering every image on an edge, connected; overlap within bounds and on edges of the core. */
function expectValid(edges: WeightedEdge[], clusters: ImageCluster[], maxSize: number, overlap: number) {
  const onEdges = new Set(edges.flatMap((e) => [e.image1, e.image2]));
  const cores = clusters.flatMap((c) => c.core);
  expect(new Set(cores).size).toBe(cores.length);
  expect(new Set(cores)).toEqual(onEdges);
  for (const c of clusters) {
    expect(c.core.length).toBeLessThanOrEqual(maxSize);
    expect(connected(edges, c.core)).toBe(true);
    const extra = c.images.filter((i) => !c.core.includes(i));
    expect(c.images).toEqual([...c.images].sort((a, b) => a - b));
    expect(c.core.every((i) => c.images.includes(i))).toBe(true);
    expect(extra.length).toBeLessThanOrEqual(overlap);
    // Each overlap image is on an edge into the core.
    for (const o of extra)
      expect(edges.some((e) => (e.image1 === o && c.core.includes(e.image2)) || (e.image2 === o && c.core.includes(e.image1)))).toBe(true);
  }
}

/** Whether clusters sharing at least `min` images link every cluster to every other (what the merge needs to join them all). */
function linkedBySharedImages(clusters: ImageCluster[], min: number): boolean {
  const seen = new Set([0]);
  const queue = [0];
  while (queue.length) {
    const a = queue.pop()!;
    clusters.forEach((c, b) => {
      if (seen.has(b)) return;
      const shared = c.images.filter((i) => clusters[a]!.images.includes(i)).length;
      if (shared >= min) {
        seen.add(b);
        queue.push(b);
      }
    });
  }
  return seen.size === clusters.length;
}

describe("partitioning the view graph (hierarchical mapping, 2.12)", () => {
  it("a chain of 40 photos: cores of at most 12 in runs of the chain, each grown by 4 neighbours, linked end to end by shared photos", () => {
    const edges = chain(40);
    const clusters = partitionViewGraph(edges, { maxSize: 12, overlap: 4 });
    expectValid(edges, clusters, 12, 4);
    expect(clusters.length).toBeGreaterThanOrEqual(4);
    expect(clusters.length).toBeLessThanOrEqual(6);
    // A run of the chain: its core is consecutive photos.
    for (const c of clusters) expect(c.core.at(-1)! - c.core[0]!).toBe(c.core.length - 1);
    expect(clusters.every((c) => c.images.length === c.core.length + 4 || c.core.includes(0) || c.core.includes(39))).toBe(true);
    expect(linkedBySharedImages(clusters, 3)).toBe(true);
  });

  it("two groups joined by one weak pair are cut there", () => {
    const clique = (from: number) =>
      Array.from({ length: 10 }, (_, i) =>
        Array.from({ length: i }, (_, j) => ({ image1: from + j, image2: from + i, weight: 300 })),
      ).flat();
    const edges = [...clique(0), ...clique(10), { image1: 4, image2: 15, weight: 20 }];
    const clusters = partitionViewGraph(edges, { maxSize: 12, overlap: 1 });
    expectValid(edges, clusters, 12, 1);
    expect(clusters.map((c) => c.core)).toEqual([Array.from({ length: 10 }, (_, i) => i), Array.from({ length: 10 }, (_, i) => 10 + i)]);
    // The overlap is each side's end of the weak pair.
    expect(clusters.map((c) => c.images.filter((i) => !c.core.includes(i)))).toEqual([[15], [4]]);
  });

  it("a 9 x 9 grid with clusters of at most 10: valid, balanced enough, linked by shared photos", () => {
    const edges = grid(9, 9);
    // A block of a grid has as many neighbours outside as inside: an overlap of 5 leaves some neighbouring blocks sharing under 3.
    const clusters = partitionViewGraph(edges, { maxSize: 10, overlap: 8 });
    expectValid(edges, clusters, 10, 8);
    // 81 photos in parts of at most 10: no more than twice the fewest possible.
    expect(clusters.length).toBeGreaterThanOrEqual(9);
    expect(clusters.length).toBeLessThanOrEqual(18);
    expect(linkedBySharedImages(clusters, 3)).toBe(true);
  });

  it("components are cut apart, photos on no edge are in no cluster, a graph that fits is one cluster with no overlap", () => {
    const edges = [...chain(5), ...chain(30).map((e) => ({ ...e, image1: e.image1 + 100, image2: e.image2 + 100 }))];
    const clusters = partitionViewGraph([...edges, { image1: 50, image2: 51, weight: 0 }], { maxSize: 8, overlap: 2 });
    expectValid(edges, clusters, 8, 2);
    expect(clusters.flatMap((c) => c.images)).not.toContain(50);
    // The first component fits: one cluster, and nothing outside it is joined to it.
    const small = clusters.find((c) => c.core.includes(0))!;
    expect(small).toEqual({ core: [0, 1, 2, 3, 4], images: [0, 1, 2, 3, 4] });
    expect(clusters.filter((c) => c !== small).every((c) => c.images.every((i) => i >= 100))).toBe(true);
    expect(partitionViewGraph(chain(6), { maxSize: 100, overlap: 25 })).toEqual([{ core: [0, 1, 2, 3, 4, 5], images: [0, 1, 2, 3, 4, 5] }]);
  });

  it("is deterministic and refuses clusters of fewer than 2 photos", () => {
    const edges = grid(7, 5);
    expect(partitionViewGraph(edges, { maxSize: 6, overlap: 3 })).toEqual(
      partitionViewGraph([...edges].reverse(), { maxSize: 6, overlap: 3 }),
    );
    expect(() => partitionViewGraph(edges, { maxSize: 1, overlap: 0 })).toThrow(/at least 2/);
    expect(partitionViewGraph([], { maxSize: 4, overlap: 1 })).toEqual([]);
  });
});

describe("connectedParts (the global mapper maps each as a model of its own)", () => {
  it("answers the connected parts of the pairs' graph, largest first; images on no pair are in none", () => {
    const pair = (image1: number, image2: number) => ({ image1, image2 });
    // Two places: 0-1-2-3 (a chain, then a loop back) and 5-7-8; image 4 on no pair; 6-9 a stray pair.
    const pairs = [pair(0, 1), pair(1, 2), pair(2, 3), pair(3, 0), pair(7, 5), pair(8, 7), pair(6, 9)];
    expect(connectedParts(pairs)).toEqual([
      [0, 1, 2, 3],
      [5, 7, 8],
      [6, 9],
    ]);
    expect(connectedParts([])).toEqual([]);
  });
});

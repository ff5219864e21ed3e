/**
 * @module The view graph cut into clusters for hierarchical mapping (spec 2.12 `hierarchical`:
 * `cluster_max_size`, `cluster_overlap`), as COLMAP's SceneClustering does it: the graph of
 * images, each verified pair an edge weighted by its inlier count, is split in two by a
 * normalized cut (Shi and Malik 2000) again and again until every part holds at most
 * `cluster_max_size` images; each part is then grown by up to `cluster_overlap` images from
 * outside it, those on its strongest edges, so that neighbouring clusters share the photos their
 * models are later joined by (a Sim3 from shared images, stages/merge.ts).
 *
 * The normalized cut is spectral: the second eigenvector of D^-1/2 W D^-1/2 (power iteration,
 * started from the breadth-first distances across the graph, which already order a chain of
 * photos) ordered and swept for the prefix of least normalized cut; neighbouring parts that fit
 * together are then joined again. Every part is connected: a
 * piece a cut leaves apart from its side goes to the other side, to which it is joined. Images on
 * no edge cannot register and are in no cluster; each connected component is cut on its own.
 */

export interface WeightedEdge {
  image1: number;
  image2: number;
  /** Inlier matches of the pair; edges of weight <= 0 are left out. */
  weight: number;
}

export interface PartitionOptions {
  /** Images a cluster holds before its overlap (at least 2). */
  maxSize: number;
  /** Images from outside it a cluster is grown by. */
  overlap: number;
}

export interface ImageCluster {
  /** The cluster's own images, ascending; the cores of all clusters are disjoint. */
  core: number[];
  /** The core and its overlap images, ascending. */
  images: number[];
}

type Adjacency = Map<number, Map<number, number>>;

const length = (x: readonly number[]) => Math.sqrt(x.reduce((s, xi) => s + xi * xi, 0));

/** Power iterations of one cut at most: enough to sharpen the breadth-first start on thousands of images. */
const MAX_ITERATIONS = 300;

function adjacencyOf(edges: readonly WeightedEdge[]): Adjacency {
  const adjacency: Adjacency = new Map();
  const add = (a: number, b: number, w: number) => {
    if (!adjacency.has(a)) adjacency.set(a, new Map());
    const m = adjacency.get(a)!;
    m.set(b, (m.get(b) ?? 0) + w);
  };
  for (const e of edges) {
    if (!(e.weight > 0) || e.image1 === e.image2) continue;
    add(e.image1, e.image2, e.weight);
    add(e.image2, e.image1, e.weight);
  }
  return adjacency;
}

/** The connected components of `nodes` through edges inside it, each ascending, largest first (ties: lowest image). */
function components(adjacency: Adjacency, nodes: Iterable<number>): number[][] {
  const inside = new Set(nodes);
  const seen = new Set<number>();
  const out: number[][] = [];
  for (const start of [...inside].sort((a, b) => a - b)) {
    if (seen.has(start)) continue;
    const part = [start];
    seen.add(start);
    for (let i = 0; i < part.length; i++) {
      for (const n of adjacency.get(part[i]!)!.keys()) {
        if (inside.has(n) && !seen.has(n)) {
          seen.add(n);
          part.push(n);
        }
      }
    }
    out.push(part.sort((a, b) => a - b));
  }
  return out.sort((a, b) => b.length - a.length || a[0]! - b[0]!);
}

/** The connected parts of the graph of these pairs (image indices), each ascending, largest first (ties: lowest image); images on no pair are in none. */
export function connectedParts(pairs: ReadonlyArray<{ image1: number; image2: number }>): number[][] {
  const adjacency = adjacencyOf(pairs.map((p) => ({ ...p, weight: 1 })));
  return components(adjacency, adjacency.keys());
}

/** Breadth-first hop counts from `start` over `nodes` (connected). */
function hops(adjacency: Adjacency, nodes: Set<number>, start: number): Map<number, number> {
  const dist = new Map([[start, 0]]);
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const d = dist.get(queue[i]!)!;
    for (const n of adjacency.get(queue[i]!)!.keys()) {
      if (nodes.has(n) && !dist.has(n)) {
        dist.set(n, d + 1);
        queue.push(n);
      }
    }
  }
  return dist;
}

/**
 * The Fiedler ordering of a connected part: its images sorted by the second eigenvector of the
 * normalized affinity (scaled by D^-1/2, Shi and Malik's relaxed indicator).
 */
function spectralOrder(adjacency: Adjacency, part: number[]): number[] {
  const nodes = new Set(part);
  const index = new Map(part.map((n, i) => [n, i]));
  const n = part.length;
  // Neighbours in index order: the sums, and so the cut, do not depend on the order the edges came in.
  const nbrs = part.map((a) =>
    [...adjacency.get(a)!]
      .filter(([b]) => nodes.has(b))
      .map(([b, w]) => [index.get(b)!, w] as const)
      .sort((x, y) => x[0] - y[0]),
  );
  const degree = nbrs.map((l) => l.reduce((s, [, w]) => s + w, 0));
  const sqrtD = degree.map(Math.sqrt);
  const norm = length(sqrtD);
  const top = sqrtD.map((v) => v / norm);
  // Start from the hop counts from a far end of the graph (double sweep): a chain of photos is ordered already.
  const far = hops(adjacency, nodes, part[0]!);
  const end = part.reduce((a, b) => (far.get(b)! > far.get(a)! ? b : a));
  const fromEnd = hops(adjacency, nodes, end);
  let v = part.map((a, i) => fromEnd.get(a)! * sqrtD[i]!);
  const deflate = (x: number[]) => {
    const dot = x.reduce((s, xi, i) => s + xi * top[i]!, 0);
    const y = x.map((xi, i) => xi - dot * top[i]!);
    const len = length(y);
    return len > 0 ? y.map((yi) => yi / len) : y;
  };
  v = deflate(v);
  for (let it = 0; it < MAX_ITERATIONS; it++) {
    // (I + D^-1/2 W D^-1/2) / 2: the same eigenvectors, eigenvalues in [0, 1], so the iteration finds the second largest.
    const next = v.map((vi, i) => {
      let s = 0;
      for (const [j, w] of nbrs[i]!) s += (w * v[j]!) / sqrtD[j]!;
      return 0.5 * (vi + s / sqrtD[i]!);
    });
    const y = deflate(next);
    const change = y.reduce((s, yi, i) => s + (yi - v[i]!) ** 2, 0);
    v = y;
    if (change < 1e-14) break;
  }
  const f = v.map((vi, i) => vi / sqrtD[i]!);
  return Array.from({ length: n }, (_, i) => i)
    .sort((a, b) => f[a]! - f[b]! || part[a]! - part[b]!)
    .map((i) => part[i]!);
}

/** The prefix of `order` whose cut from the rest has the least normalized cut (cut/vol(S) + cut/vol(rest)). */
function sweepCut(adjacency: Adjacency, order: number[]): Set<number> {
  const nodes = new Set(order);
  const degree = new Map(order.map((a) => [a, [...adjacency.get(a)!].reduce((s, [b, w]) => s + (nodes.has(b) ? w : 0), 0)]));
  const total = [...degree.values()].reduce((s, d) => s + d, 0);
  const inS = new Set<number>();
  let [cut, vol, best, bestK] = [0, 0, Infinity, 1];
  for (let k = 0; k < order.length - 1; k++) {
    const a = order[k]!;
    let toS = 0;
    for (const [b, w] of adjacency.get(a)!) if (inS.has(b)) toS += w;
    inS.add(a);
    cut += degree.get(a)! - 2 * toS;
    vol += degree.get(a)!;
    const ncut = cut / vol + cut / (total - vol);
    if (ncut < best) [best, bestK] = [ncut, k + 1];
  }
  return new Set(order.slice(0, bestK));
}

/**
 * A connected part split in two connected parts: the sweep's side, each side's pieces cut off from
 * its largest piece moved to the other side (they are joined to it: the part is connected); when
 * that empties a side, the Fiedler order's halves are fixed up the same way.
 */
function bisect(adjacency: Adjacency, part: number[]): [number[], number[]] {
  const order = spectralOrder(adjacency, part);
  const attempt = (side: Set<number>): [number[], number[]] | null => {
    let a = new Set(side);
    let b = new Set(part.filter((n) => !a.has(n)));
    for (const [from, to] of [
      ["a", "b"],
      ["b", "a"],
    ] as const) {
      const src = from === "a" ? a : b;
      const dst = to === "a" ? a : b;
      const [largest, ...rest] = components(adjacency, src);
      for (const piece of rest) for (const n of piece) dst.add(n);
      if (from === "a") a = new Set(largest ?? []);
      else b = new Set(largest ?? []);
    }
    if (a.size === 0 || b.size === 0) return null;
    return [[...a].sort((x, y) => x - y), [...b].sort((x, y) => x - y)];
  };
  return (
    attempt(sweepCut(adjacency, order)) ??
    attempt(new Set(order.slice(0, Math.ceil(order.length / 2)))) ??
    // A part no cut of its Fiedler order leaves connected (rare): its breadth-first halves, the second half's pieces apart.
    breadthFirstHalves(adjacency, part)
  );
}

function breadthFirstHalves(adjacency: Adjacency, part: number[]): [number[], number[]] {
  const dist = hops(adjacency, new Set(part), part[0]!);
  const order = [...part].sort((a, b) => dist.get(a)! - dist.get(b)! || a - b);
  const half = Math.ceil(order.length / 2);
  return [order.slice(0, half).sort((a, b) => a - b), order.slice(half).sort((a, b) => a - b)];
}

/** Leaves of at most maxSize images: each part cut in two until it fits; a disconnected piece is a part of its own. */
function leaves(adjacency: Adjacency, part: number[], maxSize: number, out: number[][]): void {
  if (part.length <= maxSize) {
    out.push(part);
    return;
  }
  for (const side of bisect(adjacency, part)) for (const piece of components(adjacency, side)) leaves(adjacency, piece, maxSize, out);
}

/**
 * Leaves joined while two that share edges fit in maxSize together, the smallest such pair first
 * (ties: the strongest link): halving leaves parts of a quarter of maxSize and less, too few
 * photos for a model of their own.
 */
function joinSmallLeaves(adjacency: Adjacency, leaves: number[][], maxSize: number): number[][] {
  const parts = leaves.map((l) => [...l]);
  for (;;) {
    const owner = new Map<number, number>();
    parts.forEach((p, k) => p.forEach((n) => owner.set(n, k)));
    const links = new Map<number, number>();
    for (const [a, m] of adjacency) {
      for (const [b, w] of m) {
        const [x, y] = [owner.get(a), owner.get(b)];
        if (x === undefined || y === undefined || x >= y) continue;
        links.set(x * parts.length + y, (links.get(x * parts.length + y) ?? 0) + w);
      }
    }
    let best: { x: number; y: number; size: number; w: number } | null = null;
    for (const [key, w] of links) {
      const [x, y] = [Math.floor(key / parts.length), key % parts.length];
      const size = parts[x]!.length + parts[y]!.length;
      if (size > maxSize) continue;
      if (!best || size < best.size || (size === best.size && w > best.w)) best = { x, y, size, w };
    }
    if (!best) return parts;
    parts[best.x] = [...parts[best.x]!, ...parts[best.y]!].sort((a, b) => a - b);
    parts.splice(best.y, 1);
  }
}

/**
 * The view graph's clusters (see the module comment), largest first (ties: lowest image). Image
 * ids are whatever the edges use. Deterministic.
 */
export function partitionViewGraph(edges: readonly WeightedEdge[], o: PartitionOptions): ImageCluster[] {
  if (!(o.maxSize >= 2)) throw new Error(`cluster_max_size must be at least 2 (got ${o.maxSize})`);
  const adjacency = adjacencyOf(edges);
  const cores: number[][] = [];
  for (const component of components(adjacency, adjacency.keys())) {
    const parts: number[][] = [];
    leaves(adjacency, component, o.maxSize, parts);
    cores.push(...joinSmallLeaves(adjacency, parts, o.maxSize));
  }
  const clusterOf = new Map<number, number>();
  cores.forEach((core, c) => core.forEach((n) => clusterOf.set(n, c)));
  return cores
    .map((core, c) => {
      // Outside images by their strongest edge into the core (ties: lowest image).
      const strongest = new Map<number, number>();
      for (const a of core) {
        for (const [b, w] of adjacency.get(a)!) if (clusterOf.get(b) !== c) strongest.set(b, Math.max(w, strongest.get(b) ?? 0));
      }
      const overlap = [...strongest]
        .sort((x, y) => y[1] - x[1] || x[0] - y[0])
        .slice(0, Math.max(0, o.overlap))
        .map(([b]) => b);
      return { core, images: [...core, ...overlap].sort((a, b) => a - b) };
    })
    .sort((x, y) => y.core.length - x.core.length || x.core[0]! - y.core[0]!);
}

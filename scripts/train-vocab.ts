/**
 * Trains the retrieval vocabularies the runners ship (browser-runtime/stages/vocab/): SIFT features
 * of the photos of ../shared/datasets/vocab-training (never an evaluation set), extracted as the
 * extract stage does by default and cached outside the repo, a deterministic sample of their
 * RootSIFT descriptors, then k-means (k-means++ seeding, Lloyd iterations) on it: flat for the VLAD
 * codebook, hierarchical (Nistér and Stewénius 2006) for the vocabulary tree (`--kind tree`).
 *
 *   npx tsx scripts/train-vocab.ts [--words 32] [--per-image 400] [--iterations 30] [--seed 1]
 *     [--cache /tmp/edgesfm-vocab-features] [--out browser-runtime/stages/vocab/vlad-rootsift-k32.v1.json]
 *   npx tsx scripts/train-vocab.ts --kind tree [--branching 10] [--depth 3]
 *     [--out browser-runtime/stages/vocab/tree-rootsift-b10-l3.v1.json]
 *
 * A few minutes on one core (extraction is most of it; a second run reads the cache).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createEngine } from "../engine-wasm/ts/engine";
import { decodeImage } from "../browser-runtime/decode/node";
import { extractFeatures } from "../browser-runtime/stages/extract";
import { type CodebookFile, encodeBase64Floats, nearestWord, rootSift } from "../browser-runtime/stages/vlad";
import type { VocabTreeFile } from "../protocol/wire/bow";
import { encodeTreeNodes } from "../browser-runtime/stages/vocab-tree";
import { decodeFeatures } from "../protocol/wire/features";

const TRAINING = "../shared/datasets/vocab-training";

const { values: args } = parseArgs({
  options: {
    words: { type: "string", default: "32" },
    "per-image": { type: "string", default: "400" },
    iterations: { type: "string", default: "30" },
    seed: { type: "string", default: "1" },
    kind: { type: "string", default: "vlad" },
    branching: { type: "string", default: "10" },
    depth: { type: "string", default: "3" },
    cache: { type: "string", default: "/tmp/edgesfm-vocab-features" },
    out: { type: "string" },
  },
});
const TREE = args.kind === "tree";
const BRANCHING = Number(args.branching);
const DEPTH = Number(args.depth);
const OUT =
  args.out ??
  (TREE
    ? `browser-runtime/stages/vocab/tree-rootsift-b${BRANCHING}-l${DEPTH}.v1.json`
    : `browser-runtime/stages/vocab/vlad-rootsift-k${args.words}.v1.json`);
const WORDS = Number(args.words);
const PER_IMAGE = Number(args["per-image"]);
const ITERATIONS = Number(args.iterations);
const DIM = 128;

/** mulberry32: a small seeded generator, so the same photos and options train the same codebook. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = random(Number(args.seed));

/** The training photos, by set then name. */
function photos(): string[] {
  return readdirSync(TRAINING, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .flatMap((set) =>
      readdirSync(join(TRAINING, set))
        .filter((f) => /\.(jpe?g|png)$/i.test(f))
        .sort()
        .map((f) => join(TRAINING, set, f)),
    );
}

/** The photo's features at the extract stage's defaults, from the cache (keyed by the photo's bytes) or extracted now. */
async function features(engine: Awaited<ReturnType<typeof createEngine>>, path: string): Promise<Uint8Array> {
  const bytes = readFileSync(path);
  const cached = join(args.cache!, `${createHash("sha256").update(bytes).digest("hex")}.feat`);
  if (existsSync(cached)) return new Uint8Array(readFileSync(cached));
  const out = extractFeatures(engine, await decodeImage(new Uint8Array(bytes))).bytes;
  writeFileSync(cached, out);
  return out;
}

/** k-means++ seeding (Arthur and Vassilvitskii 2007) of `k` centroids among the rows of `x`. */
function seed(x: Float32Array, n: number, k: number): Float32Array {
  const c = new Float32Array(k * DIM);
  const d2 = new Float64Array(n).fill(Infinity);
  let pick = Math.floor(rand() * n);
  for (let w = 0; w < k; w += 1) {
    c.set(x.subarray(pick * DIM, (pick + 1) * DIM), w * DIM);
    let total = 0;
    for (let i = 0; i < n; i += 1) {
      let d = 0;
      for (let j = 0; j < DIM; j += 1) d += (x[i * DIM + j]! - c[w * DIM + j]!) ** 2;
      d2[i] = Math.min(d2[i]!, d);
      total += d2[i]!;
    }
    let r = rand() * total;
    pick = 0;
    while (pick < n - 1 && (r -= d2[pick]!) > 0) pick += 1;
  }
  return c;
}

/** Lloyd's iterations; an emptied word takes the sample farthest from its centroid. Returns the mean squared distance. */
function lloyd(x: Float32Array, n: number, c: Float32Array, k: number, quiet = false): number {
  const assign = new Int32Array(n);
  let mse = 0;
  for (let it = 0; it < ITERATIONS; it += 1) {
    let changed = 0;
    mse = 0;
    for (let i = 0; i < n; i += 1) {
      const w = nearestWord(x, i, c, k, DIM);
      if (w !== assign[i] || it === 0) changed += 1;
      assign[i] = w;
      for (let j = 0; j < DIM; j += 1) mse += (x[i * DIM + j]! - c[w * DIM + j]!) ** 2;
    }
    mse /= n;
    const sum = new Float64Array(k * DIM);
    const count = new Int32Array(k);
    for (let i = 0; i < n; i += 1) {
      count[assign[i]!]! += 1;
      for (let j = 0; j < DIM; j += 1) sum[assign[i]! * DIM + j]! += x[i * DIM + j]!;
    }
    for (let w = 0; w < k; w += 1) {
      if (count[w] === 0) {
        const far = Math.floor(rand() * n);
        c.set(x.subarray(far * DIM, (far + 1) * DIM), w * DIM);
        continue;
      }
      for (let j = 0; j < DIM; j += 1) c[w * DIM + j] = sum[w * DIM + j]! / count[w]!;
    }
    if (!quiet) console.log(`iteration ${it + 1}: mean squared distance ${mse.toFixed(4)}, ${changed} reassigned`);
    if (changed === 0) break;
  }
  return mse;
}

/**
 * Hierarchical k-means: the nodes of a complete tree of `DEPTH` levels below the root, level by
 * level (level l holds BRANCHING^l nodes; node i's children are i * BRANCHING + c on the next level).
 * A node with fewer samples than BRANCHING gives its children its samples, then its own centroid.
 */
function vocabTree(x: Float32Array, n: number): Float32Array {
  const levels: Float32Array[] = [];
  let groups: { rows: Int32Array; centroid: Float32Array | null }[] = [
    { rows: Int32Array.from({ length: n }, (_, i) => i), centroid: null },
  ];
  for (let level = 1; level <= DEPTH; level += 1) {
    const nodes = new Float32Array(groups.length * BRANCHING * DIM);
    const next: typeof groups = [];
    for (const [g, { rows, centroid }] of groups.entries()) {
      const m = rows.length;
      const sub = new Float32Array(m * DIM);
      rows.forEach((r, i) => sub.set(x.subarray(r * DIM, (r + 1) * DIM), i * DIM));
      let c: Float32Array;
      if (m > BRANCHING) {
        c = seed(sub, m, BRANCHING);
        lloyd(sub, m, c, BRANCHING, true);
      } else {
        c = new Float32Array(BRANCHING * DIM);
        for (let w = 0; w < BRANCHING; w += 1)
          c.set(w < m ? sub.subarray(w * DIM, (w + 1) * DIM) : (centroid ?? new Float32Array(DIM)), w * DIM);
      }
      nodes.set(c, g * BRANCHING * DIM);
      const members = Array.from({ length: BRANCHING }, () => [] as number[]);
      for (let i = 0; i < m; i += 1) members[nearestWord(sub, i, c, BRANCHING, DIM)]!.push(rows[i]!);
      for (let w = 0; w < BRANCHING; w += 1) next.push({ rows: Int32Array.from(members[w]!), centroid: c.slice(w * DIM, (w + 1) * DIM) });
    }
    levels.push(nodes);
    groups = next;
    console.log(`level ${level}: ${groups.length} nodes`);
  }
  const all = new Float32Array(levels.reduce((s, l) => s + l.length, 0));
  levels.reduce((at, l) => (all.set(l, at), at + l.length), 0);
  return all;
}

async function main() {
  mkdirSync(args.cache!, { recursive: true });
  const engine = await createEngine();
  const paths = photos();
  const samples: Float32Array[] = [];
  let total = 0;
  for (const [i, path] of paths.entries()) {
    const x = rootSift(decodeFeatures(await features(engine, path)));
    const n = x.length / DIM;
    total += n;
    // A uniform sample without replacement of PER_IMAGE descriptors (partial Fisher-Yates).
    const order = Int32Array.from({ length: n }, (_, j) => j);
    const m = Math.min(n, PER_IMAGE);
    const s = new Float32Array(m * DIM);
    for (let j = 0; j < m; j += 1) {
      const r = j + Math.floor(rand() * (n - j));
      [order[j], order[r]] = [order[r]!, order[j]!];
      s.set(x.subarray(order[j]! * DIM, (order[j]! + 1) * DIM), j * DIM);
    }
    samples.push(s);
    if ((i + 1) % 50 === 0) console.log(`${i + 1}/${paths.length} photos`);
  }
  const n = samples.reduce((s, x) => s + x.length / DIM, 0);
  const x = new Float32Array(n * DIM);
  samples.reduce((at, s) => (x.set(s, at), at + s.length), 0);
  const training = {
    script: "scripts/train-vocab.ts",
    photos: "../shared/datasets/vocab-training (coke, bird)",
    num_photos: paths.length,
    features: "extract stage defaults (SIFT, L1_ROOT, max 8192 per image)",
    descriptors: total,
    sampled: n,
    per_image: PER_IMAGE,
    iterations: ITERATIONS,
    seed: Number(args.seed),
  };
  if (TREE) {
    console.log(`${paths.length} photos, ${total} descriptors, ${n} sampled; a tree of ${BRANCHING}^${DEPTH} words`);
    const tree: VocabTreeFile = {
      format: "edgesfm.vocab.tree.v1",
      id: `tree-rootsift-b${BRANCHING}-l${DEPTH}.v1`,
      branching: BRANCHING,
      depth: DEPTH,
      dim: DIM,
      descriptor: "rootsift",
      training,
      nodes: encodeTreeNodes(vocabTree(x, n)),
    };
    writeFileSync(OUT, JSON.stringify(tree, null, 2) + "\n");
    console.log(`wrote ${OUT}`);
    return;
  }
  console.log(`${paths.length} photos, ${total} descriptors, ${n} sampled; k-means with ${WORDS} words`);
  const c = seed(x, n, WORDS);
  const mse = lloyd(x, n, c, WORDS);
  const file: CodebookFile = {
    format: "edgesfm.vocab.vlad.v1",
    id: `vlad-rootsift-k${WORDS}.v1`,
    words: WORDS,
    dim: DIM,
    descriptor: "rootsift",
    training: { ...training, mean_squared_distance: Number(mse.toFixed(5)) },
    centroids: encodeBase64Floats(c),
  };
  writeFileSync(OUT, JSON.stringify(file, null, 2) + "\n");
  console.log(`wrote ${OUT}`);
}

await main();

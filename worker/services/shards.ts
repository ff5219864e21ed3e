/**
 * @module How a stage task's work is cut into shards that runners lease independently (our
 * extension; runners.md "Shards"). A task's work is a list of *items*, each a cacheable unit keyed
 * by the content it reads: extraction has one item per image; matching and verification one per
 * *block* of the pair list, the pairs between two groups of images, the groups chosen by the
 * images' content (a hash bucket of their SHA-256), so that adding a photo changes only the
 * blocks of its group. When the pair list is known at submission (explicit and sequential pairs),
 * a block holds only its part of the list and reads only those pairs' images. Items are grouped
 * into shards of about a few seconds of one engine's work (by pixels for extraction; for matching by
 * pairs times the product of their images' descriptor counts, for verification by pairs times their
 * descriptor counts, the counts estimated at submission from each image's size and the extraction's
 * `max_num_features`), and the groups are made small enough that a block of photos with many
 * descriptors fits one such shard; an item whose key
 * already succeeded in the tenant is reused and never leased again. A hierarchical map task starts
 * as one shard, the partition of its view graph; its clusters' shards are added when that is done
 * (storage/job/hierarchical.ts).
 */
import { type DatasetSnapshot, PARTITION_PATH, type ShardItem, type TaskKind } from "../../protocol";
import { sequenceOrderIndices, sequencePairs } from "../../protocol/wire/pairs";
import { hashJson } from "./runtime";

/** Pixels per extraction shard: SIFT on one engine takes about 0.3-0.5 s per megapixel. */
export const EXTRACT_SHARD_PIXELS = 8_000_000;
/**
 * Descriptors of the unit pair of matching and verification work: FeaturesSpec's default
 * `max_num_features`. A pair of images with `d1` and `d2` descriptors weighs `d1 d2 / 8192^2` in
 * matching (brute force compares every descriptor with every other) and `sqrt(d1 d2) / 8192` in
 * verification (RANSAC over matches, about as many as descriptors).
 */
export const UNIT_DESCRIPTORS = 8192;
/**
 * Matching work per shard, in pairs of two 8k-descriptor sets: brute force of one such pair takes
 * about half a second on one wasm engine of a quiet machine (sceaux-castle's 55 pairs of 6 MP photos
 * as one shard ran for minutes on a loaded one, longer than a runner that leaves every minute or two lives).
 */
export const MATCH_SHARD_WORK = 8;
/** Verification work per shard, in pairs of 8k-descriptor images (RANSAC of one pair: 10-30 ms). */
export const VERIFY_SHARD_WORK = 128;
/** Image pixels per SIFT keypoint before the `max_num_features` cap (sceaux-castle's 6 MP photos give 10-12k). */
const PIXELS_PER_DESCRIPTOR = 500;
/** A shard's items travel in its lease and come back as one artifact each (TaskOutputs holds at most 64). */
export const MAX_SHARD_ITEMS = 64;
/** Images per content group at most: a block of two groups holds about 8 x 8 pairs. */
const IMAGES_PER_GROUP = 8;
/** At most 32 groups: 528 blocks, within an artifact's 1024 files. */
const MAX_GROUPS = 32;
/** Weight of an image whose header gave no size (bytes no decoder reads as a photo): one megapixel. */
const DEFAULT_PIXELS = 1_000_000;

export interface ItemPlan extends ShardItem {
  /** Work estimate: pixels (extract) or pairs weighed by their descriptors (match, verify; see UNIT_DESCRIPTORS). */
  weight: number;
}

/** A task of the job as the planner sees it: its kind, hashes and specs. */
export interface PlannedTask {
  kind: TaskKind;
  params: Record<string, unknown>;
  inputs_hash: string;
  params_hash: string;
  rv_id: string;
  /** A match task's explicit pair list (indices into the dataset's images), known at submission. */
  pair_list?: readonly (readonly [number, number])[] | null;
}

/**
 * The number of content groups for n images of `perGroup` images at most (imagesPerGroup): a power
 * of two, so that one more photo rarely changes it.
 */
export function groupCount(n: number, perGroup = IMAGES_PER_GROUP): number {
  let g = 1;
  while (g * perGroup < n && g < MAX_GROUPS) g *= 2;
  return g;
}

/**
 * Images per content group such that a block of two groups (perGroup^2 pairs) holds at most one
 * matching shard's work, for images of `descriptors` (their root mean square sets a pair's weight);
 * at most IMAGES_PER_GROUP.
 */
export function imagesPerGroup(descriptors: readonly number[]): number {
  const meanSquare = descriptors.reduce((s, d) => s + d * d, 0) / Math.max(1, descriptors.length);
  const pairWeight = meanSquare / UNIT_DESCRIPTORS ** 2;
  return Math.max(1, Math.min(IMAGES_PER_GROUP, Math.floor(Math.sqrt(MATCH_SHARD_WORK / pairWeight))));
}

/** An image's descriptors as extraction will find them: its pixels' keypoints, at most `maxFeatures`. */
export function descriptorEstimate(im: Pick<Image, "width" | "height">, maxFeatures: number): number {
  const pixels = im.width && im.height ? im.width * im.height : DEFAULT_PIXELS;
  return Math.max(1, Math.min(maxFeatures, Math.round(pixels / PIXELS_PER_DESCRIPTOR)));
}

/** The extraction's `max_num_features` when the chain extracts (FeaturesSpec's default otherwise, as from an input artifact). */
function maxFeaturesOf(chain: readonly PlannedTask[]): number {
  const extract = chain.find((t) => t.kind === "extract");
  const features = extract?.params.features as { max_num_features?: unknown; sift_max_num_features?: unknown } | undefined;
  const max = features?.max_num_features ?? features?.sift_max_num_features;
  return typeof max === "number" && max > 0 ? max : UNIT_DESCRIPTORS;
}

/** An image's content group: its bytes' SHA-256 (uniform) modulo the group count. */
export const groupOf = (contentSha: string, groups: number) => parseInt(contentSha.slice(0, 8), 16) % groups;

type Image = DatasetSnapshot["images"][number];

/**
 * Plans the items of each sharded task of a chain (tasks in order; an item depends on the items
 * of the same image or block upstream, when the upstream task is in the chain). Unsharded tasks
 * get no items.
 */
export function planItems(dataset: DatasetSnapshot | null, chain: PlannedTask[]): (ItemPlan[] | null)[] {
  if (!dataset || dataset.images.length === 0) return chain.map(() => null);
  const images = dataset.images;
  // Each image's descriptor estimate weighs its pairs and sizes the groups.
  const maxFeatures = maxFeaturesOf(chain);
  const descriptors = new Map(images.map((im) => [im.name, descriptorEstimate(im, maxFeatures)]));
  const groups = groupCount(images.length, imagesPerGroup([...descriptors.values()]));
  const byGroup = Array.from({ length: groups }, () => [] as Image[]);
  for (const im of images) byGroup[groupOf(im.content_sha, groups)]!.push(im);
  const blocks: [number, number][] = [];
  for (let a = 0; a < groups; a++)
    for (let b = a; b < groups; b++)
      if (byGroup[a]!.length && byGroup[b]!.length && (a !== b || byGroup[a]!.length > 1)) blocks.push([a, b]);
  const names = (g: number) => byGroup[g]!.map((im) => im.name);
  const d = (name: string) => descriptors.get(name)! / UNIT_DESCRIPTORS;
  /** A pair's weight in matching and in verification. */
  const work = { match: (x: string, y: string) => d(x) * d(y), verify: (x: string, y: string) => Math.sqrt(d(x) * d(y)) };
  const cameras = cameraSignature(dataset);

  let features: Map<string, string> | null = null;
  let matches: Map<string, string> | null = null;
  // The blocks of a pair list known at submission (explicit and sequential pairs): each item reads
  // the images of its own pairs and weighs their number, so a job's shards grow with the pairs, not
  // with the square of the images.
  let listed: ListedBlock[] | null = null;
  /** The weight of a block's pairs: the listed ones, or every pair of its two groups. */
  const blockWork = (kind: keyof typeof work, [a, b]: [number, number], k: number) => {
    if (listed) return listed[k]!.pairs.reduce((s, [x, y]) => s + work[kind](x, y), 0);
    let sum = 0;
    for (const [i, x] of names(a).entries()) for (const y of a === b ? names(a).slice(i + 1) : names(b)) sum += work[kind](x, y);
    return sum;
  };
  return chain.map((task) => {
    const base = { kind: task.kind, params_hash: task.params_hash, rv_id: task.rv_id };
    // Read from outside the chain (an input artifact): the task's inputs_hash names it.
    const featureKeys = (ims: Image[]) => (features ? ims.map((im) => features!.get(im.name)) : task.inputs_hash);
    if (task.kind === "extract") {
      const items = images.map((im) => ({
        key: hashJson({
          ...base,
          image: [im.name, im.content_sha],
          dataset: { respect_exif_orientation: dataset.respect_exif_orientation },
        }),
        path: `features/${im.name}`,
        images: [im.name],
        block: null,
        weight: im.width && im.height ? im.width * im.height : DEFAULT_PIXELS,
      }));
      features = new Map(items.map((it) => [it.images[0]!, it.key]));
      return items;
    }
    if (task.kind === "match") {
      // Exhaustive pairs of a block depend on its images alone, listed pairs on the block's part of
      // the list; other strategies on the whole dataset.
      const pairs = (task.params.pairs ?? {}) as { strategy?: string; overlap?: number };
      const exhaustive = (pairs.strategy ?? "exhaustive") === "exhaustive";
      const sequence = () => sequenceOrderIndices(images.map((im) => im.pose_prior?.timestamp_ns));
      const list = task.pair_list ?? (pairs.strategy === "sequential" ? sequencePairs(sequence(), pairs.overlap ?? 10) : null);
      listed = list ? listedBlocks(images, list, groups, blocks) : null;
      // A listed block's key holds its own pairs, not the whole list (which its params name).
      const params_hash = listed ? hashJson({ ...task.params, pairs: { ...pairs, ...UNLISTED } }) : base.params_hash;
      const items = blocks.map(([a, b], k) => ({
        key: hashJson({
          ...base,
          params_hash,
          features: listed ? featureKeys(listed[k]!.images) : [featureKeys(byGroup[a]!), featureKeys(byGroup[b]!)],
          pairs: exhaustive ? null : listed ? listed[k]!.pairs : task.inputs_hash,
        }),
        path: `matches/${a}-${b}.bin`,
        images: listed ? listed[k]!.images.map((im) => im.name) : a === b ? names(a) : [...names(a), ...names(b)],
        block: [names(a), names(b)] as [string[], string[]],
        weight: blockWork("match", [a, b], k),
      }));
      matches = new Map(items.map((it) => [it.path, it.key]));
      return items;
    }
    if (task.kind === "verify") {
      // Verification follows the blocks of the matches it reads: a listed block verifies its pairs alone.
      const items = blocks.map(([a, b], k) => ({
        key: hashJson({
          ...base,
          matches: matches?.get(`matches/${a}-${b}.bin`) ?? task.inputs_hash,
          features: listed ? featureKeys(listed[k]!.images) : [featureKeys(byGroup[a]!), featureKeys(byGroup[b]!)],
          cameras,
        }),
        path: `two_view_geometries/${a}-${b}.json`,
        images: listed ? listed[k]!.images.map((im) => im.name) : a === b ? names(a) : [...names(a), ...names(b)],
        block: [names(a), names(b)] as [string[], string[]],
        weight: blockWork("verify", [a, b], k),
      }));
      matches = null;
      listed = null;
      return items;
    }
    if (task.kind === "map" && (task.params.spec as { kind?: string } | undefined)?.kind === "hierarchical") {
      // Hierarchical mapping (protocol/hierarchical.ts): the partition of the view graph; the clusters and the merge follow.
      return [
        {
          key: hashJson({ ...base, inputs_hash: task.inputs_hash, item: PARTITION_PATH }),
          path: PARTITION_PATH,
          images: images.map((im) => im.name),
          block: null,
          weight: 1,
        },
      ];
    }
    return null;
  });
}

/** The fields of an explicit PairsSpec that name its list. */
const UNLISTED = { image_pairs: null, pairs_blob_sha: null };

interface ListedBlock {
  /** The block's pairs of the list, by name, in list order. */
  pairs: [string, string][];
  /** The images those pairs read, in dataset order. */
  images: Image[];
}

/** A pair list cut into `blocks` (pairs of content groups; a pair falls in the block of its two images' groups). */
function listedBlocks(
  images: readonly Image[],
  list: readonly (readonly [number, number])[],
  groups: number,
  blocks: readonly [number, number][],
): ListedBlock[] {
  const group = images.map((im) => groupOf(im.content_sha, groups));
  const at = new Map(blocks.map(([a, b], k) => [a * groups + b, k]));
  const members = blocks.map(() => ({ pairs: [] as [number, number][], images: new Set<number>() }));
  for (const [i, j] of list) {
    const [a, b] = [group[i]!, group[j]!].sort((x, y) => x - y) as [number, number];
    const block = members[at.get(a * groups + b)!]!;
    block.pairs.push([i, j]);
    block.images.add(i).add(j);
  }
  return members.map((m) => ({
    pairs: m.pairs.map(([i, j]) => [images[i]!.name, images[j]!.name]),
    images: [...m.images].sort((x, y) => x - y).map((i) => images[i]!),
  }));
}

/**
 * What verification's cameras depend on beyond each image's own bytes: the dataset's camera
 * settings and, when images share cameras, the image each shared camera takes its prior from
 * (the first of its size, in dataset order, as COLMAP's ImageReader).
 */
function cameraSignature(dataset: DatasetSnapshot): unknown {
  const settings = {
    camera_model: dataset.camera_model,
    intrinsics_mode: dataset.intrinsics_mode,
    respect_exif_orientation: dataset.respect_exif_orientation,
  };
  if (dataset.intrinsics_mode === "per_image") return settings;
  const heads = new Map<string, Image>();
  for (const im of dataset.images) {
    const folder = dataset.intrinsics_mode === "per_folder" ? im.name.split("/").slice(0, -1).join("/") : "";
    const size = [im.width ?? 0, im.height ?? 0].sort((x, y) => x - y).join("x");
    if (!heads.has(`${folder}|${size}`)) heads.set(`${folder}|${size}`, im);
  }
  return { ...settings, heads: [...heads.values()].map((im) => [im.name, im.content_sha]) };
}

/** The shard budget of a task kind, in its items' weight units. */
export function shardBudget(kind: TaskKind): number {
  return kind === "extract" ? EXTRACT_SHARD_PIXELS : kind === "match" ? MATCH_SHARD_WORK : VERIFY_SHARD_WORK;
}

/** The most items of a shard of a task kind: a match item answers two artifacts, its matches and its pair list. */
export const shardMaxItems = (kind: TaskKind) => (kind === "match" ? MAX_SHARD_ITEMS / 2 : MAX_SHARD_ITEMS);

/** Groups items in order into shards of about `budget` weight and at most `maxItems` items (an item heavier than `budget` is a shard alone). */
export function groupShards<T extends { weight: number }>(items: T[], budget: number, maxItems = MAX_SHARD_ITEMS): T[][] {
  const shards: T[][] = [];
  let current: T[] = [];
  let weight = 0;
  for (const item of items) {
    if (current.length > 0 && (weight + item.weight > budget || current.length >= maxItems)) {
      shards.push(current);
      current = [];
      weight = 0;
    }
    current.push(item);
    weight += item.weight;
  }
  if (current.length > 0) shards.push(current);
  return shards;
}

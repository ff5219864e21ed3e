/**
 * @module How a stage task's work is cut into shards that runners lease independently (our
 * extension; runners.md "Shards"). A task's work is a list of *items*, each a cacheable unit keyed
 * by the content it reads: extraction has one item per image; matching and verification one per
 * *block* of the pair list, the pairs between two groups of images, the groups chosen by the
 * images' content (a hash bucket of their SHA-256), so that adding a photo changes only the
 * blocks of its group. When the pair list is known (explicit and sequential pairs at submission;
 * retrieval, vocabulary-tree, spatial and from-poses pairs once the match task's first shard has
 * chosen them on a runner, storage/job/pair-list.ts), only the blocks holding pairs are planned, each with its part
 * of the list, reading only those pairs' images. Items are grouped into shards of about a few
 * seconds of one engine's work (storage/job/sizing.ts: by pixels for extraction; for matching by
 * pairs times the product of their images' descriptor counts, for verification by pairs times
 * their descriptor counts: at submission counts estimated from each image's size and the
 * extraction's `max_num_features`, weighed again by the real keypoints once extraction has run),
 * and the groups are made small enough that a block of photos with many descriptors fits one
 * such shard; an item whose key already succeeded in the tenant is reused and never leased again.
 * A hierarchical map task starts as one shard, the partition of its view graph; its clusters'
 * shards are added when that is done (storage/job/hierarchical.ts).
 */
import { type DatasetSnapshot, PARTITION_PATH, type ShardItem, type TaskKind, type TaskOutputs } from "../../protocol";
import { RUNNER_CHOSEN_PAIR_STRATEGIES, PAIR_LIST_PATH, sequenceOrderIndices, sequencePairs } from "../../protocol/wire/pairs";
import type { PlannedItem } from "../storage/job-rows";
import {
  MATCH_SHARD_WORK,
  UNIT_DESCRIPTORS,
  blockWork,
  groupShards,
  packHeaviestFirst,
  shardBudget,
  shardMaxItems,
} from "../storage/job/sizing";
import { hashJson } from "./runtime";

/** Image pixels per SIFT keypoint before the `max_num_features` cap (sceaux-castle's 6 MP photos give 10-12k). */
const PIXELS_PER_DESCRIPTOR = 500;

/** Images per content group at most: a block of two groups holds about 8 x 8 pairs. */
const IMAGES_PER_GROUP = 8;
/** At most 32 groups: 528 blocks, within an artifact's 1024 files. */
const MAX_GROUPS = 32;
/** Weight of an image whose header gave no size (bytes no decoder reads as a photo): one megapixel. */
const DEFAULT_PIXELS = 1_000_000;

export interface ItemPlan extends ShardItem {
  /** Work estimate: pixels (extract) or pairs weighed by their descriptors (match, verify; see UNIT_DESCRIPTORS). */
  weight: number;
  /** A listed block's pairs by image name (null: every pair of its groups), kept to weigh it again (storage/job/sizing.ts). */
  pairs?: [string, string][] | null;
}

/** A file an item reads (ShardItem `reads`). */
export type ItemFile = NonNullable<ShardItem["reads"]>[number];

/** A task of the job as the planner sees it: its kind, hashes and specs. */
export interface PlannedTask {
  kind: TaskKind;
  params: Record<string, unknown>;
  inputs_hash: string;
  params_hash: string;
  rv_id: string;
  /**
   * A match task's pair list (indices into the dataset's images): an explicit one known at
   * submission, or one chosen on a runner by the task's first shard (`pair_list_file` its file).
   */
  pair_list?: readonly (readonly [number, number])[] | null;
  /** The file of a chosen pair list (PAIR_LIST_PATH), which the blocks planned from it read. */
  pair_list_file?: ItemFile | null;
  /** The task is reused whole (its cache key succeeded): a match task of pairs chosen on a runner chooses no list. */
  reused?: boolean;
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
export function planItems(
  dataset: DatasetSnapshot | null,
  chain: PlannedTask[],
  keypoints: ReadonlyMap<string, number> | null = null,
): (ItemPlan[] | null)[] {
  if (!dataset || dataset.images.length === 0) return chain.map(() => null);
  const images = dataset.images;
  // Each image's descriptor estimate sizes the groups (so the blocks and their keys are the same whenever they are planned);
  // its pairs weigh its keypoints once the extraction has run, else the estimate.
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
  const descriptorsOf = (name: string) => keypoints?.get(name) ?? descriptors.get(name)!;
  const cameras = cameraSignature(dataset);

  let features: Map<string, string> | null = null;
  let matches: Map<string, string> | null = null;
  // The blocks of the match task's pairs: every block of the content groups (exhaustive pairs), or
  // those holding pairs of a known list (explicit, sequential, or one a runner chose), each reading the images of its own pairs, so a job's shards grow with
  // the pairs, not with the square of the images. Null while a list is still to be chosen.
  let planned: PlannedBlock[] | null = null;
  let deferred = false;
  const weigh = (kind: "match" | "verify", { ab: [a, b], listed }: PlannedBlock) =>
    blockWork(kind, [names(a), names(b)], listed ? listed.pairs : null, descriptorsOf);
  const blockImages = ({ ab: [a, b], listed }: PlannedBlock) =>
    listed ? listed.images.map((im) => im.name) : a === b ? names(a) : [...names(a), ...names(b)];
  return chain.map((task) => {
    const base = { kind: task.kind, params_hash: task.params_hash, rv_id: task.rv_id };
    // Read from outside the chain (an input artifact): the task's inputs_hash names it.
    const featureKeys = (ims: Image[]) => (features ? ims.map((im) => features!.get(im.name)) : task.inputs_hash);
    /** The one first item of work made as it becomes known (a chosen pair list, a hierarchical map's partition): it reads every image. */
    const wholeSetItem = (path: string) => ({
      key: hashJson({ ...base, inputs_hash: task.inputs_hash, item: path }),
      path,
      images: images.map((im) => im.name),
      block: null,
      weight: 1,
    });
    const blockFeatures = ({ ab: [a, b], listed }: PlannedBlock) =>
      listed ? featureKeys(listed.images) : [featureKeys(byGroup[a]!), featureKeys(byGroup[b]!)];
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
      const pairs = (task.params.pairs ?? {}) as { strategy?: string; overlap?: number };
      const strategy = pairs.strategy ?? "exhaustive";
      const sequence = () => sequenceOrderIndices(images.map((im) => im.pose_prior?.timestamp_ns));
      const list = task.pair_list ?? (strategy === "sequential" ? sequencePairs(sequence(), pairs.overlap ?? 10) : null);
      if (!list && !task.reused && RUNNER_CHOSEN_PAIR_STRATEGIES.includes(strategy)) {
        // Pairs chosen on a runner: the first shard chooses the list; the blocks follow from it (and the verify task's with them).
        deferred = true;
        return [wholeSetItem(PAIR_LIST_PATH)];
      }
      planned = list
        ? listedBlocks(images, list, groups, blocks).flatMap((listed, k) => (listed.pairs.length > 0 ? [{ ab: blocks[k]!, listed }] : []))
        : blocks.map((ab) => ({ ab, listed: null }));
      // Exhaustive pairs of a block depend on its images alone, a listed block on its own pairs (whatever
      // chose them, so not on the pair spec), other strategies on the whole dataset.
      const exhaustive = strategy === "exhaustive";
      const params_hash = list ? hashJson({ ...task.params, pairs: null }) : base.params_hash;
      const reads = task.pair_list_file ? { reads: [task.pair_list_file] } : {};
      const items = planned.map((b) => ({
        key: hashJson({
          ...base,
          params_hash,
          features: blockFeatures(b),
          pairs: exhaustive ? null : b.listed ? b.listed.pairs : task.inputs_hash,
        }),
        path: `matches/${b.ab[0]}-${b.ab[1]}.bin`,
        images: blockImages(b),
        block: [names(b.ab[0]), names(b.ab[1])] as [string[], string[]],
        ...reads,
        weight: weigh("match", b),
        pairs: b.listed?.pairs ?? null,
      }));
      matches = new Map(items.map((it) => [it.path, it.key]));
      return items;
    }
    if (task.kind === "verify") {
      // Verification follows the blocks of the matches it reads: a listed block verifies its pairs alone.
      // After a list still to be chosen, its blocks come with the match task's.
      const verified = deferred ? [] : (planned ?? blocks.map((ab) => ({ ab, listed: null })));
      const items = verified.map((b) => ({
        key: hashJson({
          ...base,
          matches: matches?.get(`matches/${b.ab[0]}-${b.ab[1]}.bin`) ?? task.inputs_hash,
          features: blockFeatures(b),
          cameras,
        }),
        path: `two_view_geometries/${b.ab[0]}-${b.ab[1]}.json`,
        images: blockImages(b),
        block: [names(b.ab[0]), names(b.ab[1])] as [string[], string[]],
        weight: weigh("verify", b),
        pairs: b.listed?.pairs ?? null,
      }));
      matches = null;
      planned = null;
      deferred = false;
      return items;
    }
    if (task.kind === "map" && (task.params.spec as { kind?: string } | undefined)?.kind === "hierarchical") {
      // Hierarchical mapping (protocol/hierarchical.ts): the partition of the view graph; the clusters and the merge follow.
      return [wholeSetItem(PARTITION_PATH)];
    }
    return null;
  });
}

/** Whether an item's result may be reused by another job: not a chosen pair list, whose blocks the job plans from it. */
export const reusable = (item: Pick<ShardItem, "path">) => item.path !== PAIR_LIST_PATH;

/** A block of two content groups (`ab`), with its part of a known pair list. */
interface PlannedBlock {
  ab: [number, number];
  listed: ListedBlock | null;
}

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

/**
 * A task's items with their cache hits; the others grouped into shards of about a few seconds' work:
 * extraction's in order, match and verify blocks heaviest first (storage/job/sizing.ts; packed again
 * by real keypoint counts once the extraction has run).
 */
export function plannedItems(
  kind: TaskKind,
  items: ItemPlan[] | null,
  hits: Record<string, TaskOutputs>,
  awaitingList: boolean,
): PlannedItem[] | null {
  // A verify task after pairs chosen on a runner is sharded with no items yet: its blocks come with the match task's.
  if (awaitingList) return [];
  if (!items || items.length === 0) return null;
  const shardOf = new Map<ItemPlan, number>();
  const pack = kind === "match" || kind === "verify" ? packHeaviestFirst : groupShards;
  pack(
    items.filter((it) => !hits[it.key]),
    shardBudget(kind),
    shardMaxItems(kind),
  ).forEach((shard, idx) => shard.forEach((it) => shardOf.set(it, idx)));
  return items.map((it) => {
    const { weight: _weight, pairs, ...item } = it;
    return { item, cached: hits[it.key] ?? null, shard: shardOf.get(it) ?? null, pairs };
  });
}

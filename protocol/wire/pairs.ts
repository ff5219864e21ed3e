/**
 * @module Pair lists the service knows at submission: sequential pairs (in the images' sequence
 * order), and explicit lists (spec 2.12 PairsSpec `explicit`): `image_pairs` or a finalized upload in
 * `image_name_pairs_txt` (newline-delimited `image1 image2` rows, COLMAP's pairs file) read against a
 * dataset's image names. The Worker checks a list with this at submission (a bad list never creates
 * a job) and the runners read the same list with it before matching (4.6 rule 5).
 */
import { timestampBigInt } from "../int64-json";

/** The largest pair-list upload accepted: about 500,000 rows of two 16-character names. */
export const MAX_PAIR_LIST_BYTES = 16 << 20;

/** Problems reported for one list; the rest are counted, not listed. */
export const MAX_PAIR_LIST_ERRORS = 20;

/** A row of a pair list: `row` is a 1-based line number of a text list, a 0-based index of `image_pairs`. */
export interface PairRow {
  row: number;
  names: string[];
}

export interface PairRowError {
  row: number;
  /** For a row of `image_pairs`: which name the error is about. */
  field: "image_name1" | "image_name2" | null;
  code: "malformed_pair_row" | "unknown_image" | "self_pair";
  message: string;
}

/**
 * The rows of an `image_name_pairs_txt` file: names separated by spaces or tabs, one pair a line;
 * blank lines and `#` comments are skipped (as COLMAP reads it). A name holding a space can only be
 * named through `image_pairs`.
 */
export function pairRowsOfText(text: string): PairRow[] {
  const rows: PairRow[] = [];
  text.split("\n").forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    rows.push({ row: i + 1, names: trimmed.split(/[ \t]+/) });
  });
  return rows;
}

/** The rows of `image_pairs`. */
export const pairRowsOfList = (list: readonly { image_name1: string; image_name2: string }[]): PairRow[] =>
  list.map((p, i) => ({ row: i, names: [p.image_name1, p.image_name2] }));

/**
 * The pairs a list names, as indices into `imageNames` (the dataset's order): each unordered pair
 * once, as (i, j) with i < j, sorted row-major, so a list and its duplicates (a b, b a, a b) give
 * the same pairs. Rows that are not two names, name an image the dataset lacks, or pair an image
 * with itself are errors (the first MAX_PAIR_LIST_ERRORS of them; `error_count` counts all).
 */
export function explicitPairs(
  imageNames: readonly string[],
  rows: readonly PairRow[],
): { pairs: [number, number][]; errors: PairRowError[]; error_count: number } {
  const index = new Map(imageNames.map((name, i) => [name, i]));
  const n = imageNames.length;
  const seen = new Set<number>();
  const pairs: [number, number][] = [];
  const errors: PairRowError[] = [];
  let errorCount = 0;
  const fail = (e: PairRowError) => {
    errorCount += 1;
    if (errors.length < MAX_PAIR_LIST_ERRORS) errors.push(e);
  };
  for (const { row, names } of rows) {
    if (names.length !== 2) {
      fail({ row, field: null, code: "malformed_pair_row", message: `expected two image names, found ${names.length}` });
      continue;
    }
    const at = names.map((name) => index.get(name));
    let known = true;
    at.forEach((i, k) => {
      if (i !== undefined) return;
      known = false;
      const field = k === 0 ? "image_name1" : "image_name2";
      fail({ row, field, code: "unknown_image", message: `no image named '${names[k]!.slice(0, 200)}' in the dataset` });
    });
    if (!known) continue;
    const [a, b] = at as [number, number];
    if (a === b) {
      fail({ row, field: null, code: "self_pair", message: `pairs image '${names[0]!.slice(0, 200)}' with itself` });
      continue;
    }
    const [i, j] = a < b ? [a, b] : [b, a];
    if (seen.has(i * n + j)) continue;
    seen.add(i * n + j);
    pairs.push([i, j]);
  }
  pairs.sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  return { pairs, errors, error_count: errorCount };
}

/**
 * Sequential pairs (2.12 `sequential`) as indices of n images in sequence order: each image with its
 * next `overlap` images, (i, i + k) for 1 <= k <= overlap, row-major (COLMAP's sequential matcher
 * without loop detection or quadratic overlap).
 */
export function sequentialPairIndices(n: number, overlap: number): [number, number][] {
  if (!Number.isInteger(overlap) || overlap < 1)
    throw new RangeError(`sequential pairs: overlap must be a positive integer, got ${overlap}`);
  const pairs: [number, number][] = [];
  for (let i = 0; i < n; i += 1) for (let k = 1; k <= overlap && i + k < n; k += 1) pairs.push([i, i + k]);
  return pairs;
}

/**
 * The images in sequence order, as indices: by their pose priors' `timestamp_ns` (4.12: timestamps
 * order a sequence) when every image has one, equal ones in the dataset's order; else the dataset's
 * order (by name). A capture's clock says its order where names may not (a camera's counter
 * wrapping, frames of two devices).
 */
export function sequenceOrderIndices(timestamps: readonly (number | string | null | undefined)[]): number[] {
  const order = timestamps.map((_, i) => i);
  if (timestamps.some((t) => t === null || t === undefined)) return order;
  const stamps = timestamps.map((t) => timestampBigInt(t!));
  return order.sort((a, b) => (stamps[a]! < stamps[b]! ? -1 : stamps[a]! > stamps[b]! ? 1 : a - b));
}

/** Sequential pairs (2.12 `sequential`, `overlap`) of images in `order` (sequenceOrderIndices), as indices, (i, j) with i < j, row-major. */
export function sequencePairs(order: readonly number[], overlap: number): [number, number][] {
  return sequentialPairIndices(order.length, overlap)
    .map(([a, b]) => [Math.min(order[a]!, order[b]!), Math.max(order[a]!, order[b]!)] as [number, number])
    .sort((p, q) => p[0] - q[0] || p[1] - q[1]);
}

/**
 * The item of a match task whose pairs a runner chooses (RUNNER_CHOSEN_PAIR_STRATEGIES): its first
 * shard chooses the whole list, one `image_name_pairs_txt` file at this path, and the service then
 * plans the blocks that hold its pairs, each reading that file (runners.md "Shards").
 */
export const PAIR_LIST_PATH = "pairs.txt";

/**
 * Pair strategies whose list a match task's first shard chooses on a runner: from an index a task of
 * the job builds (retrieval, vocabtree), or from the images' positions (spatial, from_poses: GPS in a
 * local frame and pose priors, browser-runtime/stages/positions.ts). Planned before the list exists,
 * every block of the content groups would be a shard, nearly all of them without a pair.
 */
export const RUNNER_CHOSEN_PAIR_STRATEGIES: readonly string[] = ["retrieval", "vocabtree", "spatial", "from_poses"];

/**
 * Where a match block's pair list is, beside its matches (issue 18: pair lists are artifacts):
 * `matches/<a>-<b>.bin` -> `pairs/<a>-<b>.txt`; null for a path that is no match block's.
 */
export function blockPairListPath(matchesPath: string): string | null {
  const block = /^matches\/(.+)\.bin$/.exec(matchesPath);
  return block ? `pairs/${block[1]}.txt` : null;
}

/**
 * A block's pairs as `image_name_pairs_txt` (COLMAP's pairs file): a `#` line naming the block,
 * then one `image1 image2` row a pair, in the order they were matched; the files of a task's blocks
 * joined are the task's whole list.
 */
export function pairListText(block: string, pairs: readonly { imageName1: string; imageName2: string }[]): string {
  return `# image pairs of ${block}\n${pairs.map((p) => `${p.imageName1} ${p.imageName2}\n`).join("")}`;
}

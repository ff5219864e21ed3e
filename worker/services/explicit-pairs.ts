/**
 * @module Explicit pairs (2.12 PairsSpec `explicit`, 4.6 rule 5): the list a match stage names,
 * inline (`image_pairs`) or as a finalized upload of the tenant (`pairs_blob_sha`, rows
 * `image1 image2`), read against the frozen dataset at submission. A list with a malformed row, an
 * unknown image name or a self pair, an upload the tenant does not store, one over
 * MAX_PAIR_LIST_BYTES, or a list of no pairs is 422 before anything is created. Duplicates
 * (a b, b a) are one pair. The job holds the upload; the pairs shape its match shards (shards.ts).
 */
import { PairsSpec } from "../../protocol";
import { MAX_PAIR_LIST_BYTES, type PairRow, explicitPairs, pairRowsOfList, pairRowsOfText } from "../../protocol/wire/pairs";
import { type FieldError, validation } from "../errors";
import { tenantStore } from "./stores";

export interface ExplicitPairList {
  /** The pairs as indices into the dataset's images, (i, j) with i < j, row-major. */
  pairs: [number, number][];
  /** The upload the list came from, which the job holds; null for `image_pairs`. */
  blob: { blob_sha: string; byte_size: number } | null;
}

/** The pair list of a stage's params when its pairs are explicit, checked against the dataset's image names (in its order); null otherwise. */
export async function explicitPairList(
  env: Env,
  tenantId: string,
  imageNames: readonly string[],
  params: Record<string, unknown>,
): Promise<ExplicitPairList | null> {
  if ((params.pairs as { strategy?: string } | undefined)?.strategy !== "explicit") return null;
  const spec = PairsSpec.parse(params.pairs);
  if (spec.image_pairs) return { pairs: checked(imageNames, pairRowsOfList(spec.image_pairs), null), blob: null };
  const sha = spec.pairs_blob_sha!;
  const bad = (message: string, code: string) =>
    validation(`pairs_blob_sha: ${message}`, [{ path: "pairs.pairs_blob_sha", message, code }]);
  const blob = await tenantStore(env, tenantId).getBlob(sha);
  if (!blob) throw bad(`no finalized upload with blob_sha ${sha} in this tenant (4.3)`, "unknown_pairs_blob");
  if (blob.size > MAX_PAIR_LIST_BYTES)
    throw bad(`the pair list is ${blob.size} bytes, at most ${MAX_PAIR_LIST_BYTES} are read`, "pair_list_too_large");
  const obj = await env.BLOBS.get(blob.r2_key);
  if (!obj) throw bad(`the bytes of blob ${sha} are missing`, "unknown_pairs_blob");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(await obj.arrayBuffer());
  } catch {
    throw bad(`blob ${sha} is not UTF-8 text of 'image1 image2' rows`, "not_a_pair_list");
  }
  return { pairs: checked(imageNames, pairRowsOfText(text), sha), blob: { blob_sha: sha, byte_size: blob.size } };
}

/** The list's pairs, or 422 naming each bad row (its line of an upload, its index in `image_pairs`). */
function checked(names: readonly string[], rows: PairRow[], sha: string | null): [number, number][] {
  const { pairs, errors, error_count } = explicitPairs(names, rows);
  if (error_count > 0) {
    const fieldErrors: FieldError[] = errors.map((e) =>
      sha
        ? { path: "pairs.pairs_blob_sha", message: `line ${e.row}: ${e.message}`, code: e.code }
        : { path: `pairs.image_pairs[${e.row}]${e.field ? `.${e.field}` : ""}`, message: e.message, code: e.code },
    );
    const first = fieldErrors[0]!;
    const where = sha ? `pair list ${sha}` : "image_pairs";
    throw validation(
      `explicit pairs: ${error_count} problem${error_count > 1 ? "s" : ""} in ${where}, the first: ${sha ? "" : `${first.path}: `}${first.message}` +
        (error_count > errors.length ? ` (the first ${errors.length} are listed)` : ""),
      fieldErrors,
    );
  }
  if (pairs.length === 0) {
    const path = sha ? "pairs.pairs_blob_sha" : "pairs.image_pairs";
    throw validation("explicit pairs: the list names no pair", [{ path, message: "no rows", code: "empty_pair_list" }]);
  }
  return pairs;
}

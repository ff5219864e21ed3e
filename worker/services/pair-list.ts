/**
 * @module The blocks of pairs chosen on a runner (retrieval, vocabulary-tree, spatial and from-poses pairs, issue 18), planned
 * when the match task's first shard has chosen the list (runners.md "Shards"): the list file is
 * read and checked against the dataset's names as an explicit list is at submission
 * (protocol/wire/pairs.ts), cut into the content groups' blocks that hold its pairs (shards.ts
 * planItems: sized by the extraction's keypoint counts, each block reading the list file), the
 * blocks' and their verify blocks' cache hits are taken from the tenant, and the job store adds
 * them in the transaction that records the list (storage/job/pair-list.ts).
 */
import type { TaskOutputs } from "../../protocol";
import { MAX_PAIR_LIST_BYTES, PAIR_LIST_PATH, explicitPairs, pairRowsOfText } from "../../protocol/wire/pairs";
import type { FieldError } from "../errors";
import type { ListedBlocks, PairListContext } from "../storage/job/pair-list";
import { blobKey } from "./blobs";
import { planItems, plannedItems } from "./shards";
import { tenantStore } from "./stores";

/** Whether a result is a chosen pair list (one file at PAIR_LIST_PATH): only such a result needs its blocks planned. */
export const isPairListResult = (outputs: TaskOutputs) =>
  outputs.artifacts.length === 1 && outputs.artifacts[0]!.files.length === 1 && outputs.artifacts[0]!.files[0]!.path === PAIR_LIST_PATH;

/**
 * The blocks of the pair list a runner answered for the list shard of `context`; errors when the
 * list is unreadable or names no pair of the dataset (the task then fails as for any invalid
 * result); neither when the file is missing, which the job store reports as for any result.
 */
export async function planPairListBlocks(
  env: Env,
  { tenant, job }: { tenant: string; job: string },
  context: PairListContext,
  outputs: TaskOutputs,
): Promise<{ blocks?: ListedBlocks; errors: FieldError[] }> {
  const file = outputs.artifacts[0]!.files[0]!;
  const path = "outputs_ref.artifacts.0.files.0";
  const object = await env.BLOBS.get(blobKey(tenant, file.blob_sha));
  if (!object) return { errors: [] };
  if (object.size > MAX_PAIR_LIST_BYTES)
    return { errors: [{ path, message: `the pair list is ${object.size} bytes, at most ${MAX_PAIR_LIST_BYTES}`, code: "pair_list" }] };
  const names = context.dataset.images.map((im) => im.name);
  const { pairs, errors } = explicitPairs(names, pairRowsOfText(await object.text()));
  if (errors.length > 0) return { errors: errors.map((e) => ({ path, message: `line ${e.row}: ${e.message}`, code: e.code })) };
  if (pairs.length === 0) return { errors: [{ path, message: "the pair list names no pair", code: "pair_list" }] };
  const chain = context.tasks.map((t) => (t.task_id === context.match_task_id ? { ...t, pair_list: pairs, pair_list_file: file } : t));
  const items = planItems(context.dataset, chain, context.keypoints ? new Map(Object.entries(context.keypoints)) : null);
  const at = context.tasks.findIndex((t) => t.task_id === context.match_task_id);
  const verifyAt = context.tasks.findIndex((t, i) => i > at && t.kind === "verify");
  const [match, verify] = [items[at] ?? [], verifyAt >= 0 ? (items[verifyAt] ?? []) : []];
  // (Cast: RPC typing cannot express the free-form members of TaskOutputs.)
  const hits = (await tenantStore(env, tenant).itemHits(
    job,
    [...match, ...verify].map((it) => it.key),
  )) as Record<string, TaskOutputs>;
  return {
    blocks: {
      match: plannedItems("match", match, hits, false) ?? [],
      verify: verifyAt >= 0 ? (plannedItems("verify", verify, hits, false) ?? []) : null,
    },
    errors: [],
  };
}

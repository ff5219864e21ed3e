/**
 * @module A hierarchical map task's work units (spec 2.12 `hierarchical`; protocol/hierarchical.ts,
 * runners.md "Hierarchical mapping"), made as the work becomes known: the task is sharded from
 * submission with one shard, the partition of the view graph; when it is done the service adds a
 * shard per cluster it names; when every cluster is mapped, one merge shard that reads their
 * files. Each is leased, lost, reclaimed, cancelled and resumed as any shard is (shards.ts). The
 * task's output is the merge shard's artifact alone.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import {
  HierarchicalPartition,
  MERGE_PATH,
  PARTITION_PATH,
  type ShardItem,
  type TaskOutputs,
  clusterPath,
  isClusterPath,
} from "../../../protocol";
import type { FieldError } from "../../errors";
import type { JobContext } from "./context";
import { appendEvent } from "./events";
import { jobDataset, taskRow } from "./records";
import { assembledOutputs, insertItems } from "./shards";

const keyOf = (value: unknown) => bytesToHex(sha256(utf8ToBytes(JSON.stringify(value))));

/** A hierarchical map task: the only map task that is sharded. */
const isHierarchical = (cx: JobContext, taskId: string) => {
  const task = taskRow(cx, taskId);
  return task?.kind === "map" && task.sharded === 1;
};

function taskItems(cx: JobContext, taskId: string): { ord: number; item: ShardItem; outputs: TaskOutputs | null }[] {
  return cx.sql
    .exec<{ ord: number; item_json: string; outputs_json: string | null }>(
      "SELECT ord, item_json, outputs_json FROM items WHERE task_id = ? ORDER BY ord",
      taskId,
    )
    .toArray()
    .map((r) => ({
      ord: r.ord,
      item: JSON.parse(r.item_json) as ShardItem,
      outputs: r.outputs_json ? (JSON.parse(r.outputs_json) as TaskOutputs) : null,
    }));
}

/**
 * What a partition shard's result must be beyond any shard's structure: its clusters (the artifact's
 * summary) name images of the dataset, at least two each, none twice in one cluster.
 */
export function partitionErrors(cx: JobContext, items: ShardItem[], outputs: TaskOutputs): FieldError[] {
  if (items.length !== 1 || items[0]!.path !== PARTITION_PATH || outputs.artifacts.length !== 1) return [];
  const path = "outputs_ref.artifacts.0.summary.clusters";
  const parsed = HierarchicalPartition.safeParse(outputs.artifacts[0]!.summary);
  if (!parsed.success)
    return [
      { path, message: "the partition's summary names its clusters: at most 1000 lists of 2 or more image names", code: "partition" },
    ];
  const names = new Set((jobDataset(cx)?.images ?? []).map((im) => im.name));
  return parsed.data.clusters.flatMap((cluster, k) => {
    const unknown = cluster.find((n) => !names.has(n));
    if (unknown !== undefined) return [{ path: `${path}.${k}`, message: `'${unknown}' is no image of the dataset`, code: "partition" }];
    if (new Set(cluster).size !== cluster.length)
      return [{ path: `${path}.${k}`, message: "an image twice in one cluster", code: "partition" }];
    return [];
  });
}

/**
 * After a shard of a hierarchical map succeeded, when no other shard of the task is left: the
 * clusters' shards after the partition, the merge shard after the clusters. Answers whether shards were added.
 */
export function growHierarchical(cx: JobContext, taskId: string): boolean {
  if (!isHierarchical(cx, taskId)) return false;
  const open = cx.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM shards WHERE task_id = ? AND status <> 'succeeded'", taskId).one().n;
  if (open > 0) return false;
  const items = taskItems(cx, taskId);
  const last = items.at(-1)!;
  const next = items.length;
  const add = (planned: ShardItem[]) => {
    insertItems(
      cx,
      taskId,
      planned.map((item, i) => ({ item, cached: null, shard: next + i })),
      next,
    );
  };
  if (last.item.path === PARTITION_PATH) {
    const { clusters } = HierarchicalPartition.parse(last.outputs!.artifacts[0]!.summary);
    appendEvent(cx, taskId, {
      kind: "log_line",
      level: "INFO",
      message: `view graph cut into ${clusters.length} cluster(s) of ${clusters.map((c) => c.length).join(", ")} images: each is mapped as a shard of its own`,
    });
    if (clusters.length > 0) {
      add(
        clusters.map((images, k) => ({
          key: keyOf({ partition: last.item.key, cluster: k + 1, images }),
          path: clusterPath(k + 1),
          images,
          block: null,
        })),
      );
      return true;
    }
  }
  if (last.item.path === PARTITION_PATH || isClusterPath(last.item.path)) {
    const clusters = items.filter((it) => isClusterPath(it.item.path));
    add([
      {
        key: keyOf({ merge: clusters.map((it) => it.item.key) }),
        path: MERGE_PATH,
        images: [...new Set(clusters.flatMap((it) => it.item.images))],
        block: null,
        reads: clusters.map((it) => it.outputs!.artifacts[0]!.files[0]!),
      },
    ]);
    return true;
  }
  return false;
}

/** A sharded task's one output: a hierarchical map's merge artifact, any other task's items assembled (shards.ts). */
export function shardedOutputs(cx: JobContext, taskId: string): TaskOutputs {
  if (!isHierarchical(cx, taskId)) return assembledOutputs(cx, taskId);
  const merged = taskItems(cx, taskId).find((it) => it.item.path === MERGE_PATH);
  return { artifacts: merged!.outputs!.artifacts, result: null };
}

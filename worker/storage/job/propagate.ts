/**
 * @module After each change, the job tells the others: the tenant's job index follows the job
 * (guarded by the event cursor, so a late update never overwrites a newer one) and records the
 * outputs of newly succeeded tasks (cache entries 3.2.1, artifacts 2.11); the dispatch queues
 * are offered the ready tasks and withdraw the others. Each is idempotent; a failure is retried
 * from the alarm, which also wakes at the earliest lease expiry (3.2.3).
 */
import { readConfig } from "../../config";
import { needsWebgpu, pinnedProvider } from "../../../protocol";
import type { QueueEntry } from "../job-rows";
import { dispatchers, tenantStore } from "../stubs";
import type { JobContext } from "./context";
import { latestEventId } from "./events";
import { type Row, bool, dependsOn, jobDataset, jobRow, oneshotDeadline, poolOptIn, runtimeDeadline, taskRows } from "./records";
import { isSharded, markItemsRecorded, pendingShards, unrecordedItems, untrustedShards } from "./shards";

/**
 * Memory a runner needs to map n images: the engine's model (keypoints, tracks, the reduced
 * bundle-adjustment system) grows about 3 MB per 8k-feature image, beside 128 MB of engine and host.
 */
export const mapMemory = (images: number) => 128 * 1024 ** 2 + images * 3 * 1024 ** 2;

/** How soon a missed propagation to the tenant index and the queues is retried. */
const PROPAGATE_RETRY_MS = 2_000;

/**
 * Tells the others what changed (group commit): when a propagation is under way, the changes made
 * meanwhile go out together in one more, which every caller of the meantime awaits. So each caller
 * still returns after its own change was told (a completion's cache entries are recorded before
 * `:complete` answers), but many runners completing shards of one job at once cost one round of
 * calls to the tenant and the queues, not one each.
 */
export function propagate(cx: JobContext): Promise<void> {
  if (!cx.sync.running) {
    cx.sync.running = propagateOnce(cx).finally(() => {
      cx.sync.running = null;
    });
    return cx.sync.running;
  }
  const again = () => {
    cx.sync.next = null;
    return propagate(cx);
  };
  cx.sync.next ??= cx.sync.running.then(again, again);
  return cx.sync.next;
}

async function propagateOnce(cx: JobContext): Promise<void> {
  const job = jobRow(cx)!;
  const live = ["pending", "running"].includes(job.status) && !job.cancel_requested;
  const rows = taskRows(cx);
  const succeeded = new Set(rows.filter((r) => r.status === "succeeded").map((r) => r.task_id as string));
  const units = (r: Row) => (isSharded(r) ? pendingShards(cx, r.task_id as string) : 1);
  const entry = (r: Row): QueueEntry => ({
    tenant_id: job.tenant_id,
    job_id: job.job_id,
    task_id: r.task_id as string,
    project_id: job.project_id,
    kind: r.kind as QueueEntry["kind"],
    rv_id: r.rv_id as string,
    units: units(r),
    min_memory: r.kind === "map" ? mapMemory(jobDataset(cx)?.images.length ?? 0) : 0,
    needs_webgpu: needsWebgpu(pinnedProvider(JSON.parse(r.params_json as string))),
  });
  // Leasable: pending with every dependency done; a sharded task also while it runs and has pending shards.
  const leasable = (r: Row) =>
    (r.status === "pending" || (isSharded(r) && r.status === "running")) && dependsOn(r).every((d) => succeeded.has(d)) && units(r) > 0;
  const ready = live ? rows.filter(leasable).map(entry) : [];
  const readyIds = new Set(ready.map((e) => e.task_id));
  const withdrawn = rows.filter((r) => !readyIds.has(r.task_id as string)).map((r) => r.task_id as string);
  // Every shard of each scope's dispatcher holds the scope's queue (stubs.ts dispatcher).
  const trustedQueues = [
    ...dispatchers(cx.env, { tenant: job.tenant_id }),
    ...(readConfig(cx.env).operatorRunnerToken ? dispatchers(cx.env, "operator") : []),
  ];
  const poolQueues = poolOptIn(cx) ? dispatchers(cx.env, "pool") : [];
  // The volunteer pool gets only work whose results are checked (runners.md "Trust"): shards, as many as wait for no trusted decision.
  const poolReady = ready.flatMap((e) => {
    const row = rows.find((r) => r.task_id === e.task_id)!;
    // A hierarchical map's shards (map clusters, seal the model) are trusted runners' work, as any map.
    const units = isSharded(row) && row.kind !== "map" ? untrustedShards(cx, e.task_id) : 0;
    return units > 0 ? [{ ...e, units }] : [];
  });
  const poolWithdrawn = rows.map((r) => r.task_id as string).filter((id) => !poolReady.some((e) => e.task_id === id));
  const told = {
    job: JSON.stringify(job),
    offer: JSON.stringify([ready.map((e) => e.task_id), withdrawn, poolReady.map((e) => e.task_id)]),
  };
  // Succeeded tasks whose outputs the tenant has not recorded (its cache and artifact registry).
  const completed = rows
    .filter((r) => r.status === "succeeded" && r.recorded === 0)
    .map((r) => ({
      task_id: r.task_id as string,
      cache_key: r.cache_key as string,
      cacheable: !bool(r.cache_hit) && r.kind !== "artifact_import",
      outputs_json: r.outputs_json as string,
    }));
  const items = unrecordedItems(cx);
  const dataset = jobDataset(cx);
  try {
    await Promise.all([
      told.job !== cx.told.job || completed.length > 0 || items.length > 0
        ? tenantStore(cx.env, job.tenant_id).syncJob(job, latestEventId(cx), {
            dataset: dataset && { dataset_id: dataset.dataset_id, manifest_hash: dataset.manifest_hash },
            tasks: completed,
            items: items.map((it) => ({ task_id: it.task_id, cache_key: it.cache_key, outputs_json: it.outputs_json })),
          })
        : null,
      ...(told.offer !== cx.told.offer
        ? [
            ...trustedQueues.map((q) => q.offer(job.tenant_id, job.job_id, ready, withdrawn)),
            ...poolQueues.map((q) => q.offer(job.tenant_id, job.job_id, poolReady, poolWithdrawn)),
          ]
        : []),
    ]);
    cx.told = told;
    for (const t of completed) cx.sql.exec("UPDATE tasks SET recorded = 1 WHERE task_id = ?", t.task_id);
    markItemsRecorded(cx, items);
    cx.sql.exec("UPDATE job SET sync_pending = 0 WHERE id = 1 AND sync_pending = 1");
  } catch (err) {
    // The change itself is durable here; the index and the queues catch up from the alarm.
    console.warn(`job ${job.job_id}: propagation failed, retrying`, err);
    cx.told = { job: "", offer: "" };
    cx.sql.exec("UPDATE job SET sync_pending = 1 WHERE id = 1");
    await scheduleAlarm(cx);
  }
}

/**
 * The alarm wakes at the earliest lease expiry, or sooner when a propagation must be retried, or
 * at the job's `max_runtime_seconds` deadline, or at a one-shot job's (records.ts oneshotDeadline).
 */
export async function scheduleAlarm(cx: JobContext): Promise<void> {
  const expiry = cx.sql.exec<{ t: number | null }>("SELECT MIN(expires_at) AS t FROM leases WHERE state = 'active'").one().t;
  const retry = cx.sql.exec<{ p: number }>("SELECT sync_pending AS p FROM job WHERE id = 1").toArray()[0]?.p
    ? Date.now() + PROPAGATE_RETRY_MS
    : null;
  const next = [expiry, retry, runtimeDeadline(cx), oneshotDeadline(cx)].filter((t): t is number => t !== null);
  if (next.length === 0) await cx.storage.deleteAlarm();
  else await cx.storage.setAlarm(Math.min(...next));
}

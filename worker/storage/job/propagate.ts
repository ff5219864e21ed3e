/**
 * @module After each change, the job tells the others: the tenant's job index follows the job
 * (guarded by the event cursor, so a late update never overwrites a newer one) and records the
 * outputs of newly succeeded tasks (cache entries 3.2.1, artifacts 2.11); the dispatch queues
 * are offered the ready tasks and withdraw the others. Each is idempotent; a failure is retried
 * from the alarm, which also wakes at the earliest lease expiry (3.2.3).
 */
import type { QueueEntry } from "../job-rows";
import { dispatcher, tenantStore } from "../stubs";
import type { JobContext } from "./context";
import { latestEventId } from "./events";
import { type Row, bool, dependsOn, jobDataset, jobRow, poolOptIn, taskRows } from "./records";

/** How soon a missed propagation to the tenant index and the queues is retried. */
const PROPAGATE_RETRY_MS = 2_000;

export async function propagate(cx: JobContext): Promise<void> {
  const job = jobRow(cx)!;
  const live = ["pending", "running"].includes(job.status) && !job.cancel_requested;
  const rows = taskRows(cx);
  const succeeded = new Set(rows.filter((r) => r.status === "succeeded").map((r) => r.task_id as string));
  const entry = (r: Row): QueueEntry => ({
    tenant_id: job.tenant_id,
    job_id: job.job_id,
    task_id: r.task_id as string,
    project_id: job.project_id,
    kind: r.kind as QueueEntry["kind"],
    rv_id: r.rv_id as string,
  });
  const ready = live ? rows.filter((r) => r.status === "pending" && dependsOn(r).every((d) => succeeded.has(d))).map(entry) : [];
  const withdrawn = rows.filter((r) => r.status !== "pending" || !live).map((r) => r.task_id as string);
  const queues = [dispatcher(cx.env, { tenant: job.tenant_id }), ...(poolOptIn(cx) ? [dispatcher(cx.env, "pool")] : [])];
  const told = { job: JSON.stringify(job), offer: JSON.stringify([ready.map((e) => e.task_id), withdrawn]) };
  // Succeeded tasks whose outputs the tenant has not recorded (its cache and artifact registry).
  const completed = rows
    .filter((r) => r.status === "succeeded" && r.recorded === 0)
    .map((r) => ({
      task_id: r.task_id as string,
      cache_key: r.cache_key as string,
      cacheable: !bool(r.cache_hit) && r.kind !== "artifact_import",
      outputs_json: r.outputs_json as string,
    }));
  const dataset = jobDataset(cx);
  try {
    await Promise.all([
      told.job !== cx.told.job || completed.length > 0
        ? tenantStore(cx.env, job.tenant_id).syncJob(job, latestEventId(cx), {
            dataset: dataset && { dataset_id: dataset.dataset_id, manifest_hash: dataset.manifest_hash },
            tasks: completed,
          })
        : null,
      ...(told.offer !== cx.told.offer ? queues.map((q) => q.offer(job.tenant_id, job.job_id, ready, withdrawn)) : []),
    ]);
    cx.told = told;
    for (const t of completed) cx.sql.exec("UPDATE tasks SET recorded = 1 WHERE task_id = ?", t.task_id);
    cx.sql.exec("UPDATE job SET sync_pending = 0 WHERE id = 1 AND sync_pending = 1");
  } catch (err) {
    // The change itself is durable here; the index and the queues catch up from the alarm.
    console.warn(`job ${job.job_id}: propagation failed, retrying`, err);
    cx.told = { job: "", offer: "" };
    cx.sql.exec("UPDATE job SET sync_pending = 1 WHERE id = 1");
    await scheduleAlarm(cx);
  }
}

/** The alarm wakes at the earliest lease expiry, or sooner when a propagation must be retried. */
export async function scheduleAlarm(cx: JobContext): Promise<void> {
  const expiry = cx.sql.exec<{ t: number | null }>("SELECT MIN(expires_at) AS t FROM leases WHERE state = 'active'").one().t;
  const retry = cx.sql.exec<{ p: number }>("SELECT sync_pending AS p FROM job WHERE id = 1").toArray()[0]?.p ? Date.now() + PROPAGATE_RETRY_MS : null;
  const next = [expiry, retry].filter((t): t is number => t !== null);
  if (next.length === 0) await cx.storage.deleteAlarm();
  else await cx.storage.setAlarm(Math.min(...next));
}

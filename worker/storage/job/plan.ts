/**
 * @module Persisting a submitted job (spec 2.9, 3.2.1): the job and its tasks with their
 * dependencies; a cached task (its key already succeeded in the tenant) or an imported one
 * (4.10) is born succeeded, with its events, and is never enqueued.
 */
import { PAIR_LIST_PATH } from "../../../protocol/wire/pairs";
import type { JobPlan, JobRow } from "../job-rows";
import type { JobContext } from "./context";
import { recordFiles } from "./blobs";
import { appendEvent } from "./events";
import { propagate } from "./propagate";
import { jobRow } from "./records";
import { assembledOutputs, insertItems } from "./shards";
import { packByKeypoints } from "./sizing";
import { setStatus, settle } from "./status";

export async function createJob(cx: JobContext, plan: JobPlan): Promise<JobRow> {
  if (jobRow(cx)) throw new Error(`job ${plan.job_id} exists`);
  const allItemsCached = new Set<string>();
  cx.storage.transactionSync(() => {
    cx.sql.exec(
      `INSERT INTO job (id, job_id, tenant_id, project_id, recipe, status, created_at, recon_id, pool_opt_in, dataset_json, artifacts_json,
         max_runtime_seconds, action_id)
       VALUES (1, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)`,
      plan.job_id,
      plan.tenant_id,
      plan.project_id,
      plan.recipe,
      plan.created_at,
      plan.recon_id,
      plan.pool_opt_in ? 1 : 0,
      JSON.stringify(plan.dataset),
      JSON.stringify(plan.input_artifacts),
      plan.max_runtime_seconds ?? null,
      plan.action_id ?? null,
    );
    recordFiles(cx, [...Object.values(plan.input_artifacts), { files: plan.input_blobs ?? [] }]);
    plan.tasks.forEach((t, ord) => {
      let done = t.cached ?? t.imported ?? null;
      cx.sql.exec(
        `INSERT INTO tasks (task_id, ord, kind, phase, status, depends_json, params_json, inputs_hash, params_hash, rv_id,
           cache_key, outputs_json, cache_hit, started_at, finished_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        t.task_id,
        ord,
        t.kind,
        t.phase,
        done ? "succeeded" : "pending",
        JSON.stringify(t.depends_on),
        JSON.stringify(t.params),
        t.inputs_hash,
        t.params_hash,
        t.rv_id,
        t.cache_key,
        done ? JSON.stringify(done) : null,
        t.cached ? 1 : 0,
        done ? plan.created_at : null,
        done ? plan.created_at : null,
      );
      if (t.items && !done) {
        cx.sql.exec("UPDATE tasks SET sharded = 1 WHERE task_id = ?", t.task_id);
        insertItems(cx, t.task_id, t.items);
        // A chosen pair list decides the task's blocks: a trusted runner's work (runners.md "Trust").
        if (t.items.some((it) => it.item.path === PAIR_LIST_PATH && it.shard !== null))
          cx.sql.exec("UPDATE shards SET need = 'trusted' WHERE task_id = ?", t.task_id);
        for (const it of t.items) if (it.cached) recordFiles(cx, it.cached.artifacts);
        // Every item reused: the task is done as planned, its artifact assembled from the cached items.
        if (t.items.length > 0 && t.items.every((it) => it.cached)) {
          done = assembledOutputs(cx, t.task_id);
          cx.sql.exec(
            "UPDATE tasks SET status = 'succeeded', outputs_json = ?, started_at = ?, finished_at = ? WHERE task_id = ?",
            JSON.stringify(done),
            plan.created_at,
            plan.created_at,
            t.task_id,
          );
          allItemsCached.add(t.task_id);
        }
      }
      if (done) recordFiles(cx, done.artifacts);
    });
    appendEvent(cx, null, { kind: "job_status", status: "pending", error_class: null });
    // Features that exist already (an input artifact, a reused extraction) give their keypoint counts at once.
    packByKeypoints(cx);
    const bornDone = (t: (typeof plan.tasks)[number]) => t.cached || t.imported || allItemsCached.has(t.task_id);
    for (const t of plan.tasks.filter(bornDone)) {
      const how = t.cached
        ? `cache hit: reused the outputs of cache_key ${t.cache_key}`
        : allItemsCached.has(t.task_id)
          ? `cache hit: reused every one of its ${t.items!.length} items`
          : t.imported!.artifacts.length > 0
            ? `registered ${t.imported!.artifacts.map((a) => `'${a.name}'`).join(", ")} without copying bytes`
            : "done by the service at submission";
      appendEvent(cx, t.task_id, { kind: "phase_started", phase: t.phase });
      appendEvent(cx, t.task_id, { kind: "log_line", level: "INFO", message: how });
      if (plan.adopted_snapshot && t === plan.tasks.at(-1)) {
        appendEvent(cx, t.task_id, {
          kind: "snapshot_available",
          snapshot_seq: plan.adopted_snapshot.seq,
          summary: plan.adopted_snapshot.summary,
        });
      }
      appendEvent(cx, t.task_id, { kind: "phase_completed", phase: t.phase });
    }
    for (const t of plan.tasks.filter((t) => t.items?.some((it) => it.cached) && !allItemsCached.has(t.task_id) && !t.cached)) {
      const hits = t.items!.filter((it) => it.cached).length;
      appendEvent(cx, t.task_id, {
        kind: "log_line",
        level: "INFO",
        message: `cache hit: reused ${hits} of its ${t.items!.length} items; the others are computed`,
      });
    }
    if (plan.tasks.every(bornDone)) {
      // Nothing to admit: the job runs and finishes in the same instant.
      cx.sql.exec("UPDATE job SET started_at = created_at WHERE id = 1");
      setStatus(cx, "running");
      settle(cx);
    }
  });
  await propagate(cx);
  return jobRow(cx)!;
}

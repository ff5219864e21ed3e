/**
 * @module Deleting a project (spec 4.2): the cascade through everything it owns (its datasets
 * and their images, its jobs, its artifacts, its reconstructions), releasing their blob
 * references; refused while a job is active (7: 409).
 */
import { type Outcome, clash, missing, ok } from "../outcome";
import * as artifacts from "./artifacts";
import * as datasets from "./datasets";
import * as garbage from "./garbage";
import * as jobs from "./jobs";
import * as projects from "./projects";
import * as reconstructions from "./reconstructions";

/** Answers the ids of the deleted jobs, whose JobStores the caller purges. */
export function deleteProject(db: DurableObjectStorage, projectId: string): Outcome<{ job_ids: string[] }> {
  if (!projects.get(db, projectId)) return missing("project");
  const active = db.sql
    .exec<{ job_id: string }>("SELECT job_id FROM jobs WHERE project_id = ? AND status IN ('pending', 'running')", projectId)
    .toArray();
  if (active.length > 0) return clash(`the project has ${active.length} active job(s), e.g. ${active[0]!.job_id}: cancel them first`);
  const jobIds = db.sql
    .exec<{ job_id: string }>("SELECT job_id FROM jobs WHERE project_id = ?", projectId)
    .toArray()
    .map((j) => j.job_id);
  db.transactionSync(() => {
    for (const d of db.sql.exec<{ dataset_id: string }>("SELECT dataset_id FROM datasets WHERE project_id = ?", projectId)) {
      datasets.drop(db, d.dataset_id);
    }
    for (const jobId of jobIds) jobs.drop(db, jobId);
    for (const a of db.sql.exec<{ artifact_id: string }>("SELECT artifact_id FROM artifacts WHERE project_id = ?", projectId).toArray()) {
      artifacts.drop(db, a.artifact_id);
    }
    for (const r of db.sql.exec<{ recon_id: string }>("SELECT recon_id FROM reconstructions WHERE project_id = ?", projectId).toArray()) {
      reconstructions.drop(db, r.recon_id);
    }
    db.sql.exec("DELETE FROM projects WHERE project_id = ?", projectId);
  });
  garbage.schedule(db);
  return ok({ job_ids: jobIds });
}

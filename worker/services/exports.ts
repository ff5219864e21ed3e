/**
 * @module Exports (spec 1.2 `export.*`, 2.9 task kind `export`, 6 phase `export`): a sealed
 * snapshot or one of its components, as its artifact (2.11 `reconstruction.snapshot` /
 * `reconstruction.submodel`), exported by a runner in a one-task job on the reconstruction; the
 * result is that job's StageArtifact (4.8, 4.10). Checked before anything is queued: the
 * reconstruction, the capability, the snapshot and the component.
 */
import { type ExportRequest, type ExportTaskParams, type JobAccepted, type StageArtifact, exportCapability } from "../../protocol";
import { conflict, notFound } from "../errors";
import { artifactResource } from "./artifacts";
import { requireCapability } from "./capabilities";
import { submitJob } from "./jobs";
import { reconstructionOf } from "./snapshots";
import { jobStore, tenantStore } from "./stores";

/** The dataset as the job that made `artifact` froze it (the photos an export references), or null. */
export async function producerDataset(env: Env, tenantId: string, artifact: StageArtifact) {
  return (await jobStore(env, tenantId, artifact.job_id).frozenDataset()) ?? null;
}

export async function submitExport(env: Env, tenantId: string, reconId: string, body: ExportRequest): Promise<JobAccepted> {
  const recon = await reconstructionOf(env, tenantId, reconId);
  requireCapability(env, exportCapability(body.format));
  const tenant = tenantStore(env, tenantId);
  const seqs: number[] = (await tenant.snapshotSeqs(reconId)) ?? [];
  const seq = body.seq ?? seqs.at(-1);
  if (seq === undefined)
    throw conflict(`reconstruction ${reconId} has no sealed snapshot yet: export it once snapshot_available was announced`);
  if (!seqs.includes(seq)) throw notFound(`snapshot ${seq} of reconstruction ${reconId}`);
  const idx = body.submodel_idx ?? null;
  const row = await tenant.snapshotArtifact(reconId, seq, idx);
  if (!row) throw notFound(`component ${idx} of snapshot ${seq}`);
  const artifact = artifactResource(row);
  const params: ExportTaskParams = {
    export: { format: body.format, recon_id: reconId, seq, submodel_idx: idx, name: body.name ?? body.format, options: body.options },
  };
  return submitJob(env, {
    tenantId,
    projectId: recon.project_id,
    dataset: await producerDataset(env, tenantId, artifact),
    recipe: "export",
    stages: [{ kind: "export", params }],
    input_artifacts: { [idx === null ? "snapshot" : "submodel"]: artifact },
    recon: { recon_id: reconId },
  });
}

/**
 * @module `POST /v1/reconstructions:merge` (spec 4.9 rule 3, capability `recon.merge`): a job of
 * one `merge` task (an extension kind, 9.2) under the target reconstruction, which a runner
 * computes and seals as the target's next snapshot. Checked before anything is made: every
 * reconstruction is the tenant's (404), the sources are in the target's project (422
 * `other_project`), and each has a sealed snapshot (409).
 */
import type { DatasetSnapshot, JobAccepted, MergeRequest, MergeTaskModel, MergeTaskParams, StageArtifact } from "../../protocol";
import { validation } from "../errors";
import { requireCapability } from "./capabilities";
import { producerDataset } from "./exports";
import { submitJob } from "./jobs";
import { reconstructionOf, snapshotInputs } from "./snapshots";
import { artifactResource } from "./artifacts";
import { jobStore, tenantStore } from "./stores";

/**
 * Content SHA-256 by image name of the model in a snapshot artifact: the ones a merge recorded in
 * its output's metadata; through a georegister or :to_cubemap, those of the snapshot it read; else
 * those of the dataset its mapping job froze.
 */
async function imageShasOf(env: Env, tenantId: string, artifact: StageArtifact, depth = 0): Promise<Record<string, string>> {
  const store = jobStore(env, tenantId, artifact.job_id);
  // (Cast: RPC typing cannot express the free-form members of TaskOutputs.)
  const detail = (await store.detail()) as { tasks: { kind: string; outputs_ref: { artifacts: StageArtifact[] } | null }[] } | null;
  if (!detail) return {};
  const recorded = detail.tasks.find((t) => t.kind === "merge")?.outputs_ref?.artifacts[0]?.metadata.image_shas;
  if (recorded) return recorded as Record<string, string>;
  if (depth < 32 && detail.tasks.some((t) => t.kind === "georegister" || t.kind === "to_cubemap")) {
    const read = await store.inputArtifactId("snapshot");
    const row = read ? await tenantStore(env, tenantId).getArtifact(read) : null;
    if (row) return imageShasOf(env, tenantId, artifactResource(row), depth + 1);
  }
  // (Cast: RPC typing cannot express the frozen dataset.)
  const dataset = (await producerDataset(env, tenantId, artifact)) as DatasetSnapshot | null;
  return Object.fromEntries((dataset?.images ?? []).map((i) => [i.name, i.content_sha]));
}

/** The latest sealed snapshot's root as an input, with its images' content SHA-256 by name. */
async function modelOf(env: Env, tenantId: string, reconId: string) {
  const { seq, root } = await snapshotInputs(env, tenantId, reconId, undefined, "merge");
  const model: MergeTaskModel = { recon_id: reconId, seq, image_shas: await imageShasOf(env, tenantId, root) };
  return { model, root, dataset: (await producerDataset(env, tenantId, root)) as DatasetSnapshot | null };
}

export async function submitMerge(env: Env, tenantId: string, body: MergeRequest): Promise<JobAccepted> {
  requireCapability(env, "recon.merge");
  const target = await reconstructionOf(env, tenantId, body.target_recon_id);
  const sources = await Promise.all(body.source_recon_ids.map((rid) => reconstructionOf(env, tenantId, rid)));
  const strangers = sources.flatMap((s, i) =>
    s.project_id === target.project_id
      ? []
      : [
          {
            path: `source_recon_ids.${i}`,
            message: `reconstruction ${s.recon_id} is in project ${s.project_id}, not the target's ${target.project_id}`,
            code: "other_project",
          },
        ],
  );
  if (strangers.length > 0) throw validation("every source must belong to the target's project (4.9 rule 3)", strangers);
  const t = await modelOf(env, tenantId, target.recon_id);
  const input_artifacts: Record<string, StageArtifact> = { snapshot: t.root };
  const params: MergeTaskParams = { merge: { target: t.model, sources: [], bundle_adjust: body["x-bundle_adjust"] } };
  for (const [i, s] of sources.entries()) {
    const m = await modelOf(env, tenantId, s.recon_id);
    input_artifacts[`source.${i}`] = m.root;
    params.merge.sources.push({ ...m.model, sim3: body.sim3_aligners?.[i] ?? null });
  }
  return submitJob(env, {
    tenantId,
    projectId: target.project_id,
    dataset: t.dataset,
    recipe: "merge",
    // Each request seals a snapshot of its own: never answered from another job's cache (3.2.1).
    stages: [{ kind: "merge", params, own_outputs: true }],
    input_artifacts,
    recon: { recon_id: target.recon_id },
  });
}

/** @module Reconstruction (2.7), SubModel (2.8) and the snapshot listing (2.10) as the API renders them. */
import { z } from "zod";
import { Id, Links, Sha256, Timestamp } from "./common";
import { ModelSummary } from "./snapshot";
import { PipelineSpec } from "./specs";

export const Reconstruction = z
  .object({
    recon_id: Id,
    project_id: Id,
    dataset_id: Id,
    dataset_snapshot_hash: Sha256,
    spec: PipelineSpec,
    rv_id: Sha256,
    status: z
      .enum(["pending", "running", "succeeded", "failed"])
      .describe("mirrors the driving job (3.4); a cancelled job reads as failed"),
    created_at: Timestamp,
    "x-job_id": Id.describe("the driving job"),
    _links: Links,
  })
  .meta({ id: "Reconstruction" });
export type Reconstruction = z.infer<typeof Reconstruction>;

export const SubModel = z
  .object({
    submodel_id: Id,
    recon_id: Id,
    idx: z.number().int(),
    parent_submodel_id: Id.nullable(),
    summary: ModelSummary,
    rigidity: z.record(z.string(), z.unknown()).nullable(),
    snapshot_seq: z.number().int().describe("the latest sealed snapshot holding this component"),
    sealed_path: z.string().describe("informational: where the component's files are read"),
    created_at: Timestamp,
    _links: Links,
  })
  .meta({ id: "SubModel" });
export type SubModel = z.infer<typeof SubModel>;

export const SnapshotList = z.object({ seqs: z.array(z.number().int()), _links: Links }).meta({ id: "SnapshotList" });

/**
 * @module Task kinds (spec 2.9): what a task computes. Apart from the Job and Task schemas, so the
 * artifact vocabulary (which stage produces which role) can name them without importing those.
 */
import { z } from "zod";

export const TASK_KINDS = [
  "extract",
  "match",
  "verify",
  "map",
  "ba",
  "triangulate",
  "relocalize",
  "pgo",
  "export",
  "segment",
  "vlad",
  "convert_artifact",
  "backend_action",
  "artifact_import",
  // Extension kinds (additive enum values, 9.2) for work no spec kind names:
  "projection", // 4.14 projection jobs on datasets
  "to_cubemap", // 4.13 a spherical reconstruction's snapshot as cubemap rigs
  "georegister", // 4.13 a Sim3 applied to a reconstruction's latest snapshot, sealed as a new one
  "merge", // 4.9 source reconstructions merged into the target, sealed as its new snapshot
  "oneshot_features", // 4.15 the features of one image, answered in the request
  "import_kapture", // 4.2 a Kapture archive imported as a dataset
  "frame_extract", // 4.2 frames of a video as a dataset (a runner with WebCodecs)
] as const;
export const TaskKind = z.enum(TASK_KINDS);
export type TaskKind = z.infer<typeof TaskKind>;

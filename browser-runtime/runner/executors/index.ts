/**
 * @module The executors this runner build has, by task kind. A runner registers for exactly
 * these stages, so the service never leases it a task it cannot compute.
 */
import type { TaskKind, TaskOutputs } from "../../../protocol";
import type { TaskContext } from "../task-context";
import { convertArtifact, exportTask } from "./convert";
import { extract } from "./extract";
import { frameExtract } from "./frame-extract";
import { georegister } from "./georegister";
import { mapHierarchical } from "./hierarchical";
import { map } from "./map";
import { match } from "./match";
import { merge } from "./merge";
import { oneshotFeatures } from "./oneshot-features";
import { projection } from "./projection";
import { relocalize } from "./relocalize";
import { toCubemap } from "./to-cubemap";
import { verify } from "./verify";
import { vlad } from "./vlad";

export type Executor = (ctx: TaskContext) => Promise<TaskOutputs>;

export const EXECUTORS: Partial<Record<TaskKind, Executor>> = {
  extract,
  match,
  verify,
  // A sharded map task is a hierarchical one: each lease covers one of its work units.
  map: (ctx) => (ctx.lease.shard ? mapHierarchical(ctx) : map(ctx)),
  export: exportTask,
  convert_artifact: convertArtifact,
  projection,
  to_cubemap: toCubemap,
  relocalize,
  vlad,
  georegister,
  oneshot_features: oneshotFeatures,
  merge,
  frame_extract: frameExtract,
};

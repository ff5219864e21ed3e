/**
 * @module Datasets that tasks register (our runner-protocol extension): the projected images of a
 * projection (4.14 rule 4), and later the frames of a video and the images of a Kapture archive
 * (4.2). The runner uploads the images under its lease and registers them in one request; the
 * service names the dataset from the task's params (never from the runner), checks that every
 * image is a blob of the job, and creates the dataset with its images atomically. A retry of the
 * task gets the dataset it registered.
 */
import type { DerivedDatasetParams, DerivedDatasetRegister } from "../../protocol";
import { conflict, type FieldError, validation } from "../errors";
import { leaseScopeOf, leaseStore } from "./runners";
import { type DispatchScope, tenantStore, unwrap } from "./stores";

export async function registerDerivedDataset(env: Env, scope: DispatchScope, leaseId: string, body: DerivedDatasetRegister) {
  const { store, tenant } = leaseStore(env, scope, leaseId);
  const ls = leaseScopeOf(scope);
  const task = unwrap(await store.leaseTask(leaseId, ls));
  const derived = (JSON.parse(task.params_json) as Partial<DerivedDatasetParams>).derived_dataset;
  if (!derived) throw conflict(`this ${task.kind} task registers no dataset (its request did not ask for one)`);
  const errors = (
    await Promise.all(
      body.images.map(async (image, i): Promise<FieldError | null> =>
        (await store.mayRead(leaseId, ls, image.blob_sha))
          ? null
          : { path: `images.${i}.blob_sha`, message: "no blob with this sha was uploaded under this lease's job", code: "unknown_blob" },
      ),
    )
  ).filter((e): e is FieldError => e !== null);
  if (errors.length > 0) throw validation("every image must be a blob uploaded under the job", errors);
  const { images, ...settings } = body;
  const registered = unwrap(
    await tenantStore(env, tenant).createDerivedDataset(task.project_id, task.task_id, {
      ...settings,
      name: derived.name,
      source: { kind: "upload", entries: images },
    }),
  );
  return { tenant, ...registered };
}

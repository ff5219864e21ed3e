/**
 * @module `POST /v1/reconstructions/{rid}/georegister` (spec 4.13, capability `georegister.sim3`):
 * a job of one `georegister` task (an extension kind, 9.2) that a runner computes: the latest
 * sealed snapshot moved by a Sim3 and sealed as a new one. Everything is checked before the job
 * is made: the reconstruction (404), the body (422, by its route), a sealed snapshot (409) and,
 * for our `x-from_gps` extension, at least 3 images with a reference position (422).
 */
import type { DatasetSnapshot, GeoregisterFromGps, GeoregisterReference, GeoregisterTaskParams, JobAccepted, Sim3 } from "../../protocol";
import { notFound, validation } from "../errors";
import { requireCapability } from "./capabilities";
import { producerDataset } from "./exports";
import { frozenDataset, submitJob } from "./jobs";
import { reconstructionOf, snapshotInputs } from "./snapshots";
import { tenantStore, unwrap } from "./stores";

/** At least this many images need a position to estimate a Sim3 (three non-collinear centres fix it). */
const MIN_REFERENCES = 3;

const referencesIn = (dataset: DatasetSnapshot, reference: GeoregisterReference) =>
  dataset.images.filter((i) => (reference === "gps" ? (i.pose_prior?.gps ?? i.gps) : i.pose_prior)).length;

/** The reference `x-from_gps` aligns to, `auto` resolved; 422 when the dataset has too few. */
function chosenReference(dataset: DatasetSnapshot, asked: GeoregisterFromGps["x-reference"]): GeoregisterReference {
  const gps = referencesIn(dataset, "gps");
  const priors = referencesIn(dataset, "pose_priors");
  const reference = asked !== "auto" ? asked : gps >= MIN_REFERENCES ? "gps" : "pose_priors";
  const count = reference === "gps" ? gps : priors;
  if (count < MIN_REFERENCES) {
    throw validation(
      `x-from_gps needs at least ${MIN_REFERENCES} images with ${reference === "gps" ? "a GPS position (EXIF or a pose prior's gps)" : "a pose prior"}; the dataset has ${count}`,
      [
        {
          path: asked === "auto" ? "x-from_gps" : "x-reference",
          message: `${gps} image(s) with GPS, ${priors} with a pose prior`,
          code: "too_few_references",
        },
      ],
    );
  }
  return reference;
}

export async function submitGeoregister(
  env: Env,
  tenantId: string,
  reconId: string,
  body: Sim3 | GeoregisterFromGps,
): Promise<JobAccepted> {
  requireCapability(env, "georegister.sim3");
  const recon = await reconstructionOf(env, tenantId, reconId);
  const { seq, input_artifacts, submodels, root } = await snapshotInputs(env, tenantId, reconId, undefined, "georegister");
  let params: GeoregisterTaskParams;
  let dataset: DatasetSnapshot | null;
  if ("x-from_gps" in body) {
    // The positions as they are now (a prior written since the mapping counts).
    const tenant = tenantStore(env, tenantId);
    const row = await tenant.getDataset(recon.dataset_id);
    if (!row) throw notFound("dataset of the reconstruction");
    dataset = frozenDataset(row, await tenant.allImages(row.dataset_id), unwrap(await tenant.datasetPosePriors(row.dataset_id)));
    params = {
      georegister: {
        seq,
        submodels,
        sim3: null,
        from_gps: { reference: chosenReference(dataset, body["x-reference"]), max_error_m: body["x-max_error_m"] },
      },
    };
  } else {
    dataset = await producerDataset(env, tenantId, root);
    params = { georegister: { seq, submodels, sim3: body, from_gps: null } };
  }
  return submitJob(env, {
    tenantId,
    projectId: recon.project_id,
    dataset,
    recipe: "georegister",
    // Each request seals a snapshot of its own: never answered from another job's cache (3.2.1).
    stages: [{ kind: "georegister", params, own_outputs: true }],
    input_artifacts,
    recon: { recon_id: reconId },
  });
}

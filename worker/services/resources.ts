/** @module Storage rows rendered as the spec's resources, with `tenant_id` and `_links` (2.0). */
import type { Dataset, Image, Project, Upload } from "../../protocol";
import type { DatasetRow, ImageRow, ProjectRow, UploadRow } from "../storage/tenant-rows";

const link = (href: string) => ({ href });

export function projectResource(r: ProjectRow, tenantId: string): Project {
  const self = `/v1/projects/${r.project_id}`;
  return {
    project_id: r.project_id,
    tenant_id: tenantId,
    name: r.name,
    description: r.description,
    created_at: r.created_at,
    "x-pool_opt_in": r.pool_opt_in,
    _links: { self: link(self), datasets: link(`${self}/datasets`), pipelines: link(`${self}/pipelines`) },
  };
}

export function datasetResource(r: DatasetRow, tenantId: string): Dataset {
  const self = `/v1/projects/${r.project_id}/datasets/${r.dataset_id}`;
  const { rig_config_text, ...rest } = r;
  return {
    ...rest,
    rig_config_json: rig_config_text ? JSON.parse(rig_config_text) : null,
    camera_model: r.camera_model as Dataset["camera_model"],
    tenant_id: tenantId,
    _links: {
      self: link(self),
      project: link(`/v1/projects/${r.project_id}`),
      images: link(`/v1/datasets/${r.dataset_id}/images`),
      features: link(`/v1/datasets/${r.dataset_id}/features`),
    },
  };
}

export function imageResource(r: ImageRow): Image {
  const self = `/v1/images/${r.image_id}`;
  // The EXIF focal length is no field of the image resource (2.5): GET .../exif reports it; its GPS is our `x-gps`.
  const { focal_length_35mm: _exif, gps_json, ...fields } = r;
  return {
    ...fields,
    "x-gps": gps_json ? JSON.parse(gps_json) : null,
    _links: {
      self: link(self),
      dataset: link(`/v1/datasets/${r.dataset_id}/images`),
      bytes: link(`${self}/bytes`),
      thumbnail: link(`${self}/thumbnail`),
      exif: link(`${self}/exif`),
    },
  };
}

/** Field by field: storage rows carry columns that are not part of the resource (the idempotency key). */
export const uploadResource = (r: UploadRow): Upload => ({
  upload_id: r.upload_id,
  state: r.state,
  expected_size: r.expected_size,
  received_bytes: r.received_bytes,
  content_type: r.content_type,
  expected_sha: r.expected_sha,
  // Set once the bytes are at their address (a finalize under way has reserved it already).
  blob_sha: r.state === "finalized" ? r.blob_sha : null,
  created_at: r.created_at,
  expires_at: r.expires_at,
});

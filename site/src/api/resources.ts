/**
 * @module The API calls the demo makes, typed from `/openapi.json` by the client: projects (4.2),
 * datasets (4.4), images (4.5), pipelines (4.7), jobs (4.8), snapshots (4.9), capabilities (1.2).
 */
import { type components, collect, pages, unwrap } from "../../../client/index";
import type { input } from "../../../client/schema";
import { api } from "./client";

type Schemas = components["schemas"];
export type CapabilitiesOut = Schemas["Capabilities"];
/** As a request takes it: fields with a default may be left out. */
export type DatasetCreate = input.components["schemas"]["DatasetCreate"];
export type CameraModel = Schemas["DatasetCreate"]["camera_model"];
export type IntrinsicsMode = Schemas["DatasetCreate"]["intrinsics_mode"];

const PAGE_SIZE = 500;

/** The server's capabilities and its auth mode (`X-EdgeSfM-Auth: none` in the open mode, spec 5). */
export async function serverInfo(): Promise<{ capabilities: CapabilitiesOut; openMode: boolean }> {
  const call = api().api.GET("/v1/capabilities");
  const capabilities = await unwrap(call);
  return { capabilities, openMode: (await call).response.headers.get("X-EdgeSfM-Auth") === "none" };
}

export const createProject = (name: string) => unwrap(api().api.POST("/v1/projects", { body: { name } }));

export const createDataset = (pid: string, body: DatasetCreate) =>
  unwrap(api().api.POST("/v1/projects/{pid}/datasets", { params: { path: { pid } }, body }));

/** Sets the dataset's camera settings (2.4), which the pipeline reads from it. */
export const setCameraSettings = (pid: string, did: string, body: { camera_model: CameraModel; intrinsics_mode: IntrinsicsMode }) =>
  unwrap(
    api().api.PATCH("/v1/projects/{pid}/datasets/{did}", {
      params: { path: { pid, did }, query: { update_mask: "camera_model,intrinsics_mode" } },
      body,
    }),
  );

export const batchCreateImages = (did: string, requests: Schemas["ImageCreate"][]) =>
  unwrap(api().api.POST("/v1/datasets/{did}/images:batchCreate", { params: { path: { did } }, body: { requests } }));

export const listImages = (did: string) =>
  collect(
    pages((page_token) =>
      api().api.GET("/v1/datasets/{did}/images", { params: { path: { did }, query: { page_size: PAGE_SIZE, page_token } } }),
    ),
  );

export const startPipeline = (pid: string, body: Schemas["PipelineRequest"]) =>
  unwrap(api().api.POST("/v1/projects/{pid}/pipelines/{recipe}", { params: { path: { pid, recipe: body.spec.kind } }, body }));

/** Every job of the tenant, newest first (the listing itself is oldest first). */
export const listJobs = async () =>
  (await collect(pages((page_token) => api().api.GET("/v1/jobs", { params: { query: { page_size: PAGE_SIZE, page_token } } })))).sort(
    (a, b) => b.created_at.localeCompare(a.created_at) || b.job_id.localeCompare(a.job_id),
  );
export const getJob = (jid: string) => unwrap(api().api.GET("/v1/jobs/{jid}", { params: { path: { jid } } }));
export const getProgress = (jid: string) => unwrap(api().api.GET("/v1/jobs/{jid}/progress", { params: { path: { jid } } }));
export const cancelJob = (jid: string, force = false) =>
  unwrap(api().api.POST("/v1/jobs/{jid}:cancel", { params: { path: { jid }, query: force ? { force: "true" } : {} } }));
export const resumeJob = (jid: string) => unwrap(api().api.POST("/v1/jobs/{jid}:resume", { params: { path: { jid } } }));

export const getReconstruction = (rid: string) => unwrap(api().api.GET("/v1/reconstructions/{rid}", { params: { path: { rid } } }));

/** Exports the reconstruction's newest snapshot (4.10); answers the export job. */
export const startExport = (rid: string, body: input.components["schemas"]["ExportRequest"]) =>
  unwrap(api().api.POST("/v1/reconstructions/{rid}/export", { params: { path: { rid } }, body }));

export const snapshotSeqs = (rid: string) => unwrap(api().api.GET("/v1/reconstructions/{rid}/snapshots", { params: { path: { rid } } }));
export const snapshotPath = (rid: string, seq: number, name: string) => `/v1/reconstructions/${rid}/snapshots/${seq}/${name}`;

/** A job's artifacts (4.8): its tasks' outputs, e.g. an export job's model files. */
export const jobArtifacts = (jid: string) =>
  collect(
    pages((page_token) =>
      api().api.GET("/v1/jobs/{jid}/artifacts", { params: { path: { jid }, query: { page_size: PAGE_SIZE, page_token } } }),
    ),
  );

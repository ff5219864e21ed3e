/**
 * @module The API calls the demo makes, typed with the protocol's schemas: projects (4.2),
 * datasets (4.4), images (4.5), pipelines (4.7), jobs (4.8), snapshots (4.9), capabilities (1.2).
 */
import type { z } from "zod";
import type { Capabilities } from "../../../protocol/schemas/meta";
import type { Project } from "../../../protocol/schemas/project";
import type { Dataset, DatasetCreate } from "../../../protocol/schemas/dataset";
import type { Image, ImageCreate } from "../../../protocol/schemas/image";
import type { Job, JobAccepted, JobDetail, JobProgress } from "../../../protocol/schemas/job";
import type { PipelineRequest } from "../../../protocol/schemas/specs";
import type { StageArtifact } from "../../../protocol/artifacts";
import { getJson, request, sendJson } from "./client";

export type CapabilitiesOut = z.infer<typeof Capabilities>;
export interface Page<T> {
  items: T[];
  next_page_token: string | null;
  total: number | null;
}

/** The server's capabilities and its auth mode (`X-EdgeSfM-Auth: none` in the open mode, spec 5). */
export async function serverInfo(): Promise<{ capabilities: CapabilitiesOut; openMode: boolean }> {
  const res = await request("/v1/capabilities");
  return { capabilities: (await res.json()) as CapabilitiesOut, openMode: res.headers.get("X-EdgeSfM-Auth") === "none" };
}

export const createProject = (name: string) => sendJson<Project>("POST", "/v1/projects", { name });

export const createDataset = (pid: string, body: Partial<DatasetCreate> & { name: string }) =>
  sendJson<Dataset>("POST", `/v1/projects/${pid}/datasets`, body);

export const batchCreateImages = (did: string, requests: ImageCreate[]) =>
  sendJson<{ images: Image[] }>("POST", `/v1/datasets/${did}/images:batchCreate`, { requests });

/** Every item of a listing, walking its pages (2.0 pagination). */
async function allPages<T>(path: string): Promise<T[]> {
  const out: T[] = [];
  let token: string | null = null;
  do {
    const q = new URLSearchParams({ page_size: "500", ...(token ? { page_token: token } : {}) });
    const page: Page<T> = await getJson(`${path}?${q}`);
    out.push(...page.items);
    token = page.next_page_token;
  } while (token);
  return out;
}

export const listImages = (did: string) => allPages<Image>(`/v1/datasets/${did}/images`);

export const startPipeline = (pid: string, body: PipelineRequest) =>
  sendJson<JobAccepted>("POST", `/v1/projects/${pid}/pipelines/${body.spec.kind}`, body);

/** Every job of the tenant, newest first (the listing itself is oldest first). */
export const listJobs = async () => (await allPages<Job>("/v1/jobs")).sort((a, b) => b.created_at.localeCompare(a.created_at) || b.job_id.localeCompare(a.job_id));
export const getJob = (jid: string) => getJson<JobDetail>(`/v1/jobs/${jid}`);
export const getProgress = (jid: string) => getJson<JobProgress>(`/v1/jobs/${jid}/progress`);
export const cancelJob = (jid: string, force = false) => sendJson<Job>("POST", `/v1/jobs/${jid}:cancel${force ? "?force=true" : ""}`, {});
export const resumeJob = (jid: string) => sendJson<Job>("POST", `/v1/jobs/${jid}:resume`, {});

export const snapshotSeqs = (rid: string) => getJson<{ seqs: number[] }>(`/v1/reconstructions/${rid}/snapshots`);
export const snapshotPath = (rid: string, seq: number, name: string) => `/v1/reconstructions/${rid}/snapshots/${seq}/${name}`;

/** A job's artifacts (4.8): its tasks' outputs, e.g. an export job's model files. */
export const jobArtifacts = (jid: string) => allPages<StageArtifact>(`/v1/jobs/${jid}/artifacts`);

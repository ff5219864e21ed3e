/**
 * @module SfM stages (spec 4.6), recipe pipelines (4.7), and jobs with their progress, control
 * and live events (4.8, 6). Every submitting route answers 202 with `Location: /v1/jobs/<id>`
 * and a JobAcceptedResponse; 501 `capability_unavailable` for a stage this deployment cannot
 * run (1.2, 7).
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  CancelQuery,
  FeaturesRequest,
  Id,
  Job,
  JobAccepted,
  JobDetail,
  JobListQuery,
  JobProgress,
  MatchesRequest,
  Page,
  PageQuery,
  PipelineRequest,
  ProgressEvent,
  ShardResultRecord,
  VerifyRequest,
} from "../../protocol";
import type { AppEnv } from "../context";
import { ApiError, notFound, validation } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { type DatasetSubmission, jobDetailResource, jobResource, ownJob, submitOnDataset } from "../services/jobs";
import { withWaitingFor } from "../services/runners";
import { type StagePlan, planFeatures, planMatches, planPipeline, planVerify } from "../services/stage-plans";
import { tenantStore, unwrap } from "../services/stores";
import type { Context } from "hono";

export const jobs = newRouter();

const JobPage = Page(Job, "JobPage");
const ShardResultPage = Page(ShardResultRecord, "ShardResultPage");
const DatasetParams = z.object({ did: Id });
const JobParams = z.object({ jid: Id });
const accepted = {
  202: {
    ...json(JobAccepted, "accepted; poll or stream the job"),
    headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
  },
};

async function dataset(env: Env, tenantId: string, did: string) {
  const row = await tenantStore(env, tenantId).getDataset(did);
  if (!row) throw notFound("dataset");
  return row;
}

async function submit(c: Context<AppEnv>, s: Omit<DatasetSubmission, "tenantId">) {
  const body = await submitOnDataset(c.env, { ...s, tenantId: c.var.tenantId });
  return c.json(body, 202, { Location: `/v1/jobs/${body.job_id}` });
}

// ---- 4.6 stages: single-task jobs ----

type DatasetRow = DatasetSubmission["dataset"];

/** `POST /v1/datasets/{did}/<stage>`: one task on the dataset, planned from the validated body. */
function stageRoute<S extends z.ZodType>(
  stage: string,
  schema: S,
  plan: (body: z.output<S>, ctx: { env: Env; tenantId: string; dataset: DatasetRow }) => StagePlan | Promise<StagePlan>,
) {
  jobs.openapi(
    createRoute({
      method: "post",
      path: `/v1/datasets/{did}/${stage}`,
      tags: ["stages"],
      request: { params: DatasetParams, ...jsonBody(schema) },
      responses: { ...accepted, ...problemResponses(400, 401, 404, 413, 422, 501) },
    }),
    async (c) => {
      // (The generic schema hides valid()'s typing; the validator ran with exactly these schemas.)
      const req = c.req as unknown as { valid(t: "json"): z.output<S>; valid(t: "param"): { did: string } };
      const ds = await dataset(c.env, c.var.tenantId, req.valid("param").did);
      return submit(c, {
        ...(await plan(req.valid("json"), { env: c.env, tenantId: c.var.tenantId, dataset: ds })),
        dataset: ds,
        recipe: stage,
        pipeline: null,
      });
    },
  );
}

stageRoute("features", FeaturesRequest, (body) => planFeatures(body));
stageRoute("matches", MatchesRequest, (body, { env, tenantId, dataset }) => planMatches(body, env, tenantId, dataset));
stageRoute("verify", VerifyRequest, (body) => planVerify(body));

// ---- 4.7 pipelines: extract -> match -> verify -> map ----

jobs.openapi(
  createRoute({
    method: "post",
    path: "/v1/projects/{pid}/pipelines/{recipe}",
    tags: ["pipelines"],
    request: { params: z.object({ pid: Id, recipe: z.string().min(1).max(64) }), ...jsonBody(PipelineRequest) },
    responses: { ...accepted, ...problemResponses(400, 401, 404, 413, 422, 501) },
  }),
  async (c) => {
    const { pid, recipe } = c.req.valid("param");
    const body = c.req.valid("json");
    if (body.spec.kind !== recipe) {
      throw validation(`spec.kind '${body.spec.kind}' differs from the recipe '${recipe}'`, [
        { path: "spec.kind", message: `must equal the recipe '${recipe}'`, code: "kind_mismatch" },
      ]);
    }
    const ds = await dataset(c.env, c.var.tenantId, body.dataset_id);
    if (ds.project_id !== pid) throw notFound("dataset");
    return submit(c, { ...(await planPipeline(body, c.env, c.var.tenantId, ds)), dataset: ds, recipe });
  },
);

// ---- 4.8 jobs ----

jobs.openapi(
  createRoute({
    method: "get",
    path: "/v1/jobs",
    tags: ["jobs"],
    request: { query: PageQuery.extend(JobListQuery.shape) },
    responses: { 200: json(JobPage, "the tenant's jobs, oldest first"), ...problemResponses(401, 422) },
  }),
  async (c) => {
    const { status, ...page } = c.req.valid("query");
    const result = await tenantStore(c.env, c.var.tenantId).listJobs(page, status);
    return c.json({ ...result, items: result.items.map(jobResource) }, 200);
  },
);

jobs.openapi(
  createRoute({
    method: "get",
    path: "/v1/jobs/{jid}",
    tags: ["jobs"],
    request: { params: JobParams },
    responses: { 200: json(JobDetail, "the job and its tasks"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const detail = await (await ownJob(c.env, c.var.tenantId, c.req.valid("param").jid)).detail();
    if (!detail) throw notFound("job");
    return c.json(await withWaitingFor(c.env, c.var.tenantId, jobDetailResource(detail)), 200);
  },
);

jobs.openapi(
  createRoute({
    method: "get",
    path: "/v1/jobs/{jid}/progress",
    tags: ["jobs"],
    request: { params: JobParams },
    responses: { 200: json(JobProgress, "aggregated progress (4.8)"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const progress = await (await ownJob(c.env, c.var.tenantId, c.req.valid("param").jid)).progress();
    if (!progress) throw notFound("job");
    return c.json(progress, 200);
  },
);

jobs.openapi(
  createRoute({
    method: "get",
    path: "/v1/jobs/{jid}/shard-results",
    tags: ["jobs"],
    description:
      'Every result runners answered for the job\'s shards (our extension, 2.0; runners.md "Trust"), in the order they arrived: who computed it, whether the runner was trusted, the verdict, and the SHA-256 of each of its files. `task_id` filters by task.',
    request: { params: JobParams, query: PageQuery.extend({ task_id: Id.optional() }) },
    responses: { 200: json(ShardResultPage, "a page of shard results"), ...problemResponses(401, 404, 422) },
  }),
  async (c) => {
    const { task_id: taskId, ...page } = c.req.valid("query");
    return c.json(await (await ownJob(c.env, c.var.tenantId, c.req.valid("param").jid)).shardResults(taskId ?? null, page), 200);
  },
);

jobs.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/jobs/{jid}:cancel",
    tags: ["jobs"],
    request: { params: JobParams, query: CancelQuery },
    responses: { 200: json(Job, "cancel flags set; cooperative cancel completes between phases"), ...problemResponses(401, 404, 409) },
  }),
  async (c) => {
    const row = unwrap(await (await ownJob(c.env, c.var.tenantId, c.req.valid("param").jid)).cancel(c.req.valid("query").force));
    return c.json(jobResource(row), 200);
  },
);

jobs.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/jobs/{jid}:resume",
    tags: ["jobs"],
    request: { params: JobParams },
    responses: {
      202: { ...json(Job, "pending again; failed and cancelled tasks are re-enqueued"), headers: z.object({ Location: z.string() }) },
      ...problemResponses(401, 404, 409),
    },
  }),
  async (c) => {
    const row = unwrap(await (await ownJob(c.env, c.var.tenantId, c.req.valid("param").jid)).resume());
    return c.json(jobResource(row), 202, { Location: `/v1/jobs/${row.job_id}` });
  },
);

/** Forwards a stream request to the job's object, which replays from the cursor and then streams live. */
async function streamFrom(c: Context<AppEnv>, jid: string): Promise<Response> {
  const res = await (await ownJob(c.env, c.var.tenantId, jid)).fetch(c.req.raw);
  if (res.status === 404) throw notFound("job");
  return res;
}

jobs.openapi(
  createRoute({
    method: "get",
    path: "/v1/jobs/{jid}/events",
    tags: ["jobs"],
    request: {
      params: JobParams,
      headers: z.object({
        "last-event-id": z
          .string()
          .regex(/^\d{1,15}$/)
          .optional()
          .describe("resume after this event_id"),
      }),
    },
    responses: {
      200: {
        content: { "text/event-stream": { schema: ProgressEvent } },
        description:
          "SSE: `id: <event_id>` and `data: <ProgressEvent JSON>` per event; replays after Last-Event-ID, then live; `: keep-alive` comments; closes after the job_status event of a terminal status",
      },
      ...problemResponses(401, 404, 422),
    },
  }),
  async (c) => streamFrom(c, c.req.valid("param").jid),
);

jobs.openapi(
  createRoute({
    method: "get",
    path: "/ws/v1/jobs/{jid}",
    tags: ["jobs"],
    request: {
      params: JobParams,
      query: z.object({
        last_event_id: z
          .string()
          .regex(/^\d{1,15}$/)
          .optional()
          .describe("as the Last-Event-ID header (browsers cannot set headers)"),
      }),
    },
    responses: {
      101: {
        description:
          "WebSocket: one text frame per ProgressEvent (JSON with event_id); 'ping' is answered 'pong'; closed (1000) after a terminal job_status",
      },
      ...problemResponses(401, 404, 422),
      426: { description: "not a WebSocket upgrade" },
    },
  }),
  async (c) => {
    if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
      throw new ApiError(426, "bad_request", "this route needs a WebSocket upgrade", {}, { Upgrade: "websocket" });
    }
    return streamFrom(c, c.req.valid("param").jid);
  },
);

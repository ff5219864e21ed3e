/**
 * @module Projection jobs on datasets (spec 4.14): `:render_cubemap`, `:render_equirectangular`,
 * `:render_perspective` and the general `:project_images`. Each answers 202 with a job of one
 * `projection` task; the checks are in services/projections.ts.
 */
import { z } from "@hono/zod-openapi";
import {
  CubemapProjectionRequest,
  EquirectangularProjectionRequest,
  FaceSize,
  Id,
  JobAccepted,
  PerspectiveProjectionRequest,
  type Projection,
  ProjectionJobRequest,
  ToCubemapRequest,
  queryNumber,
} from "../../protocol";
import type { AppEnv } from "../context";
import { fieldErrors } from "../router";
import { badRequest, validation } from "../errors";
import { problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { submitProjection, submitToCubemap } from "../services/projections";
import type { Context } from "hono";

export const projections = newRouter();

const DatasetParams = z.object({ did: Id });
const accepted = {
  202: {
    content: { "application/json": { schema: JobAccepted } },
    description: "accepted; the task's result is `{output_path, num_files, manifest_path, derived_dataset}` (4.14 rule 3)",
    headers: z.object({ Location: z.string().describe("/v1/jobs/<job_id>") }),
  },
  ...problemResponses(400, 401, 404, 413, 422, 501),
};
const OUTPUTS = [
  "Output: one `projection.images.v1` artifact of the job (`/v1/jobs/{jid}/artifacts`) holding the images under `images/` and `projection_manifest.json`",
  "(source and output images, face or view geometry, `derived_dataset`); with `output.create_dataset` (default true) the images also become a derived dataset",
  "in the project, named `output.dataset_name` or after the source; a name the project already has gets `-<task_id>` appended, and a retried task reuses the dataset it registered.",
  "Projected images are named `<face or view>/<panorama stem>.<ext>` (COLMAP's rig image prefixes); the derived dataset's `rig_config` is COLMAP's rig config for them.",
].join("\n");

async function submit(c: Context<AppEnv>, did: string, recipe: string, body: z.infer<typeof ProjectionJobRequest>) {
  const accepted = await submitProjection(c.env, c.var.tenantId, did, recipe, body);
  return c.json(accepted, 202, { Location: `/v1/jobs/${accepted.job_id}` });
}

/** An optional body: absent is {}, but one that is there must be a JSON object (400 / 422 otherwise). */
async function optionalJsonObject(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (!text.trim()) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw badRequest("request body is not valid JSON");
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw))
    throw validation("the request body must be a JSON object", [{ path: "", message: "expected an object", code: "invalid_type" }]);
  return raw as Record<string, unknown>;
}

/** A body that may be absent (`:render_cubemap` also takes its one knob as a query parameter). */
const optionalBody = <T extends z.ZodType>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: false } });

projections.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/datasets/{did}:render_cubemap",
    tags: ["projections"],
    summary: "Equirectangular panoramas to cubemap faces",
    description: [
      "Renders every panorama of a spherical dataset (422 otherwise) to its cubemap: six 90-degree pinhole faces with OpenCV image axes, in the order front, right, back, left, up, down",
      "(front = the panorama's centre column; the rig frame is the panorama's camera frame; faces are PINHOLE with f = c = face_size / 2). Capability `projection.equirectangular_to_cubemap`",
      "(legacy `spherical.render_cubemap`). `face_size` (64 to 8192) in the body or the query; `sampling` nearest, linear (default), cubic or lanczos.",
      OUTPUTS,
    ].join("\n"),
    request: {
      params: DatasetParams,
      query: z.object({ face_size: queryNumber(FaceSize).optional() }),
      ...optionalBody(CubemapProjectionRequest),
    },
    responses: accepted,
  }),
  async (c) => {
    const { did } = c.req.valid("param");
    const raw = await optionalJsonObject(c);
    const queried = c.req.valid("query").face_size;
    if (queried !== undefined && raw.face_size !== undefined && raw.face_size !== queried) {
      throw validation("face_size is given twice with different values", [
        { path: "face_size", message: "the query and the body disagree", code: "conflict" },
      ]);
    }
    const parsed = CubemapProjectionRequest.safeParse({ ...raw, ...(queried !== undefined ? { face_size: queried } : {}) });
    if (!parsed.success) throw validation("invalid request body", fieldErrors(parsed.error));
    return submit(c, did, "render_cubemap", { projection: "equirectangular_to_cubemap", ...parsed.data });
  },
);

function projectionRoute<S extends z.ZodType>(verb: string, projection: Projection, schema: S, summary: string, description: string) {
  projections.openapi(
    createActionRoute({
      method: "post",
      path: `/v1/datasets/{did}:${verb}`,
      tags: ["projections"],
      summary,
      description: [description, OUTPUTS].join("\n"),
      request: { params: DatasetParams, body: { content: { "application/json": { schema } }, required: true } },
      responses: accepted,
    }),
    async (c) => {
      const req = c.req as unknown as { valid(t: "json"): z.output<S>; valid(t: "param"): { did: string } };
      return submit(c, req.valid("param").did, verb, { projection, ...(req.valid("json") as object) } as z.infer<
        typeof ProjectionJobRequest
      >);
    },
  );
}

projectionRoute(
  "render_equirectangular",
  "cubemap_to_equirectangular",
  EquirectangularProjectionRequest,
  "Cubemap faces to equirectangular panoramas",
  [
    "Renders each cubemap of the dataset (images named `<face>/<name>`, six square faces of one size, as `:render_cubemap` writes them; 422 naming what is missing otherwise)",
    "to an equirectangular panorama `<name stem>.<ext>` of `width` x `width` / 2 (default four times the face size). The derived dataset is spherical (camera SPHERICAL).",
    "Capability `projection.cubemap_to_equirectangular`.",
  ].join("\n"),
);

projectionRoute(
  "render_perspective",
  "equirectangular_to_perspective",
  PerspectiveProjectionRequest,
  "Equirectangular panoramas to perspective views",
  [
    "Renders pinhole views (`width` x `height`, horizontal `fov_deg`, square pixels) of every panorama of a spherical dataset (422 otherwise), each turned by `yaw_deg` right,",
    "`pitch_deg` up and `roll_deg` about its axis; default four views around the horizon. Images are named `<view name>/<panorama stem>.<ext>`.",
    "Capability `projection.equirectangular_to_perspective`.",
  ].join("\n"),
);

projections.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/reconstructions/{rid}:to_cubemap",
    tags: ["projections", "reconstructions"],
    summary: "A spherical reconstruction as cubemap rigs",
    description: [
      "Seals the reconstruction's latest snapshot (or `seq`) again as a new snapshot in which every panorama is a cubemap rig (4.13): rigs.json holds one rig of six sensors",
      "(the faces front, right, back, left, up, down: PINHOLE, 90 degrees, OpenCV axes; front is the reference sensor, sensor_from_rig pure rotations) and frames.json one",
      "frame per panorama, binding the six sensor ids to the ids of its face images in images.json (named `<face>/<panorama stem>.jpg`, as `:render_cubemap` names the faces",
      "it renders). Each keypoint moves to the face its ray falls on and keeps its 3D point; points.bin is unchanged. A job with one `to_cubemap` task (an extension kind)",
      "whose snapshot is announced by `snapshot_available`. 422 when the reconstruction's dataset is not spherical; 409 before any snapshot is sealed.",
      "Capability `projection.cubemap_rig` (legacy `spherical.to_cubemap`). `face_size` (64 to 8192, default a quarter of the widest panorama) is our optional addition.",
    ].join("\n"),
    request: { params: z.object({ rid: Id }), ...optionalBody(ToCubemapRequest) },
    responses: { ...accepted, ...problemResponses(409) },
  }),
  async (c) => {
    const parsed = ToCubemapRequest.safeParse(await optionalJsonObject(c));
    if (!parsed.success) throw validation("invalid request body", fieldErrors(parsed.error));
    const body = await submitToCubemap(c.env, c.var.tenantId, c.req.valid("param").rid, parsed.data);
    return c.json(body, 202, { Location: `/v1/jobs/${body.job_id}` });
  },
);

projections.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/datasets/{did}:project_images",
    tags: ["projections"],
    summary: "Any projection, named by `projection`",
    description: [
      "The general form of the three routes above: `projection` is `equirectangular_to_cubemap`, `cubemap_to_equirectangular` or `equirectangular_to_perspective`,",
      "with that route's fields. Capability `projection.<projection>`.",
      OUTPUTS,
    ].join("\n"),
    request: { params: DatasetParams, body: { content: { "application/json": { schema: ProjectionJobRequest } }, required: true } },
    responses: accepted,
  }),
  async (c) => submit(c, c.req.valid("param").did, "project_images", c.req.valid("json")),
);

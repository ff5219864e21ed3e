/**
 * @module Snapshot sealing, our runner-protocol extension (reference-only, like the rest of
 * runners.md): a map task seals snapshots from blobs uploaded under its lease; match, verify and
 * map tasks write the reconstruction-level files. The checks and the recording are in
 * services/snapshots.ts.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { RECONSTRUCTION_FILES, ReconstructionFilePut, SnapshotSeal, SnapshotSealed } from "../../protocol";
import type { AppEnv } from "../context";
import { problemResponses } from "../openapi";
import { newRouter } from "../router";
import { scopeOf } from "../services/runners";
import { putReconstructionFile, sealSnapshot } from "../services/snapshots";
import type { Context } from "hono";
import { LeaseId } from "./runners";

export const snapshotSeal = newRouter();

const leaseRef = async (c: Context<AppEnv>, leaseId: string) => ({
  scope: await scopeOf(c.env, c.req.header("Authorization"), c.var.tenantId),
  leaseId,
});

snapshotSeal.openapi(
  createRoute({
    method: "post",
    path: "/v1/leases/{lease_id}/snapshots",
    tags: ["runners"],
    summary: "Seal a snapshot (map tasks)",
    description: [
      "Seals the next snapshot `seq` (1, 2, ...) of the reconstruction the lease's job drives (spec 2.10, 3.5). Reference-only runner-protocol extension.",
      "",
      "Upload every file first with `PUT /v1/leases/{lease_id}/blobs/{sha}`, then name them here: `files` are the root files (what the root snapshot routes serve),",
      "`submodels[]` one entry per disconnected component (2.8) with its own files and `summary` (`num_reg_images`, `num_points3D`, others kept).",
      "A root file the seal omits is served from the largest component (2.8 rule 2). Without `submodels`, the root is component 0 with the top-level `summary`.",
      "",
      "Checks, all before anything is recorded (a refusal records nothing): the lease is held by a `map` task of a pipeline job or a `to_cubemap`, `georegister` or `merge` task (else 409; unknown lease 404);",
      "names are among cameras.json, images.json, rigs.json, frames.json, pose_graph.json, summary.json, points.bin, points_preview.bin, once per model (422);",
      "each blob was uploaded under this job (or is one of its input images) with exactly `byte_size` bytes (422 `unknown_blob` / `size_mismatch`);",
      "JSON files match their 2.14 schema, points files have a valid header, a size of 44 + 26 count bytes, ascending point3d_id and every point inside the header's bbox (422 `invalid_file`);",
      "the files of one model agree: every image's camera is in its cameras.json, every observed point3d_id in its points.bin (422 `inconsistent`).",
      "",
      "Then the snapshot is recorded immutably, the reconstruction holds its blobs, each component's SubModel points at it, and `snapshot_available` `{snapshot_seq, summary}`",
      "is appended to the job's events. The same lease sending the same body again gets the same seq (`created: false`, 200) and no second event.",
    ].join("\n"),
    request: {
      params: z.object({ lease_id: LeaseId }),
      body: { content: { "application/json": { schema: SnapshotSeal } }, required: true },
    },
    responses: {
      201: { content: { "application/json": { schema: SnapshotSealed } }, description: "sealed and announced" },
      200: { content: { "application/json": { schema: SnapshotSealed } }, description: "this lease already sealed exactly this body" },
      ...problemResponses(401, 403, 404, 409, 413, 422),
    },
  }),
  async (c) => {
    const sealed = await sealSnapshot(c.env, await leaseRef(c, c.req.valid("param").lease_id), c.req.valid("json"));
    return c.json(sealed, sealed.created ? 201 : 200);
  },
);

snapshotSeal.openapi(
  createRoute({
    method: "put",
    path: "/v1/leases/{lease_id}/reconstruction-files/{name}",
    tags: ["runners"],
    summary: "Write a reconstruction-level file (match, verify and map tasks)",
    description: [
      "Sets `two_view_geometries.json` (validated against its 2.14 schema) or `correspondence_graph.json` (any JSON object) of the reconstruction the lease's job drives,",
      "from a blob uploaded under the lease; a later write replaces it. Served at `/v1/reconstructions/{rid}/{name}`. Reference-only runner-protocol extension.",
    ].join("\n"),
    request: {
      params: z.object({ lease_id: LeaseId, name: z.enum(RECONSTRUCTION_FILES) }),
      body: { content: { "application/json": { schema: ReconstructionFilePut } }, required: true },
    },
    responses: { 204: { description: "written" }, ...problemResponses(401, 403, 404, 409, 413, 422) },
  }),
  async (c) => {
    const { lease_id, name } = c.req.valid("param");
    await putReconstructionFile(c.env, await leaseRef(c, lease_id), name, c.req.valid("json"));
    return c.body(null, 204);
  },
);

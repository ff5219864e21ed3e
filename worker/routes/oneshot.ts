/**
 * @module One-shot routes (spec 4.15): `POST /v1/oneshot/features` and `POST
 * /v1/oneshot/localize?recon_id=`, image bytes in and the answer in the same response, computed
 * by a runner within the request (services/oneshot.ts); no row is created and the bytes are
 * deleted afterwards. The body is capped at SVC_ONESHOT_MAX_REQUEST_BYTES (8: 413 beyond).
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  Id,
  LocalizationResult,
  OneShotFeaturesResponse,
  OneShotLocalizeResponse,
  type OneshotFeaturesTaskParams,
  type RelocalizeTaskParams,
} from "../../protocol";
import { decodeFeatures } from "../../protocol/wire/features";
import { DescriptorKind } from "../../protocol/wire/features";
import type { AppEnv } from "../context";
import { ApiError } from "../errors";
import { oneshotBodyLimit } from "../middleware/limits";
import { json, problemResponses } from "../openapi";
import { newRouter } from "../router";
import { oneshotKey } from "../storage/job-rows";
import { requireCapability } from "../services/capabilities";
import { producerDataset } from "../services/exports";
import { localizationInputs } from "../services/localize";
import { oneshotImage, runOneshot } from "../services/oneshot";
import { reconstructionOf } from "../services/snapshots";
import type { Context } from "hono";

export const oneshot = newRouter();

const imageBody = {
  body: {
    content: {
      "image/*": { schema: z.string().meta({ format: "binary" }) },
      "application/octet-stream": { schema: z.string().meta({ format: "binary" }) },
    },
    required: true,
    description: "the image's bytes (JPEG, PNG, WebP, ...), at most SVC_ONESHOT_MAX_REQUEST_BYTES (default 50 MiB)",
  },
};
const HOW = [
  "Computed by one of the tenant's runners (or the deployment's own) while the request waits: the bytes are kept beside an unindexed one-shot job whose one task",
  "the dispatcher offers like any other; the answer comes back in this response, then the job and the bytes are deleted (no image, blob, job or artifact row).",
  "503 with Retry-After when no live runner computes the task, none takes it within SVC_ONESHOT_LEASE_WAIT_SECONDS (10) or it is not done within",
  "SVC_ONESHOT_TIMEOUT_SECONDS (120). 413 beyond SVC_ONESHOT_MAX_REQUEST_BYTES; 415 a body that is not image/* or application/octet-stream;",
  "422 `not_an_image` for bytes without an image header, or the runner's error when it could not read the image.",
].join("\n");

/** The request's image bytes, after the media type check (415). */
async function imageBytes(c: Context<AppEnv>): Promise<{ bytes: Uint8Array; type: string | null }> {
  const type = c.req.header("Content-Type")?.split(";")[0]?.trim().toLowerCase() ?? null;
  if (type !== null && !type.startsWith("image/") && type !== "application/octet-stream") {
    throw new ApiError(
      415,
      "unsupported_media_type",
      `the body is the image's bytes (Content-Type image/... or application/octet-stream), not ${type}`,
    );
  }
  return { bytes: new Uint8Array(await c.req.arrayBuffer()), type: type?.startsWith("image/") ? type : null };
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

oneshot.openapi(
  createRoute({
    method: "post",
    path: "/v1/oneshot/features",
    tags: ["oneshot"],
    summary: "SIFT features of one image, in the response (4.15)",
    description: ["Capability `oneshot.features`. The extract stage's defaults (FeaturesSpec 2.12); EXIF orientation applied.", HOW].join(
      "\n",
    ),
    middleware: [oneshotBodyLimit] as const,
    request: imageBody,
    responses: { 200: json(OneShotFeaturesResponse, "the features"), ...problemResponses(400, 401, 413, 415, 422, 501, 503) },
  }),
  async (c) => {
    requireCapability(c.env, "oneshot.features");
    const { bytes, type } = await imageBytes(c);
    const image = await oneshotImage(bytes, type);
    const { media_type: _type, ...query } = image;
    const params: OneshotFeaturesTaskParams = { oneshot_features: { query } };
    const answer = await runOneshot(
      c.env,
      { tenantId: c.var.tenantId, projectId: "", kind: "oneshot_features", params, image, bytes, dataset: null, input_artifacts: {} },
      async (outputs, jobId) => {
        const file = outputs.artifacts[0]?.files[0];
        const obj = file ? await c.env.BLOBS.get(oneshotKey(c.var.tenantId, jobId, file.blob_sha)) : null;
        if (!obj) throw new ApiError(502, "engine_unavailable", "the runner's features were not stored; retry");
        const f = decodeFeatures(new Uint8Array(await obj.arrayBuffer()));
        const n = f.keypoints.length / 4;
        return OneShotFeaturesResponse.parse({
          width: f.imageWidth,
          height: f.imageHeight,
          num_keypoints: n,
          descriptor_kind: f.descriptorKind === DescriptorKind.siftL2 ? "sift_l2" : "sift_l1_root",
          keypoints: Array.from({ length: n }, (_, k) => Array.from(f.keypoints.subarray(4 * k, 4 * k + 4))),
          descriptors: base64(f.descriptors),
        });
      },
    );
    return c.json(answer, 200);
  },
);

oneshot.openapi(
  createRoute({
    method: "post",
    path: "/v1/oneshot/localize",
    tags: ["oneshot"],
    summary: "localizes one image against a reconstruction, in the response (4.15)",
    description: [
      "Capability `localize.from_memory`. As `POST /v1/reconstructions/{rid}/localize` (against the largest sealed snapshot; 404 unknown reconstruction,",
      "409 nothing sealed yet), but the image is the body and the LocalizationResult the response, with the reconstruction and snapshot it is in.",
      HOW,
    ].join("\n"),
    middleware: [oneshotBodyLimit] as const,
    request: { query: z.object({ recon_id: Id }), ...imageBody },
    responses: {
      200: json(
        OneShotLocalizeResponse,
        "the localization (`success: false` with diagnostics.reason when the image could not be localized)",
      ),
      ...problemResponses(400, 401, 404, 409, 413, 415, 422, 501, 503),
    },
  }),
  async (c) => {
    requireCapability(c.env, "localize.from_memory");
    const reconId = c.req.valid("query").recon_id;
    const recon = await reconstructionOf(c.env, c.var.tenantId, reconId);
    const { seq, snapshot, input_artifacts } = await localizationInputs(c.env, c.var.tenantId, reconId);
    const { bytes, type } = await imageBytes(c);
    const image = await oneshotImage(bytes, type);
    const { media_type: _type, ...query } = image;
    const params: RelocalizeTaskParams = { relocalize: { query, sift: {}, recon_id: reconId, seq } };
    const result = await runOneshot(
      c.env,
      {
        tenantId: c.var.tenantId,
        projectId: recon.project_id,
        kind: "relocalize",
        params,
        image,
        bytes,
        dataset: await producerDataset(c.env, c.var.tenantId, snapshot),
        input_artifacts,
      },
      async (outputs) => LocalizationResult.parse(outputs.result),
    );
    return c.json(OneShotLocalizeResponse.parse({ ...result, recon_id: reconId, snapshot_seq: seq }), 200);
  },
);

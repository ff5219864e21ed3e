/**
 * @module Reconstructions, sub-models and sealed snapshots (spec 4.9): the resources, the sealed
 * files with immutable caching, octree tiles and the observations sidecar of the root model and
 * of every component (`submodels/{idx}/...`). Reads only; snapshots are sealed through the
 * runner protocol (snapshot-seal.ts); the artifact listing is in artifacts.ts. Merge
 * (`recon.merge`) and the dense files answer 501 until built (unbuilt.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  Id,
  ImageObservations,
  Page,
  PageQuery,
  PointVisibility,
  RECONSTRUCTION_FILES,
  Reconstruction,
  SNAPSHOT_FILES,
  SnapshotList,
  SubModel,
  TileIndexFile,
} from "../../protocol";
import type { AppEnv } from "../context";
import { notFound } from "../errors";
import { json, problemResponses } from "../openapi";
import { createFileRoute, newRouter } from "../router";
import { serveBytes } from "../services/bytes";
import { imageObservations, pointVisibility } from "../services/observations";
import {
  type SnapshotAddress,
  mediaTypeOf,
  reconstructionOf,
  reconstructionResource,
  sealedFile,
  serveSealed,
  submodelResource,
} from "../services/snapshots";
import { tenantStore, unwrap } from "../services/stores";
import { signedLink } from "../services/signed-urls";
import { tileObject } from "../services/tiles";
import type { Context } from "hono";

export const reconstructions = newRouter();

const bytes = (description: string) => ({
  content: {
    "application/json": { schema: z.unknown() },
    "application/x-sfm-points-v1": { schema: z.string().meta({ format: "binary" }) },
  },
  description,
});
/** api_key mode: a keyed read of a sealed file is sent to its signed link (services/signed-urls.ts). */
const signedRedirect = {
  307: {
    description:
      "`api_key` mode: the file is served at its signed link (`Location`: this path with `x-tenant`, `x-expires`, `x-signature`), " +
      "which needs no key until it expires and carries rule 2's `Cache-Control: public, max-age=31536000, immutable`; " +
      "this answer is `Cache-Control: private, no-store`",
    headers: z.object({ Location: z.string() }),
  },
};
const fileResponses = {
  200: bytes("the file (strong ETag = its SHA-256; immutable)"),
  206: bytes("the requested byte range"),
  304: { description: "not modified" },
  ...signedRedirect,
  ...problemResponses(404, 416, 422),
};

/**
 * Sealed bytes as this deployment shares them: in `api_key` mode a request with a key is answered
 * 307 to the file's signed link, after the lookups (another tenant's ids still answer 404), so
 * shared caches only ever hold the bytes under an unguessable URL; a signed request (and `none`
 * mode, where every file is the one tenant's) gets the bytes.
 */
async function sealedAnswer(c: Context<AppEnv>, serve: () => Promise<Response>): Promise<Response> {
  if (c.var.config.authMode !== "api_key" || c.var.signedLink) return serve();
  const url = new URL(c.req.url);
  const keep = new URLSearchParams([...url.searchParams].filter(([k]) => k === "download"));
  const location = await signedLink(c.env, c.var.tenantId, url.pathname, Date.now(), c.var.config.signedUrlSeconds, keep);
  return new Response(null, { status: 307, headers: { Location: location, "Cache-Control": "private, no-store" } });
}

const Num = (what: string) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `${what} must be a non-negative integer`)
    .transform(Number);
const ReconParams = z.object({ rid: Id });
const SnapshotParams = ReconParams.extend({ seq: Num("seq") });
const Download = z.object({ download: z.enum(["true", "false"]).default("false").describe("attachment disposition") });

const address = (c: Context<AppEnv>, p: { rid: string; seq: number; idx?: number }): SnapshotAddress => ({
  tenantId: c.var.tenantId,
  reconId: p.rid,
  seq: p.seq,
  idx: p.idx ?? null,
});

reconstructions.openapi(
  createRoute({
    method: "get",
    path: "/v1/reconstructions/{rid}",
    tags: ["reconstructions"],
    request: { params: ReconParams },
    responses: { 200: json(Reconstruction, "the reconstruction; status mirrors the driving job (3.4)"), ...problemResponses(404) },
  }),
  async (c) => c.json(reconstructionResource(await reconstructionOf(c.env, c.var.tenantId, c.req.valid("param").rid)), 200),
);

reconstructions.openapi(
  createRoute({
    method: "get",
    path: "/v1/reconstructions/{rid}/submodels",
    tags: ["reconstructions"],
    request: { params: ReconParams, query: PageQuery },
    responses: {
      200: json(Page(SubModel, "SubModelPage"), "one SubModel per disconnected component (2.8)"),
      ...problemResponses(404, 422),
    },
  }),
  async (c) => {
    const page = unwrap(await tenantStore(c.env, c.var.tenantId).listSubmodels(c.req.valid("param").rid, c.req.valid("query")));
    return c.json({ ...page, items: page.items.map(submodelResource) }, 200);
  },
);

reconstructions.openapi(
  createRoute({
    method: "get",
    path: "/v1/submodels/{smid}",
    tags: ["reconstructions"],
    request: { params: z.object({ smid: Id }) },
    responses: { 200: json(SubModel, "the sub-model"), ...problemResponses(404) },
  }),
  async (c) => {
    const row = await tenantStore(c.env, c.var.tenantId).getSubmodel(c.req.valid("param").smid);
    if (!row) throw notFound("submodel");
    return c.json(submodelResource(row), 200);
  },
);

reconstructions.openapi(
  createRoute({
    method: "get",
    path: "/v1/reconstructions/{rid}/snapshots",
    tags: ["reconstructions"],
    request: { params: ReconParams },
    responses: { 200: json(SnapshotList, "the sealed seqs, ascending (2.10)"), ...problemResponses(404) },
  }),
  async (c) => {
    const { rid } = c.req.valid("param");
    const seqs = await tenantStore(c.env, c.var.tenantId).snapshotSeqs(rid);
    if (!seqs) throw notFound("reconstruction");
    const self = `/v1/reconstructions/${rid}/snapshots`;
    const latest = seqs.at(-1);
    return c.json(
      {
        seqs,
        _links: {
          self: { href: self },
          reconstruction: { href: `/v1/reconstructions/${rid}` },
          ...(latest ? { latest: { href: `${self}/${latest}/summary.json` } } : {}),
        },
      },
      200,
    );
  },
);

for (const name of RECONSTRUCTION_FILES) {
  reconstructions.openapi(
    createRoute({
      method: "get",
      path: `/v1/reconstructions/{rid}/${name}`,
      tags: ["reconstructions"],
      request: { params: ReconParams, query: Download },
      responses: {
        200: json(z.unknown(), `${name} (2.14), ETag = its SHA-256; rewritten by later match/verify runs, so revalidated`),
        304: { description: "not modified" },
        ...problemResponses(404),
      },
    }),
    async (c) => {
      const { rid } = c.req.valid("param");
      await reconstructionOf(c.env, c.var.tenantId, rid);
      const file = await tenantStore(c.env, c.var.tenantId).reconFile(rid, name);
      if (!file) throw notFound(`${name} of this reconstruction`);
      return serveSealed(c.env, c.req.raw, file, c.req.valid("query").download === "true", false);
    },
  );
}

const FileName = z
  .enum(SNAPSHOT_FILES)
  .describe(
    "checked against the spec's names (4.9 rule 1) and our `x-point_descriptors.bin` (a descriptor per 3D point, for localization), so no path can escape the snapshot",
  );

reconstructions.openapi(
  createRoute({
    method: "get",
    path: "/v1/reconstructions/{rid}/snapshots/{seq}/{name}",
    tags: ["reconstructions"],
    description:
      "A file of the root model, the largest component (2.8 rule 2). `Cache-Control: public, max-age=31536000, immutable`; Range and If-None-Match honoured. " +
      "In `api_key` mode, asked with a key, it answers 307 to its signed link, where the bytes are served (caching rule 2 kept safe for shared caches).",
    request: { params: SnapshotParams.extend({ name: FileName }), query: Download },
    responses: fileResponses,
  }),
  async (c) => {
    const p = c.req.valid("param");
    const file = await sealedFile(c.env, address(c, p), p.name);
    return sealedAnswer(c, () => serveSealed(c.env, c.req.raw, file, c.req.valid("query").download === "true"));
  },
);

reconstructions.openapi(
  createRoute({
    method: "get",
    path: "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}/{name}",
    tags: ["reconstructions"],
    description: "A file of one component (2.8), as sealed for it.",
    request: { params: SnapshotParams.extend({ idx: Num("idx"), name: FileName }), query: Download },
    responses: fileResponses,
  }),
  async (c) => {
    const p = c.req.valid("param");
    const file = await sealedFile(c.env, address(c, p), p.name);
    return sealedAnswer(c, () => serveSealed(c.env, c.req.raw, file, c.req.valid("query").download === "true"));
  },
);

/**
 * The derived reads of one model: its octree tiles and its observations sidecar, for the root
 * (the largest model, 2.8 rule 2) and for each component under `submodels/{idx}/`. 4.9 rule 1
 * names `tiles/index.json` among a component's files, so a component's tiles hang below it as the
 * root's do; the observations routes under `submodels/{idx}/` are our extension, the root's twin,
 * since 4.9 names them only at the root yet each component has its own images.json.
 */
const MODELS = [
  { prefix: "/v1/reconstructions/{rid}/snapshots/{seq}", params: SnapshotParams, whose: "the root model (the largest component)" },
  {
    prefix: "/v1/reconstructions/{rid}/snapshots/{seq}/submodels/{idx}",
    params: SnapshotParams.extend({ idx: Num("idx") }),
    whose: "component {idx} (2.8)",
  },
];
/** The model's path parameters, whichever prefix matched (`idx` only under `submodels/{idx}/`). */
type ModelParams = { rid: string; seq: number; idx?: number };

/** Serves an object of a model's points tiling, generating the tiling on first use. */
async function serveTile(c: Context<AppEnv>, p: ModelParams, at: Parameters<typeof tileObject>[2], download: boolean) {
  const points = await sealedFile(c.env, address(c, p), "points.bin");
  const obj = await tileObject(c.env.BLOBS, points, at);
  if (!obj) throw notFound("tile: the cell is empty (or outside the octree)");
  const name = at === "index" ? "tiles/index.json" : `tiles/${at.level}/${at.x}/${at.y}/${at.z}.bin`;
  return sealedAnswer(c, () =>
    serveBytes(c.env.BLOBS, c.req.raw, {
      ...obj,
      contentType: mediaTypeOf(name),
      cache: { immutable: true, shared: true },
      downloadName: download ? name.replaceAll("/", "_") : undefined,
    }),
  );
}

for (const { prefix, params, whose } of MODELS) {
  reconstructions.openapi(
    createRoute({
      method: "get",
      path: `${prefix}/tiles/index.json`,
      tags: ["reconstructions"],
      description: `The octree over the points.bin of ${whose}, generated on first request and cached; level 0 is the one tile covering the bbox.`,
      request: { params, query: Download },
      responses: {
        200: json(TileIndexFile, "the tile index"),
        304: { description: "not modified" },
        ...signedRedirect,
        ...problemResponses(404, 422),
      },
    }),
    async (c) => serveTile(c, c.req.valid("param") as ModelParams, "index", c.req.valid("query").download === "true"),
  );

  reconstructions.openapi(
    createFileRoute({
      method: "get",
      path: `${prefix}/tiles/{level}/{x}/{y}/{z}.bin`,
      tags: ["reconstructions"],
      description: `Tile (level, x, y, z) of ${whose}: the points whose position falls in the half-open cell, in points.bin format with the cell's box as bbox; 404 for an empty cell.`,
      request: { params: params.extend({ level: Num("level"), x: Num("x"), y: Num("y"), z: Num("z") }), query: Download },
      responses: fileResponses,
    }),
    async (c) => {
      const { level, x, y, z, ...p } = c.req.valid("param") as ModelParams & { level: number; x: number; y: number; z: number };
      return serveTile(c, p, { level, x, y, z }, c.req.valid("query").download === "true");
    },
  );

  reconstructions.openapi(
    createRoute({
      method: "get",
      path: `${prefix}/images/{image_id}/observations`,
      tags: ["reconstructions"],
      description: `From the images.json of ${whose}: the image's keypoints in a track (kp_idx = index in points2D); error = reprojection error in pixels when the camera model allows, else null. 404 when the model has no images.json.`,
      request: { params: params.extend({ image_id: Num("image_id") }) },
      responses: { 200: json(ImageObservations, "the image's observations"), ...problemResponses(404, 422) },
    }),
    async (c) => {
      const p = c.req.valid("param") as ModelParams & { image_id: number };
      return c.json(await imageObservations(c.env, address(c, p), p.image_id), 200);
    },
  );

  reconstructions.openapi(
    createRoute({
      method: "get",
      path: `${prefix}/points/{point3d_id}/visibility`,
      tags: ["reconstructions"],
      description: `From the images.json of ${whose}: every image keypoint naming this point. 404 when the model has no images.json.`,
      request: { params: params.extend({ point3d_id: Num("point3d_id") }) },
      responses: { 200: json(PointVisibility, "the images that see the point"), ...problemResponses(404, 422) },
    }),
    async (c) => {
      const p = c.req.valid("param") as ModelParams & { point3d_id: number };
      return c.json(await pointVisibility(c.env, address(c, p), p.point3d_id), 200);
    },
  );
}

/**
 * @module Images (spec 2.5, 4.5): registration from finalized blobs (single and batch, at most
 * 1000, all-or-nothing; idempotent for a name the dataset holds with the same blob), listing, deletion (by id, and the legacy delete by name), bytes with
 * ETag/304/Range, JPEG thumbnails, and EXIF parsed with exifr.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { Id, Image, ImageBatchCreate, ImageCreate, ImageExif, ImageName, Page, PageQuery, queryNumber } from "../../protocol";
import { notFound, validation } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { blobKey } from "../services/blobs";
import { serveBytes } from "../services/bytes";
import { readExif } from "../services/exif";
import { THUMBNAIL_SIZES, checkThumbnailable, ensureThumbnail, thumbnailEtag, thumbnailKey } from "../services/thumbnails";
import { imageResource } from "../services/resources";
import { tenantStore, unwrap } from "../services/stores";

export const images = newRouter();

const ImagePage = Page(Image, "ImagePage");
const DatasetParams = z.object({ did: Id });
const ImageParams = z.object({ image_id: Id });
const binary = (description: string) => ({
  content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } },
  description,
});

/** Images come only from uploaded blobs: other sources' bytes are out of this deployment's reach. */
async function uploadDataset(env: Env, tenantId: string, did: string) {
  const ds = await tenantStore(env, tenantId).getDataset(did);
  if (!ds) throw notFound("dataset");
  if (ds.source.kind !== "upload") {
    throw validation(`dataset source '${ds.source.kind}' is not reachable from this deployment; create an 'upload' dataset`, [
      { path: "source.kind", message: "images can only be registered on upload datasets here", code: "source_unreachable" },
    ]);
  }
}

images.openapi(
  createRoute({
    method: "post",
    path: "/v1/datasets/{did}/images",
    tags: ["images"],
    request: { params: DatasetParams, ...jsonBody(ImageCreate) },
    responses: {
      201: json(Image, "registered, or the image the dataset already holds under this name with this blob"),
      ...problemResponses(400, 401, 404, 409, 413, 422),
    },
    description:
      "Idempotent: a name the dataset holds with the same blob (an upload source's entry, a retry) answers with that image; 409 when it holds the name with other bytes.",
  }),
  async (c) => {
    const { did } = c.req.valid("param");
    await uploadDataset(c.env, c.var.tenantId, did);
    const [row] = unwrap(await tenantStore(c.env, c.var.tenantId).createImages(did, [c.req.valid("json")], null));
    return c.json(imageResource(row!), 201, { Location: `/v1/images/${row!.image_id}` });
  },
);

images.openapi(
  createActionRoute({
    method: "post",
    path: "/v1/datasets/{did}/images:batchCreate",
    tags: ["images"],
    request: { params: DatasetParams, ...jsonBody(ImageBatchCreate) },
    responses: {
      201: json(
        z.object({ images: z.array(Image) }),
        "all registered, in request order; names held with the same blob come back as they are",
      ),
      ...problemResponses(400, 401, 404, 409, 413, 422),
    },
  }),
  async (c) => {
    const { did } = c.req.valid("param");
    await uploadDataset(c.env, c.var.tenantId, did);
    const rows = unwrap(await tenantStore(c.env, c.var.tenantId).createImages(did, c.req.valid("json").requests, "requests"));
    return c.json({ images: rows.map(imageResource) }, 201);
  },
);

images.openapi(
  createRoute({
    method: "get",
    path: "/v1/datasets/{did}/images",
    tags: ["images"],
    request: { params: DatasetParams, query: PageQuery },
    responses: { 200: json(ImagePage, "the dataset's images"), ...problemResponses(401, 404, 422) },
  }),
  async (c) => {
    const page = unwrap(await tenantStore(c.env, c.var.tenantId).listImages(c.req.valid("param").did, c.req.valid("query")));
    return c.json({ ...page, items: page.items.map(imageResource) }, 200);
  },
);

async function imageOr404(env: Env, tenantId: string, imageId: string) {
  const row = await tenantStore(env, tenantId).getImage(imageId);
  if (!row) throw notFound("image");
  return row;
}

images.openapi(
  createRoute({
    method: "get",
    path: "/v1/images/{image_id}",
    tags: ["images"],
    request: { params: ImageParams },
    responses: { 200: json(Image, "the image"), ...problemResponses(401, 404) },
  }),
  async (c) => c.json(imageResource(await imageOr404(c.env, c.var.tenantId, c.req.valid("param").image_id)), 200),
);

images.openapi(
  createRoute({
    method: "delete",
    path: "/v1/images/{image_id}",
    tags: ["images"],
    request: { params: ImageParams },
    responses: { 204: { description: "deleted; the bytes go with the last reference" }, ...problemResponses(401, 404) },
  }),
  async (c) => {
    if (!(await tenantStore(c.env, c.var.tenantId).deleteImage(c.req.valid("param").image_id))) throw notFound("image");
    return c.body(null, 204);
  },
);

images.openapi(
  createRoute({
    method: "delete",
    path: "/v1/datasets/{did}/images/{name}",
    tags: ["images"],
    description: "Legacy label-addressed delete (spec 9.6). A name containing '/' is sent percent-encoded.",
    request: { params: z.object({ did: Id, name: ImageName }) },
    responses: { 204: { description: "deleted" }, ...problemResponses(401, 404, 422) },
  }),
  async (c) => {
    const { did, name } = c.req.valid("param");
    if (!(await tenantStore(c.env, c.var.tenantId).getDataset(did))) throw notFound("dataset");
    if (!(await tenantStore(c.env, c.var.tenantId).deleteImageByName(did, name))) throw notFound("image");
    return c.body(null, 204);
  },
);

images.openapi(
  createRoute({
    method: "get",
    path: "/v1/images/{image_id}/bytes",
    tags: ["images"],
    request: { params: ImageParams, query: z.object({ download: z.enum(["true", "false"]).optional() }) },
    responses: {
      200: binary("the image bytes (strong ETag = content SHA-256)"),
      206: binary("the requested byte range"),
      304: { description: "not modified" },
      ...problemResponses(401, 404, 416),
    },
  }),
  async (c) => {
    const img = await imageOr404(c.env, c.var.tenantId, c.req.valid("param").image_id);
    return serveBytes(c.env.BLOBS, c.req.raw, {
      key: blobKey(c.var.tenantId, img.content_sha),
      size: img.byte_size ?? 0,
      etag: `"${img.content_sha}"`,
      contentType: img.media_type ?? "application/octet-stream",
      cache: { immutable: true, shared: c.var.config.authMode === "none" },
      downloadName: c.req.valid("query").download === "true" ? img.name.split("/").at(-1) : undefined,
    });
  },
);

images.openapi(
  createRoute({
    method: "get",
    path: "/v1/images/{image_id}/thumbnail",
    tags: ["images"],
    request: {
      params: ImageParams,
      query: z.object({
        size: queryNumber(z.number().int().min(THUMBNAIL_SIZES.min).max(THUMBNAIL_SIZES.max))
          .default(THUMBNAIL_SIZES.default)
          .describe("longest side in pixels"),
      }),
    },
    responses: {
      200: {
        content: { "image/jpeg": { schema: z.string().meta({ format: "binary" }) } },
        description: "upright JPEG, longest side `size` (never enlarged)",
      },
      304: { description: "not modified" },
      ...problemResponses(401, 404, 416, 422),
    },
  }),
  async (c) => {
    const img = await imageOr404(c.env, c.var.tenantId, c.req.valid("param").image_id);
    const { size } = c.req.valid("query");
    const src = { blobKey: blobKey(c.var.tenantId, img.content_sha), mediaType: img.media_type, width: img.width, height: img.height };
    checkThumbnailable(src);
    return serveBytes(c.env.BLOBS, c.req.raw, {
      key: thumbnailKey(src.blobKey, size),
      size: () => ensureThumbnail(c.env.BLOBS, src, size),
      etag: thumbnailEtag(img.content_sha, size),
      contentType: "image/jpeg",
      cache: { immutable: true, shared: c.var.config.authMode === "none" },
    });
  },
);

images.openapi(
  createRoute({
    method: "get",
    path: "/v1/images/{image_id}/exif",
    tags: ["images"],
    request: { params: ImageParams },
    responses: { 200: json(ImageExif, "EXIF metadata (null members where absent)"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const img = await imageOr404(c.env, c.var.tenantId, c.req.valid("param").image_id);
    return c.json(await readExif(c.env.BLOBS, blobKey(c.var.tenantId, img.content_sha), img.image_id), 200);
  },
);

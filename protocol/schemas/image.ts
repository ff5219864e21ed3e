/** @module Image resource (spec 2.5, 4.5). */
import { z } from "zod";
import { ImageName } from "./dataset";
import { Id, Links, Sha256, Timestamp } from "./common";
import { GpsCoord } from "./geo";

export const Image = z
  .object({
    image_id: Id,
    dataset_id: Id,
    name: z.string(),
    content_sha: z.string(),
    source_kind: z.enum(["upload", "local", "s3"]),
    rel_path: z.string().nullable(),
    byte_size: z.number().int().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    media_type: z.string().nullable(),
    created_at: Timestamp,
    "x-gps": GpsCoord.nullable().describe(
      "the photo's EXIF GPS position, read once when its bytes were finalized (our extension); null without one",
    ),
    _links: Links,
  })
  .meta({ id: "Image" });
export type Image = z.infer<typeof Image>;

export const ImageCreate = z.object({ name: ImageName, blob_sha: Sha256 }).meta({ id: "ImageCreate" });
export type ImageCreate = z.infer<typeof ImageCreate>;

/** At most 1000 items per call (8). */
export const MAX_BATCH_IMAGES = 1000;
export const ImageBatchCreate = z.object({ requests: z.array(ImageCreate).min(1).max(MAX_BATCH_IMAGES) }).meta({ id: "ImageBatchCreate" });

export const ImageExif = z
  .object({
    image_id: Id,
    orientation: z.number().int().nullable(),
    make: z.string().nullable(),
    model: z.string().nullable(),
    focal_length_mm: z.number().nullable(),
    focal_length_35mm: z.number().nullable(),
    datetime_original: z.string().nullable(),
    gps: GpsCoord.nullable(),
    tags: z.record(z.string(), z.unknown()).describe("every parsed tag, JSON-safe"),
  })
  .meta({ id: "ImageExif" });
export type ImageExif = z.infer<typeof ImageExif>;

/** @module Chunked uploads (spec 2.6, 3.3, 4.3). */
import { z } from "zod";
import { Id, Sha256, Timestamp } from "./common";

export const UploadState = z.enum(["open", "received", "finalized"]);

export const Upload = z
  .object({
    upload_id: Id,
    state: UploadState,
    expected_size: z.number().int(),
    received_bytes: z.number().int(),
    content_type: z.string().nullable(),
    expected_sha: Sha256.nullable(),
    blob_sha: Sha256.nullable(),
    created_at: Timestamp,
    expires_at: Timestamp,
  })
  .meta({ id: "Upload" });
export type Upload = z.infer<typeof Upload>;

export const UploadInit = z
  .object({
    expected_size: z.number().int().min(0),
    content_type: z
      .string()
      .max(255)
      .regex(/^[\w.+-]+\/[\w.+-]+$/, "must be a media type")
      .optional(),
    expected_sha: Sha256.optional(),
  })
  .meta({ id: "UploadInit" });
export type UploadInit = z.infer<typeof UploadInit>;

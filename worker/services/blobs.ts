/**
 * @module Content-addressed bytes in R2 (spec 1 design property 2). Keys are per tenant,
 * `t/<tenant>/blobs/<sha256>`: deduplicated within a tenant and reference-counted by its
 * TenantStore, and never shared across tenants, so no tenant can learn what another stored.
 */
import { imageSize } from "image-size";
import { conflict } from "../errors";
import { concatenate } from "./bytes";
import { readFocalLength35mm, readGps } from "./exif-tags";
import type { BlobFacts, ChunkRecord } from "../storage/tenant-rows";

export const blobKey = (tenantId: string, sha: string) => `t/${tenantId}/blobs/${sha}`;
export const chunkKey = (tenantId: string, uploadId: string, start: number, sha: string) =>
  `t/${tenantId}/uploads/${uploadId}/${start}-${sha}`;

export const toHex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");

export async function sha256Hex(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
}

/** The concatenated chunks as one stream, read from R2 one chunk at a time. */
function chunkStream(bucket: R2Bucket, chunks: ChunkRecord[]): ReadableStream<Uint8Array> {
  const total = chunks.reduce((s, c) => s + c.length, 0);
  // Only a concurrent finalize that already stored the blob and released the chunks finds one gone.
  const gone = () => conflict("the upload's chunks were released by another finalize; retry to read its result");
  return concatenate(
    bucket,
    chunks.map((c) => ({ key: c.r2_key, size: c.length })),
    { offset: 0, length: total },
    gone,
  );
}

/** SHA-256 of a stream's bytes, without holding them all in memory. */
export async function digestStream(body: ReadableStream<Uint8Array>): Promise<string> {
  // workerd exposes DigestStream on `crypto` only, though the generated types declare it global.
  const digest = new (crypto as unknown as { DigestStream: typeof DigestStream }).DigestStream("SHA-256");
  // A failed read aborts the digest too; the pipe's rejection is the one reported.
  digest.digest.catch(() => {});
  await body.pipeTo(digest);
  return toHex(await digest.digest);
}

/** SHA-256 of the assembled upload, streamed (no copy of the whole file in memory). */
export const digestChunks = (bucket: R2Bucket, chunks: ChunkRecord[]) => digestStream(chunkStream(bucket, chunks));

/** Writes the assembled bytes to their content address, unless the tenant already has them there. */
export async function storeBlob(bucket: R2Bucket, key: string, chunks: ChunkRecord[], size: number, contentType: string | null) {
  if (await bucket.head(key)) return;
  const body = chunkStream(bucket, chunks).pipeThrough(new FixedLengthStream(size));
  await bucket.put(key, body, { httpMetadata: contentType ? { contentType } : undefined });
}

export const SNIFF_BYTES = 256 * 1024;
const MEDIA_TYPES: Record<string, string> = {
  jpg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  gif: "image/gif",
  tiff: "image/tiff",
  bmp: "image/bmp",
  heif: "image/heif",
  avif: "image/avif",
};

/** The first bytes of the assembled upload, enough for any image header (and EXIF). */
export async function uploadHead(bucket: R2Bucket, chunks: ChunkRecord[]): Promise<Uint8Array> {
  const head = new Uint8Array(SNIFF_BYTES);
  let filled = 0;
  const reader = chunkStream(bucket, chunks).getReader();
  while (filled < SNIFF_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    const take = value.subarray(0, SNIFF_BYTES - filled);
    head.set(take, filled);
    filled += take.length;
  }
  await reader.cancel();
  return head.subarray(0, filled);
}

/**
 * What the header says, read once at finalize so images get width/height without decoding (2.5)
 * and jobs the EXIF 35 mm-equivalent focal length their runners start cameras from and the EXIF
 * GPS position their mappers use.
 */
const jsonOrNull = (v: unknown) => (v === null ? null : JSON.stringify(v));

export async function blobFacts(head: Uint8Array, key: string, sha: string, size: number, declaredType: string | null): Promise<BlobFacts> {
  let dims: { width?: number; height?: number; type?: string } = {};
  if (head.length > 0) {
    try {
      // Stored pixels, before any EXIF rotation (as COLMAP reports them).
      dims = imageSize(head);
    } catch {
      // Not an image (a pair list, say): no dimensions.
    }
  }
  return {
    sha,
    r2_key: key,
    size,
    media_type: (dims.type && MEDIA_TYPES[dims.type]) ?? declaredType,
    width: dims.width ?? null,
    height: dims.height ?? null,
    focal_length_35mm: dims.width && dims.height ? await readFocalLength35mm(head, dims.width, dims.height) : null,
    gps_json: dims.width ? jsonOrNull(await readGps(head)) : null,
  };
}

/**
 * @module Octree tiles of a sealed points.bin (spec 4.9), generated on first request and kept in
 * R2 under the points blob's derived objects (`<points key>/tiles/<params>/...`), so they are
 * content-addressed by the points and the level parameters, shared by every snapshot sealing
 * the same points, and deleted with the blob. The cells and tiles themselves: octree.ts.
 */
import { POINTS_HEADER_BYTES, POINT_RECORD_BYTES, decodePoints } from "../../protocol/wire/points";
import { notFound } from "../errors";
import type { StoredFile } from "../storage/tenant-rows";
import { buildTiles, maxLevelFor } from "./octree";

/** Bumped whenever the tiling changes, so old cached tiles are never served for new rules. */
const TILING_VERSION = 1;

/** Where a tiling of these points lives, and the ETag prefix of its objects. */
function tiling(points: StoredFile) {
  // The sealed file was checked whole (services/snapshots.ts), so its size gives its count.
  const count = (points.size - POINTS_HEADER_BYTES) / POINT_RECORD_BYTES;
  const params = `v${TILING_VERSION}-L${maxLevelFor(count)}`;
  return { prefix: `${points.r2_key}/tiles/${params}/`, etag: `${points.sha}.tiles-${params}` };
}

/**
 * Makes sure the tiles of these points exist in R2 (written before their index, so an index
 * present means every tile is). Concurrent first requests write the same bytes: harmless.
 */
async function ensureTiles(bucket: R2Bucket, points: StoredFile): Promise<string> {
  const { prefix } = tiling(points);
  if (await bucket.head(`${prefix}index.json`)) return prefix;
  const obj = await bucket.get(points.r2_key);
  if (!obj) throw notFound("points.bin");
  const cloud = decodePoints(new Uint8Array(await obj.arrayBuffer()));
  const { index, tiles } = buildTiles(cloud, maxLevelFor(cloud.count));
  const BATCH = 32;
  for (let i = 0; i < tiles.length; i += BATCH) {
    await Promise.all(tiles.slice(i, i + BATCH).map((t) => bucket.put(`${prefix}${t.level}/${t.x}/${t.y}/${t.z}.bin`, t.bytes)));
  }
  await bucket.put(`${prefix}index.json`, JSON.stringify(index));
  return prefix;
}

/** An object of the tiling to serve: its key, size and strong ETag; null for an empty or out-of-range cell (404). */
export async function tileObject(
  bucket: R2Bucket,
  points: StoredFile,
  address: { level: number; x: number; y: number; z: number } | "index",
): Promise<{ key: string; size: number; etag: string } | null> {
  const prefix = await ensureTiles(bucket, points);
  const name = address === "index" ? "index.json" : `${address.level}/${address.x}/${address.y}/${address.z}.bin`;
  const head = await bucket.head(`${prefix}${name}`);
  return head ? { key: head.key, size: head.size, etag: `"${tiling(points).etag}.${name.replaceAll("/", "-")}"` } : null;
}

/**
 * @module Reads one sealed snapshot (spec 2.14, 4.9): cameras.json and images.json, validated by
 * the protocol's schemas, and the points, delivered in pieces so the cloud appears while it
 * loads. Small clouds come from points.bin by Range requests of whole 26-byte records (a
 * fixed-stride file, rule 1); large ones from octree tiles when `tiles/index.json` exists: the
 * finest level's cells (each point lies in exactly one cell of a level, 4.9), densest first, up
 * to a budget. A server that ignores Range sends the whole file at once.
 */
import { z } from "zod";
import { CamerasFile, ImagesFile } from "../../../protocol/schemas/snapshot";
import { POINTS_HEADER_BYTES, POINT_RECORD_BYTES, type PointCloud, decodePoints, decodePointsHeader } from "../../../protocol/wire/points";
import { request } from "../api/client";
import { snapshotPath } from "../api/resources";

/** Records per Range request: about 1.7 MB, a fraction of a second on a phone. */
export const RANGE_RECORDS = 65_536;
/** Above this many points, tiles (when present) are read instead of the full file. */
export const TILES_ABOVE = 1_000_000;
/** The most points drawn from tiles. */
export const TILE_POINT_BUDGET = 2_000_000;

const TileIndex = z.object({
  bbox_min: z.tuple([z.number(), z.number(), z.number()]),
  bbox_max: z.tuple([z.number(), z.number(), z.number()]),
  max_level: z.number().int(),
  tile_count: z.number().int(),
  tiles: z.array(
    z.object({
      level: z.number().int(),
      x: z.number().int(),
      y: z.number().int(),
      z: z.number().int(),
      count: z.number().int(),
      byte_size: z.number().int(),
    }),
  ),
});

export interface SnapshotGeometry {
  cameras: CamerasFile;
  images: ImagesFile;
}

export interface PointSink {
  /** Called once before any points: how many will come in total and their bounds. */
  begin(total: number, bboxMin: [number, number, number], bboxMax: [number, number, number]): void;
  add(points: PointCloud): void;
}

export async function loadGeometry(rid: string, seq: number, signal: AbortSignal): Promise<SnapshotGeometry> {
  const [cameras, images] = await Promise.all([
    request(snapshotPath(rid, seq, "cameras.json"), { signal }).then((r) => r.json()),
    request(snapshotPath(rid, seq, "images.json"), { signal }).then((r) => r.json()),
  ]);
  return { cameras: CamerasFile.parse(cameras), images: ImagesFile.parse(images) };
}

async function bytesOf(res: Response): Promise<Uint8Array> {
  return new Uint8Array(await res.arrayBuffer());
}

/** Streams the snapshot's points into `sink`; resolves once all wanted points are delivered. */
export async function loadPoints(rid: string, seq: number, sink: PointSink, signal: AbortSignal): Promise<void> {
  const path = snapshotPath(rid, seq, "points.bin");
  const first = await request(path, { signal, headers: { Range: `bytes=0-${POINTS_HEADER_BYTES - 1}` } });
  if (first.status === 200) {
    const all = decodePoints(await bytesOf(first));
    sink.begin(all.count, all.bboxMin, all.bboxMax);
    sink.add(all);
    return;
  }
  const header = decodePointsHeader(await bytesOf(first));
  if (header.count > TILES_ABOVE && (await loadTiles(rid, seq, sink, signal))) return;
  sink.begin(header.count, header.bboxMin, header.bboxMax);
  for (let from = 0; from < header.count; from += RANGE_RECORDS) {
    const to = Math.min(header.count, from + RANGE_RECORDS);
    const start = POINTS_HEADER_BYTES + from * POINT_RECORD_BYTES;
    const res = await request(path, { signal, headers: { Range: `bytes=${start}-${POINTS_HEADER_BYTES + to * POINT_RECORD_BYTES - 1}` } });
    sink.add(decodePoints(await bytesOf(res), true));
  }
}

/** The finest level's tiles, densest first, within the budget; false when there is no tile index. */
async function loadTiles(rid: string, seq: number, sink: PointSink, signal: AbortSignal): Promise<boolean> {
  const res = await request(snapshotPath(rid, seq, "tiles/index.json"), { signal }, [404]);
  if (res.status === 404) return false;
  const index = TileIndex.parse(await res.json());
  const chosen: typeof index.tiles = [];
  let total = 0;
  const finest = index.tiles.filter((t) => t.level === index.max_level).sort((a, b) => b.count - a.count);
  for (const t of finest) {
    if (total + t.count > TILE_POINT_BUDGET) continue;
    chosen.push(t);
    total += t.count;
  }
  sink.begin(total, index.bbox_min, index.bbox_max);
  for (const t of chosen) {
    const tile = await request(snapshotPath(rid, seq, `tiles/${t.level}/${t.x}/${t.y}/${t.z}.bin`), { signal }, [404]);
    if (tile.status !== 404) sink.add(decodePoints(await bytesOf(tile)));
  }
  return true;
}

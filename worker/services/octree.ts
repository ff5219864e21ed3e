/**
 * @module The octree of a point cloud (spec 4.9 tiles), pure: level L cuts the points' bounding
 * box into 2^L cells per axis; cells are half-open, [lo, hi), so each point falls in exactly one
 * cell of each level, and the box's top faces belong to the last cells (otherwise the extreme
 * points would fall outside every cell). A tile is its cell's points in the cloud's order
 * (ascending point3d_id), with the cell's box as its header bbox (2.14 rule 3). Only non-empty
 * cells have a tile. Served and cached by tiles.ts.
 */
import type { TileIndexFile } from "../../protocol";
import { type PointCloud, encodePoints, pointBounds } from "../../protocol/wire/points";

/** Points a finest-level tile holds on average at most (the deeper the cloud, the more levels). */
const POINTS_PER_TILE = 65_536;
/** Levels 0..2 at least, so even a small cloud has a coarse-to-fine hierarchy; 8 at most. */
const MIN_MAX_LEVEL = 2;
const MAX_MAX_LEVEL = 8;

export function maxLevelFor(count: number): number {
  const wanted = Math.ceil(Math.log(Math.max(1, count / POINTS_PER_TILE)) / Math.log(8));
  return Math.min(MAX_MAX_LEVEL, Math.max(MIN_MAX_LEVEL, wanted));
}

export interface Tile {
  level: number;
  x: number;
  y: number;
  z: number;
  bytes: Uint8Array;
  count: number;
}

/** Every non-empty tile of every level, and the index describing them. */
export function buildTiles(cloud: PointCloud, maxLevel: number): { index: TileIndexFile; tiles: Tile[] } {
  const n = cloud.ids.length;
  const { min, max } = pointBounds(cloud.xyz);
  const side = 2 ** maxLevel;
  // Finest-level cell of each point; a coarser level's cell is this one shifted right
  // (floor(floor(t 2^M) / 2^(M-L)) = floor(t 2^L)), so the levels nest exactly.
  const finest = new Uint32Array(3 * n);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < 3; k++) {
      const extent = max[k]! - min[k]!;
      const t = extent > 0 ? (cloud.xyz[3 * i + k]! - min[k]!) / extent : 0;
      finest[3 * i + k] = Math.min(side - 1, Math.floor(t * side));
    }
  }
  const tiles: Tile[] = [];
  for (let level = 0; level <= maxLevel; level++) {
    const shift = maxLevel - level;
    const cells = new Map<string, number[]>();
    for (let i = 0; i < n; i++) {
      const key = `${finest[3 * i]! >> shift}/${finest[3 * i + 1]! >> shift}/${finest[3 * i + 2]! >> shift}`;
      const members = cells.get(key);
      if (members) members.push(i);
      else cells.set(key, [i]);
    }
    const cellsPerAxis = 2 ** level;
    for (const [key, members] of cells) {
      const [x, y, z] = key.split("/").map(Number) as [number, number, number];
      const cell = [x, y, z];
      const lo = cell.map((c, k) => min[k]! + ((max[k]! - min[k]!) * c) / cellsPerAxis) as [number, number, number];
      const hi = cell.map((c, k) => min[k]! + ((max[k]! - min[k]!) * (c + 1)) / cellsPerAxis) as [number, number, number];
      const bytes = encodePoints({ ...subset(cloud, members), bboxMin: lo, bboxMax: hi });
      tiles.push({ level, x, y, z, bytes, count: members.length });
    }
  }
  tiles.sort((a, b) => a.level - b.level || a.x - b.x || a.y - b.y || a.z - b.z);
  const index: TileIndexFile = {
    bbox_min: min,
    bbox_max: max,
    max_level: maxLevel,
    tile_count: tiles.length,
    tiles: tiles.map((t) => ({ level: t.level, x: t.x, y: t.y, z: t.z, count: t.count, byte_size: t.bytes.byteLength })),
  };
  return { index, tiles };
}

function subset(cloud: PointCloud, members: number[]): PointCloud {
  const m = members.length;
  const out = { xyz: new Float32Array(3 * m), rgb: new Uint8Array(3 * m), trackLength: new Uint16Array(m), ids: new BigUint64Array(m) };
  members.forEach((i, j) => {
    out.xyz.set(cloud.xyz.subarray(3 * i, 3 * i + 3), 3 * j);
    out.rgb.set(cloud.rgb.subarray(3 * i, 3 * i + 3), 3 * j);
    out.trackLength[j] = cloud.trackLength[i]!;
    out.ids[j] = cloud.ids[i]!;
  });
  return out;
}

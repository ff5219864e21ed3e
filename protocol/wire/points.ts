/**
 * @module Binary points, media type `application/x-sfm-points-v1` (spec 2.14): the format of
 * `points.bin`, `points_preview.bin` and octree tiles. Little-endian, fixed stride, so a Range
 * request fetches any run of points: record i starts at byte 44 + 26 i.
 *
 * Header, 44 bytes: magic `SFMP3D\0\0` (8), version uint32 = 1 (4), count uint64 (8),
 * bbox_min 3 x float32 (12), bbox_max 3 x float32 (12).
 * Record, 26 bytes: xyz 3 x float32 (12), rgb 3 x uint8 (3), pad uint8 (1), track_len uint16 (2),
 * point3d_id uint64 (8). Records are ordered by ascending point3d_id (rule 1).
 * A tile's header carries the bounding box of its cell, not of the points (rule 3).
 */
import { WireFormatError } from "./features";

export const POINTS_MEDIA_TYPE = "application/x-sfm-points-v1";
export const POINTS_MAGIC = new Uint8Array([0x53, 0x46, 0x4d, 0x50, 0x33, 0x44, 0x00, 0x00]); // "SFMP3D\0\0"
export const POINTS_VERSION = 1;
export const POINTS_HEADER_BYTES = 44;
export const POINT_RECORD_BYTES = 26;

export interface PointCloud {
  /** x, y, z per point. */
  xyz: Float32Array;
  /** r, g, b per point. */
  rgb: Uint8Array;
  trackLength: Uint16Array;
  /** Ascending. */
  ids: BigUint64Array;
  /** Defaults to the points' own bounds; a tile passes its cell's bounds. */
  bboxMin?: [number, number, number];
  bboxMax?: [number, number, number];
}

export interface PointsHeader {
  count: number;
  bboxMin: [number, number, number];
  bboxMax: [number, number, number];
}

/** Bounds of the points (zeros for none), as float32 so they compare equal to the stored ones. */
export function pointBounds(xyz: Float32Array): { min: [number, number, number]; max: [number, number, number] } {
  if (xyz.length === 0) return { min: [0, 0, 0], max: [0, 0, 0] };
  const min: [number, number, number] = [Infinity, Infinity, Infinity];
  const max: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < xyz.length; i += 3) {
    for (let k = 0; k < 3; k++) {
      const v = xyz[i + k]!;
      if (v < min[k]!) min[k] = v;
      if (v > max[k]!) max[k] = v;
    }
  }
  return { min, max };
}

export function encodePoints(p: PointCloud): Uint8Array {
  const n = p.ids.length;
  if (p.xyz.length !== 3 * n || p.rgb.length !== 3 * n || p.trackLength.length !== n) {
    throw new WireFormatError("xyz, rgb, trackLength and ids must describe the same number of points");
  }
  for (let i = 1; i < n; i++) if (p.ids[i]! <= p.ids[i - 1]!) throw new WireFormatError("point ids must be strictly ascending");
  const bounds = pointBounds(p.xyz);
  const out = new Uint8Array(POINTS_HEADER_BYTES + POINT_RECORD_BYTES * n);
  const v = new DataView(out.buffer);
  out.set(POINTS_MAGIC, 0);
  v.setUint32(8, POINTS_VERSION, true);
  v.setBigUint64(12, BigInt(n), true);
  const [lo, hi] = [p.bboxMin ?? bounds.min, p.bboxMax ?? bounds.max];
  for (let k = 0; k < 3; k++) {
    v.setFloat32(20 + 4 * k, lo[k]!, true);
    v.setFloat32(32 + 4 * k, hi[k]!, true);
  }
  for (let i = 0; i < n; i++) {
    const o = POINTS_HEADER_BYTES + POINT_RECORD_BYTES * i;
    v.setFloat32(o, p.xyz[3 * i]!, true);
    v.setFloat32(o + 4, p.xyz[3 * i + 1]!, true);
    v.setFloat32(o + 8, p.xyz[3 * i + 2]!, true);
    out[o + 12] = p.rgb[3 * i]!;
    out[o + 13] = p.rgb[3 * i + 1]!;
    out[o + 14] = p.rgb[3 * i + 2]!;
    v.setUint16(o + 16, p.trackLength[i]!, true);
    v.setBigUint64(o + 18, p.ids[i]!, true);
  }
  return out;
}

export function decodePointsHeader(bytes: Uint8Array): PointsHeader {
  if (bytes.byteLength < POINTS_HEADER_BYTES) throw new WireFormatError("points file shorter than its 44-byte header");
  for (let i = 0; i < 8; i++) if (bytes[i] !== POINTS_MAGIC[i]) throw new WireFormatError("not an SFMP3D points file");
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = v.getUint32(8, true);
  if (version !== POINTS_VERSION) throw new WireFormatError(`unsupported points version ${version}`);
  const count = v.getBigUint64(12, true);
  if (count > BigInt(Number.MAX_SAFE_INTEGER)) throw new WireFormatError("point count too large");
  const f = (o: number) => v.getFloat32(o, true);
  return { count: Number(count), bboxMin: [f(20), f(24), f(28)], bboxMax: [f(32), f(36), f(40)] };
}

/**
 * Decodes a whole file, or a run of records fetched by Range (`recordsOnly`: the bytes start at
 * a record boundary and hold whole records).
 */
export function decodePoints(bytes: Uint8Array, recordsOnly = false): PointCloud & PointsHeader {
  const header = recordsOnly ? null : decodePointsHeader(bytes);
  const start = recordsOnly ? 0 : POINTS_HEADER_BYTES;
  const body = bytes.byteLength - start;
  if (body % POINT_RECORD_BYTES !== 0) throw new WireFormatError("points body is not a whole number of 26-byte records");
  const n = body / POINT_RECORD_BYTES;
  if (header && header.count !== n) throw new WireFormatError(`header says ${header.count} points, the file holds ${n}`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const xyz = new Float32Array(3 * n);
  const rgb = new Uint8Array(3 * n);
  const trackLength = new Uint16Array(n);
  const ids = new BigUint64Array(n);
  for (let i = 0; i < n; i++) {
    const o = start + POINT_RECORD_BYTES * i;
    xyz[3 * i] = v.getFloat32(o, true);
    xyz[3 * i + 1] = v.getFloat32(o + 4, true);
    xyz[3 * i + 2] = v.getFloat32(o + 8, true);
    rgb.set(bytes.subarray(o + 12, o + 15), 3 * i);
    trackLength[i] = v.getUint16(o + 16, true);
    ids[i] = v.getBigUint64(o + 18, true);
  }
  const bounds = pointBounds(xyz);
  return {
    xyz,
    rgb,
    trackLength,
    ids,
    count: n,
    bboxMin: header?.bboxMin ?? bounds.min,
    bboxMax: header?.bboxMax ?? bounds.max,
  };
}

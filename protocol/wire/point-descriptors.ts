/**
 * @module `x-point_descriptors.bin`, a sealed snapshot's extension file (4.13 localize): one
 * descriptor per 3D point of the root model, the mean of the descriptors of the keypoints that
 * observe it, so a query matches the points without the features the mapper read.
 *
 * All integers little-endian. Header, 32 bytes:
 *
 * | Offset | Size | Field | Type |
 * |---|---|---|---|
 * | 0 | 8 | magic | ASCII `SFMPDSC` then one 0x00 byte |
 * | 8 | 4 | version | uint32 = 1 |
 * | 12 | 4 | count | uint32, number of points N |
 * | 16 | 4 | descriptor_dim | uint32 D (128 for SIFT) |
 * | 20 | 4 | descriptor_kind | uint32, as features (`DescriptorKind`): 1 RootSIFT, 2 SIFT L2 |
 * | 24 | 4 | num_images | uint32, images whose keypoints gave descriptors (a merge: summed over the models merged) |
 * | 28 | 4 | num_images_skipped | uint32, registered images that had no (matching) features (a merge: summed) |
 *
 * Then N point3d_ids (uint64, strictly ascending, each in the snapshot's points.bin) at offset
 * 32, then N descriptors of D bytes (uint8) at offset 32 + 8 N, in point order.
 * Total size: exactly 32 + N (8 + D) bytes.
 */
import { DescriptorKind, WireFormatError } from "./features";

/** The file's name among a snapshot's files (an `x-` extension beside the spec's names, 4.9 rule 1). */
export const POINT_DESCRIPTORS_FILE = "x-point_descriptors.bin";
export const POINT_DESCRIPTORS_MEDIA_TYPE = "application/x-sfm-point-descriptors-v1";
export const POINT_DESCRIPTORS_MAGIC = new Uint8Array([0x53, 0x46, 0x4d, 0x50, 0x44, 0x53, 0x43, 0x00]); // "SFMPDSC\0"
export const POINT_DESCRIPTORS_VERSION = 1;
const HEADER_BYTES = 32;

export interface PointDescriptors {
  /** point3d_id per point, ascending. */
  ids: number[];
  descriptorDim: number;
  descriptorKind: DescriptorKind;
  /** descriptorDim bytes per point. */
  descriptors: Uint8Array;
  numImages: number;
  numImagesSkipped: number;
}

function check(p: PointDescriptors): void {
  if (p.descriptors.length !== p.ids.length * p.descriptorDim)
    throw new WireFormatError(`${p.descriptors.length} descriptor bytes for ${p.ids.length} points of dim ${p.descriptorDim}`);
  if (![1, 2].includes(p.descriptorKind)) throw new WireFormatError(`unknown descriptorKind ${p.descriptorKind}`);
  for (let i = 0; i < p.ids.length; i++) {
    if (!Number.isSafeInteger(p.ids[i]) || p.ids[i]! < 0) throw new WireFormatError(`point id ${p.ids[i]} is not a uint64`);
    if (i > 0 && p.ids[i]! <= p.ids[i - 1]!) throw new WireFormatError("point ids must be strictly ascending");
  }
}

/** Serialises point descriptors into the `x-point_descriptors.bin` layout. */
export function encodePointDescriptors(p: PointDescriptors): Uint8Array {
  check(p);
  const n = p.ids.length;
  const out = new Uint8Array(HEADER_BYTES + n * (8 + p.descriptorDim));
  const view = new DataView(out.buffer);
  out.set(POINT_DESCRIPTORS_MAGIC, 0);
  view.setUint32(8, POINT_DESCRIPTORS_VERSION, true);
  view.setUint32(12, n, true);
  view.setUint32(16, p.descriptorDim, true);
  view.setUint32(20, p.descriptorKind, true);
  view.setUint32(24, p.numImages, true);
  view.setUint32(28, p.numImagesSkipped, true);
  p.ids.forEach((id, i) => view.setBigUint64(HEADER_BYTES + 8 * i, BigInt(id), true));
  out.set(p.descriptors, HEADER_BYTES + 8 * n);
  return out;
}

/** Parses (and validates: magic, version, known kind, exact size, ascending ids) an `x-point_descriptors.bin`; the arrays are copies. */
export function decodePointDescriptors(bytes: Uint8Array): PointDescriptors {
  if (bytes.length < HEADER_BYTES) throw new WireFormatError(`point descriptors: ${bytes.length} bytes, header needs ${HEADER_BYTES}`);
  for (let i = 0; i < 8; i++) {
    if (bytes[i] !== POINT_DESCRIPTORS_MAGIC[i]) throw new WireFormatError("point descriptors: bad magic (expected SFMPDSC\\0)");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== POINT_DESCRIPTORS_VERSION) throw new WireFormatError(`point descriptors: unsupported version ${version}`);
  const n = view.getUint32(12, true);
  const descriptorDim = view.getUint32(16, true);
  const expected = HEADER_BYTES + n * (8 + descriptorDim);
  if (bytes.length !== expected)
    throw new WireFormatError(`point descriptors: ${bytes.length} bytes, layout needs ${expected} for ${n} points`);
  const ids = Array.from({ length: n }, (_, i) => Number(view.getBigUint64(HEADER_BYTES + 8 * i, true)));
  const decoded: PointDescriptors = {
    ids,
    descriptorDim,
    descriptorKind: view.getUint32(20, true) as DescriptorKind,
    descriptors: bytes.slice(HEADER_BYTES + 8 * n, expected),
    numImages: view.getUint32(24, true),
    numImagesSkipped: view.getUint32(28, true),
  };
  try {
    check(decoded);
  } catch (err) {
    throw new WireFormatError(`point descriptors: ${(err as Error).message}`);
  }
  return decoded;
}

/**
 * @module `svc.features.local.v1`: the binary layout of a `features.local.v1` artifact
 * (spec 2.11): one image's local features (keypoints and uint8 descriptors).
 *
 * All integers and floats little-endian. Header, 32 bytes:
 *
 * | Offset | Size | Field | Type |
 * |---|---|---|---|
 * | 0 | 8 | magic | ASCII `SFMFEAT` then one 0x00 byte |
 * | 8 | 4 | version | uint32 = 1 |
 * | 12 | 4 | count | uint32, number of keypoints N |
 * | 16 | 4 | descriptor_dim | uint32 D (128 for SIFT; 0 = keypoints only) |
 * | 20 | 4 | image_width | uint32, pixels of the image the keypoints refer to |
 * | 24 | 4 | image_height | uint32 |
 * | 28 | 4 | descriptor_kind | uint32: 0 unspecified, 1 SIFT RootSIFT (L1-root) uint8, 2 SIFT L2 uint8 |
 *
 * Then N keypoint records of 16 bytes at offset 32: `x, y, scale, orientation` (float32).
 * COLMAP's convention: the top-left pixel's centre is (0.5, 0.5), x right, y down; scale is
 * the Gaussian sigma in pixels; orientation in radians from +x towards +y.
 * Then N descriptors of D bytes each (uint8) at offset 32 + 16 N, in keypoint order; SIFT
 * descriptors use COLMAP's (UBC) bin order (engine-wasm/src/feature/SIFT.md section 6).
 * Total size: exactly 32 + N (16 + D) bytes.
 */

export const FEATURES_FORMAT = "svc.features.local.v1";
export const FEATURES_KIND = "features.local.v1";
export const FEATURES_MEDIA_TYPE = "application/x-sfm-features-v1";
export const FEATURES_MAGIC = new Uint8Array([0x53, 0x46, 0x4d, 0x46, 0x45, 0x41, 0x54, 0x00]); // "SFMFEAT\0"
export const FEATURES_VERSION = 1;
export const FEATURES_HEADER_BYTES = 32;
export const KEYPOINT_BYTES = 16;

export const DescriptorKind = { unspecified: 0, siftL1Root: 1, siftL2: 2 } as const;
export type DescriptorKind = (typeof DescriptorKind)[keyof typeof DescriptorKind];

export interface LocalFeatures {
  imageWidth: number;
  imageHeight: number;
  descriptorDim: number;
  descriptorKind: DescriptorKind;
  /** x, y, scale, orientation per keypoint. */
  keypoints: Float32Array;
  /** descriptorDim bytes per keypoint. */
  descriptors: Uint8Array;
}

export class WireFormatError extends Error {
  override name = "WireFormatError";
}

function isUint32(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= 0xffffffff;
}

function checkFeatures(f: LocalFeatures): number {
  if (f.keypoints.length % 4 !== 0) throw new WireFormatError("keypoints must hold 4 floats per keypoint");
  const count = f.keypoints.length / 4;
  for (const [name, value] of [
    ["imageWidth", f.imageWidth],
    ["imageHeight", f.imageHeight],
    ["descriptorDim", f.descriptorDim],
  ] as const) {
    if (!isUint32(value)) throw new WireFormatError(`${name} must be a uint32, got ${value}`);
  }
  if (![0, 1, 2].includes(f.descriptorKind)) throw new WireFormatError(`unknown descriptorKind ${f.descriptorKind}`);
  if (f.descriptors.length !== count * f.descriptorDim) {
    throw new WireFormatError(`${f.descriptors.length} descriptor bytes for ${count} keypoints of dim ${f.descriptorDim}`);
  }
  return count;
}

/** Serialises features into the `svc.features.local.v1` layout. */
export function encodeFeatures(f: LocalFeatures): Uint8Array {
  const count = checkFeatures(f);
  const descOffset = FEATURES_HEADER_BYTES + count * KEYPOINT_BYTES;
  const out = new Uint8Array(descOffset + f.descriptors.length);
  const view = new DataView(out.buffer);
  out.set(FEATURES_MAGIC, 0);
  view.setUint32(8, FEATURES_VERSION, true);
  view.setUint32(12, count, true);
  view.setUint32(16, f.descriptorDim, true);
  view.setUint32(20, f.imageWidth, true);
  view.setUint32(24, f.imageHeight, true);
  view.setUint32(28, f.descriptorKind, true);
  for (let i = 0; i < count * 4; i += 1) view.setFloat32(FEATURES_HEADER_BYTES + 4 * i, f.keypoints[i]!, true);
  out.set(f.descriptors, descOffset);
  return out;
}

interface FeaturesHeader {
  count: number;
  descriptorDim: number;
  imageWidth: number;
  imageHeight: number;
  descriptorKind: DescriptorKind;
}

/** The header of a features file from its first 32 bytes (`head`), checked against the file's size (a ranged read's answer). */
export function readFeaturesHeader(bytes: Uint8Array, totalBytes: number): FeaturesHeader {
  if (bytes.length < FEATURES_HEADER_BYTES) throw new WireFormatError(`features: ${bytes.length} bytes, header needs 32`);
  for (let i = 0; i < 8; i += 1) {
    if (bytes[i] !== FEATURES_MAGIC[i]) throw new WireFormatError("features: bad magic (expected SFMFEAT\\0)");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== FEATURES_VERSION) throw new WireFormatError(`features: unsupported version ${version}`);
  const header = {
    count: view.getUint32(12, true),
    descriptorDim: view.getUint32(16, true),
    imageWidth: view.getUint32(20, true),
    imageHeight: view.getUint32(24, true),
    descriptorKind: view.getUint32(28, true) as DescriptorKind,
  };
  if (![0, 1, 2].includes(header.descriptorKind)) {
    throw new WireFormatError(`features: unknown descriptor_kind ${header.descriptorKind}`);
  }
  const expected = FEATURES_HEADER_BYTES + header.count * (KEYPOINT_BYTES + header.descriptorDim);
  if (totalBytes !== expected) {
    throw new WireFormatError(`features: ${totalBytes} bytes, layout needs ${expected} for ${header.count} keypoints`);
  }
  return header;
}

/**
 * Checks the layout without copying: magic, version, known descriptor kind, exact size and
 * finite keypoint values. Returns the header, or throws WireFormatError.
 */
export function validateFeatures(bytes: Uint8Array): FeaturesHeader {
  const header = readFeaturesHeader(bytes, bytes.length);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < header.count * 4; i += 1) {
    if (!Number.isFinite(view.getFloat32(FEATURES_HEADER_BYTES + 4 * i, true))) {
      throw new WireFormatError(`features: keypoint ${i >> 2} has a non-finite value`);
    }
  }
  return header;
}

/** Parses (and validates) a `svc.features.local.v1` artifact; the arrays are copies. */
export function decodeFeatures(bytes: Uint8Array): LocalFeatures {
  const header = validateFeatures(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const keypoints = new Float32Array(header.count * 4);
  for (let i = 0; i < keypoints.length; i += 1) keypoints[i] = view.getFloat32(FEATURES_HEADER_BYTES + 4 * i, true);
  const descOffset = FEATURES_HEADER_BYTES + header.count * KEYPOINT_BYTES;
  return {
    imageWidth: header.imageWidth,
    imageHeight: header.imageHeight,
    descriptorDim: header.descriptorDim,
    descriptorKind: header.descriptorKind,
    keypoints,
    descriptors: bytes.slice(descOffset, descOffset + header.count * header.descriptorDim),
  };
}

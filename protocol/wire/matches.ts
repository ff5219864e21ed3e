/**
 * @module `svc.matches.indexed.v1`: the binary layout of a `matches.indexed.v1` artifact
 * (spec 2.11): for each image pair, the indices of matched keypoints into the two images'
 * `svc.features.local.v1` artifacts (before geometric verification).
 *
 * All integers little-endian. Header, 16 bytes:
 *
 * | Offset | Size | Field | Type |
 * |---|---|---|---|
 * | 0 | 8 | magic | ASCII `SFMMTCH` then one 0x00 byte |
 * | 8 | 4 | version | uint32 = 1 |
 * | 12 | 4 | num_pairs | uint32 |
 *
 * Then `num_pairs` records, each starting at a 4-byte-aligned offset:
 *
 * | Size | Field | Type |
 * |---|---|---|
 * | 4 | num_matches M | uint32 |
 * | 2 | name1_len | uint16, bytes of image_name1 |
 * | 2 | name2_len | uint16 |
 * | 2 | id1_len | uint16, bytes of image_id1 (0 when unknown) |
 * | 2 | id2_len | uint16 |
 * | name1_len + name2_len + id1_len + id2_len | image_name1, image_name2, image_id1, image_id2 | UTF-8, no terminator |
 * | 0-3 | padding | 0x00 up to a multiple of 4 |
 * | 8 M | matches | M x (uint32 index into image 1's keypoints, uint32 index into image 2's) |
 *
 * The file ends right after the last record (no trailing bytes).
 */

import { WireFormatError } from "./features";

export const MATCHES_FORMAT = "svc.matches.indexed.v1";
export const MATCHES_KIND = "matches.indexed.v1";
export const MATCHES_MEDIA_TYPE = "application/x-sfm-matches-v1";
export const MATCHES_MAGIC = new Uint8Array([0x53, 0x46, 0x4d, 0x4d, 0x54, 0x43, 0x48, 0x00]); // "SFMMTCH\0"
export const MATCHES_VERSION = 1;
export const MATCHES_HEADER_BYTES = 16;
const RECORD_HEADER_BYTES = 12;
const MAX_STRING_BYTES = 0xffff;

export interface PairMatches {
  imageName1: string;
  imageName2: string;
  /** Resource ids (spec 2.5); empty when not known. */
  imageId1?: string;
  imageId2?: string;
  /** i0 j0 i1 j1 ...: keypoint index in image 1, then in image 2. */
  matches: Uint32Array;
}

const align4 = (n: number): number => (n + 3) & ~3;

/** Serialises pairs into the `svc.matches.indexed.v1` layout. */
export function encodeMatches(pairs: readonly PairMatches[]): Uint8Array {
  const encoder = new TextEncoder();
  const encoded = pairs.map((p) => {
    if (p.matches.length % 2 !== 0) throw new WireFormatError("matches must hold index pairs");
    const strings = [p.imageName1, p.imageName2, p.imageId1 ?? "", p.imageId2 ?? ""].map((s) => encoder.encode(s));
    for (const s of strings) if (s.length > MAX_STRING_BYTES) throw new WireFormatError("image name or id longer than 65535 bytes");
    if (strings[0]!.length === 0 || strings[1]!.length === 0) throw new WireFormatError("image names must not be empty");
    const stringBytes = strings.reduce((n, s) => n + s.length, 0);
    return { p, strings, size: align4(RECORD_HEADER_BYTES + stringBytes) + 4 * p.matches.length };
  });
  const total = encoded.reduce((n, e) => n + e.size, MATCHES_HEADER_BYTES);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out.set(MATCHES_MAGIC, 0);
  view.setUint32(8, MATCHES_VERSION, true);
  view.setUint32(12, pairs.length, true);
  let at = MATCHES_HEADER_BYTES;
  for (const { p, strings, size } of encoded) {
    const start = at;
    view.setUint32(at, p.matches.length / 2, true);
    strings.forEach((s, k) => view.setUint16(at + 4 + 2 * k, s.length, true));
    at += RECORD_HEADER_BYTES;
    for (const s of strings) {
      out.set(s, at);
      at += s.length;
    }
    at = align4(at);
    for (let i = 0; i < p.matches.length; i += 1) view.setUint32(at + 4 * i, p.matches[i]!, true);
    at = start + size;
  }
  return out;
}

/** Parses a `svc.matches.indexed.v1` artifact, checking every bound; throws WireFormatError. */
export function decodeMatches(bytes: Uint8Array): PairMatches[] {
  if (bytes.length < MATCHES_HEADER_BYTES) throw new WireFormatError(`matches: ${bytes.length} bytes, header needs 16`);
  for (let i = 0; i < 8; i += 1) {
    if (bytes[i] !== MATCHES_MAGIC[i]) throw new WireFormatError("matches: bad magic (expected SFMMTCH\\0)");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  if (version !== MATCHES_VERSION) throw new WireFormatError(`matches: unsupported version ${version}`);
  const numPairs = view.getUint32(12, true);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const pairs: PairMatches[] = [];
  let at = MATCHES_HEADER_BYTES;
  for (let k = 0; k < numPairs; k += 1) {
    if (at + RECORD_HEADER_BYTES > bytes.length) throw new WireFormatError(`matches: pair ${k} truncated`);
    const count = view.getUint32(at, true);
    const lengths = [0, 1, 2, 3].map((i) => view.getUint16(at + 4 + 2 * i, true));
    let s = at + RECORD_HEADER_BYTES;
    const strings: string[] = [];
    for (const len of lengths) {
      if (s + len > bytes.length) throw new WireFormatError(`matches: pair ${k} names truncated`);
      try {
        strings.push(decoder.decode(bytes.subarray(s, s + len)));
      } catch {
        throw new WireFormatError(`matches: pair ${k} has invalid UTF-8`);
      }
      s += len;
    }
    if (lengths[0] === 0 || lengths[1] === 0) throw new WireFormatError(`matches: pair ${k} has an empty image name`);
    const dataAt = align4(s);
    const end = dataAt + 8 * count;
    if (end > bytes.length) throw new WireFormatError(`matches: pair ${k} declares ${count} matches beyond the end`);
    const matches = new Uint32Array(2 * count);
    for (let i = 0; i < matches.length; i += 1) matches[i] = view.getUint32(dataAt + 4 * i, true);
    pairs.push({
      imageName1: strings[0]!,
      imageName2: strings[1]!,
      ...(lengths[2] ? { imageId1: strings[2]! } : {}),
      ...(lengths[3] ? { imageId2: strings[3]! } : {}),
      matches,
    });
    at = end;
  }
  if (at !== bytes.length) throw new WireFormatError(`matches: ${bytes.length - at} trailing bytes`);
  return pairs;
}

/** Validates the layout; with keypoint counts per image name, also every index bound. */
export function validateMatches(bytes: Uint8Array, keypointCounts?: ReadonlyMap<string, number>): number {
  const pairs = decodeMatches(bytes);
  if (keypointCounts) {
    for (const p of pairs) {
      const n1 = keypointCounts.get(p.imageName1);
      const n2 = keypointCounts.get(p.imageName2);
      if (n1 === undefined || n2 === undefined) throw new WireFormatError(`matches: unknown image in pair ${p.imageName1} ${p.imageName2}`);
      for (let i = 0; i < p.matches.length; i += 2) {
        if (p.matches[i]! >= n1 || p.matches[i + 1]! >= n2) {
          throw new WireFormatError(`matches: index out of range in pair ${p.imageName1} ${p.imageName2}`);
        }
      }
    }
  }
  return pairs.length;
}

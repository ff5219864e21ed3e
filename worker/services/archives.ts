/**
 * @module The files of an uploaded archive (a tar or a zip blob in R2), read in place: the index
 * from the archive's headers (tar) or central directory (zip), and each file's bytes by a range
 * read when asked, so an archive of any size is read one file at a time (a Worker holds no files
 * and little memory). Regular files only. Compressed tars (.tar.gz) cannot be read in place and
 * are refused, as are zip64, encrypted entries and compression methods other than stored and deflate.
 */
import { isTarEnd, paxPathOf, parseTarHeader, tarPaddingLength } from "../../protocol/wire/tar";

/** A malformed or unsupported archive; the message says what is wrong with it. */
export class ArchiveError extends Error {}

export interface ArchiveEntry {
  path: string;
  size: number;
  read(): Promise<Uint8Array>;
}

export interface Archive {
  format: "tar" | "zip";
  files: Map<string, ArchiveEntry>;
}

const TAR_BLOCK = 512;
const ZIP_LOCAL = 0x04034b50;
const ZIP_CENTRAL = 0x02014b50;
const ZIP_END = 0x06054b50;
/** The end-of-central-directory record: 22 bytes and a comment of at most 65535. */
const ZIP_END_MAX = 22 + 0xffff;

async function readRange(bucket: R2Bucket, key: string, offset: number, length: number): Promise<Uint8Array> {
  if (length === 0) return new Uint8Array(0);
  const object = await bucket.get(key, { range: { offset, length } });
  if (!object) throw new ArchiveError("the archive's bytes are gone");
  const bytes = new Uint8Array(await object.arrayBuffer());
  if (bytes.length !== length) throw new ArchiveError(`the archive is truncated (wanted ${length} bytes at ${offset})`);
  return bytes;
}

/** The archive stored at `key` (`size` bytes); ArchiveError when it is neither a tar nor a zip we can read. */
export async function openArchive(bucket: R2Bucket, key: string, size: number): Promise<Archive> {
  const head = await readRange(bucket, key, 0, Math.min(size, TAR_BLOCK));
  const magic = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (head.length >= 4 && (magic.getUint32(0, true) === ZIP_LOCAL || magic.getUint32(0, true) === ZIP_END))
    return { format: "zip", files: await zipIndex(bucket, key, size) };
  if (head.length === TAR_BLOCK && new TextDecoder().decode(head.subarray(257, 262)) === "ustar")
    return { format: "tar", files: await tarIndex(bucket, key, size) };
  if (head[0] === 0x1f && head[1] === 0x8b)
    throw new ArchiveError(
      "the archive is gzip-compressed (a .tar.gz), which cannot be read in place: upload the uncompressed tar, or a zip",
    );
  throw new ArchiveError("the blob is neither a tar (ustar) nor a zip archive");
}

async function tarIndex(bucket: R2Bucket, key: string, size: number): Promise<Map<string, ArchiveEntry>> {
  const files = new Map<string, ArchiveEntry>();
  let paxPath: string | null = null;
  let at = 0;
  for (; at + TAR_BLOCK <= size;) {
    const h = await readRange(bucket, key, at, TAR_BLOCK);
    if (isTarEnd(h)) return files;
    let header;
    try {
      header = parseTarHeader(h, at, paxPath);
    } catch (err) {
      throw new ArchiveError((err as Error).message);
    }
    const dataAt = at + TAR_BLOCK;
    if (dataAt + header.size > size) throw new ArchiveError(`tar: the archive is truncated in '${header.path}'`);
    if (header.type === "x") {
      paxPath = paxPathOf(await readRange(bucket, key, dataAt, header.size));
    } else {
      if (header.type === "0" || header.type === "\0") {
        const length = header.size;
        files.set(header.path, { path: header.path, size: length, read: () => readRange(bucket, key, dataAt, length) });
      }
      paxPath = null;
    }
    at = dataAt + header.size + tarPaddingLength(header.size);
  }
  // No end-of-archive blocks: complete only when the last entry ends the bytes.
  if (at < size) throw new ArchiveError("tar: the archive is truncated");
  return files;
}

async function inflate(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function zipIndex(bucket: R2Bucket, key: string, size: number): Promise<Map<string, ArchiveEntry>> {
  const tailAt = Math.max(0, size - ZIP_END_MAX);
  const tail = await readRange(bucket, key, tailAt, size - tailAt);
  const tv = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  let end = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tv.getUint32(i, true) === ZIP_END) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new ArchiveError("zip: no end of central directory record (a truncated archive?)");
  const count = tv.getUint16(end + 10, true);
  const cdSize = tv.getUint32(end + 12, true);
  const cdAt = tv.getUint32(end + 16, true);
  if (count === 0xffff || cdSize === 0xffffffff || cdAt === 0xffffffff) throw new ArchiveError("zip: zip64 archives are not supported");
  if (cdAt + cdSize > size) throw new ArchiveError("zip: the central directory lies outside the archive");
  const cd = await readRange(bucket, key, cdAt, cdSize);
  const v = new DataView(cd.buffer, cd.byteOffset, cd.byteLength);
  const decoder = new TextDecoder();
  const files = new Map<string, ArchiveEntry>();
  let at = 0;
  for (let n = 0; n < count; n++) {
    if (at + 46 > cd.length || v.getUint32(at, true) !== ZIP_CENTRAL)
      throw new ArchiveError(`zip: central directory entry ${n} is malformed`);
    const flags = v.getUint16(at + 8, true);
    const method = v.getUint16(at + 10, true);
    const packed = v.getUint32(at + 20, true);
    const unpacked = v.getUint32(at + 24, true);
    const nameLength = v.getUint16(at + 28, true);
    const extraLength = v.getUint16(at + 30, true);
    const commentLength = v.getUint16(at + 32, true);
    const localAt = v.getUint32(at + 42, true);
    const path = decoder.decode(cd.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + commentLength;
    if (path.endsWith("/")) continue;
    if (flags & 1) throw new ArchiveError(`zip: '${path}' is encrypted`);
    if (method !== 0 && method !== 8)
      throw new ArchiveError(`zip: '${path}' uses compression method ${method} (only stored and deflate are read)`);
    if (packed === 0xffffffff || unpacked === 0xffffffff || localAt === 0xffffffff)
      throw new ArchiveError("zip: zip64 archives are not supported");
    const read = async () => {
      const local = await readRange(bucket, key, localAt, 30);
      const lv = new DataView(local.buffer, local.byteOffset, local.byteLength);
      if (lv.getUint32(0, true) !== ZIP_LOCAL) throw new ArchiveError(`zip: the local header of '${path}' is missing`);
      const dataAt = localAt + 30 + lv.getUint16(26, true) + lv.getUint16(28, true);
      if (dataAt + packed > size) throw new ArchiveError(`zip: the archive is truncated in '${path}'`);
      const data = await readRange(bucket, key, dataAt, packed);
      const bytes = method === 8 ? await inflate(data).catch(() => null) : data;
      if (!bytes || bytes.length !== unpacked) throw new ArchiveError(`zip: '${path}' does not inflate to its recorded size`);
      return bytes;
    };
    files.set(path, { path, size: unpacked, read });
  }
  return files;
}

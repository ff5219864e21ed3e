/**
 * @module POSIX tar archives (pax interchange format, IEEE Std 1003.1-2001 `pax`): how a
 * multi-file artifact is downloaded as one file (`/v1/artifacts/{id}/content`), and how an
 * export packs per-image files that would not fit an artifact's file list (kapture reads
 * `keypoints.tar`). Regular files only, mode 0644, mtime 0, so the same files always give the
 * same bytes. A path longer than ustar's fields is carried by a pax `path` record.
 *
 * An archive is, per file, `tarEntryHeader(path, size)`, the file's bytes and
 * `tarPaddingLength(size)` zero bytes; then `TAR_END_BYTES` zero bytes.
 */

const BLOCK = 512;
const encoder = new TextEncoder();

/** The two zero blocks that end an archive. */
export const TAR_END_BYTES = 2 * BLOCK;

/** Zero bytes after a file's data, up to the next 512-byte block. */
export const tarPaddingLength = (size: number) => (BLOCK - (size % BLOCK)) % BLOCK;

function octal(field: Uint8Array, at: number, width: number, value: number): void {
  const digits = value.toString(8).padStart(width - 1, "0");
  if (digits.length > width - 1) throw new RangeError(`tar: ${value} does not fit ${width - 1} octal digits`);
  field.set(encoder.encode(digits), at);
}

/** One ustar header block; `name`/`prefix` are already split to fit. */
function ustarHeader(name: Uint8Array, prefix: Uint8Array, size: number, type: "0" | "x"): Uint8Array {
  const h = new Uint8Array(BLOCK);
  h.set(name, 0);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, 0);
  h.fill(0x20, 148, 156); // the checksum counts its own field as spaces
  h[156] = type.charCodeAt(0);
  h.set(encoder.encode("ustar\u000000"), 257);
  h.set(prefix, 345);
  const sum = h.reduce((s, b) => s + b, 0);
  octal(h, 148, 7, sum);
  h[155] = 0x20;
  return h;
}

/** `path` split as ustar stores it (prefix up to 155 bytes, a '/', name up to 100), or null when it cannot be. */
function splitUstar(path: Uint8Array): { name: Uint8Array; prefix: Uint8Array } | null {
  if (path.length <= 100) return { name: path, prefix: new Uint8Array(0) };
  for (let i = Math.min(155, path.length - 2); i > 0; i--) {
    if (path[i] === 0x2f && path.length - i - 1 <= 100) return { prefix: path.subarray(0, i), name: path.subarray(i + 1) };
  }
  return null;
}

/** A pax record `"<len> path=<value>\n"`, whose decimal length counts itself. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = encoder.encode(` ${key}=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return encoder.encode(`${len} ${key}=${value}\n`);
}

/** The header of one regular file: one block, or a pax header, its record and the ustar block for a long path. */
export function tarEntryHeader(path: string, size: number): Uint8Array {
  const bytes = encoder.encode(path);
  const split = splitUstar(bytes);
  if (split) return ustarHeader(split.name, split.prefix, size, "0");
  const record = paxRecord("path", path);
  const out = new Uint8Array(2 * BLOCK + record.length + tarPaddingLength(record.length));
  out.set(ustarHeader(encoder.encode("PaxHeaders/entry"), new Uint8Array(0), record.length, "x"), 0);
  out.set(record, BLOCK);
  out.set(ustarHeader(bytes.subarray(0, 100), new Uint8Array(0), size, "0"), out.length - BLOCK);
  return out;
}

/** A whole archive in memory, files in the given order. */
export function tarArchive(files: Iterable<readonly [string, Uint8Array]>): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [path, data] of files) parts.push(tarEntryHeader(path, data.length), data, new Uint8Array(tarPaddingLength(data.length)));
  parts.push(new Uint8Array(TAR_END_BYTES));
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const decoder = new TextDecoder();
const field = (h: Uint8Array, at: number, width: number) => decoder.decode(h.subarray(at, at + width)).replace(/\0.*$/s, "");

/** One header block as read: its entry type, the data's size and its path (`paxPath` overrides the ustar fields). */
export function parseTarHeader(h: Uint8Array, at: number, paxPath: string | null): { type: string; size: number; path: string } {
  const sum = h.reduce((s, b, i) => s + (i >= 148 && i < 156 ? 0x20 : b), 0);
  if (parseInt(field(h, 148, 8).trim(), 8) !== sum) throw new Error(`tar: bad header checksum at byte ${at}`);
  const size = parseInt(field(h, 124, 12).trim() || "0", 8);
  const prefix = field(h, 345, 155);
  const path = paxPath ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
  return { type: String.fromCharCode(h[156]!), size, path };
}

/** The `path` record of a pax extended header's data, or null. */
export const paxPathOf = (data: Uint8Array) => /(?:^|\n)\d+ path=([^\n]*)\n/.exec(decoder.decode(data))?.[1] ?? null;

/** Whether a header block is one of the zero blocks that end an archive. */
export const isTarEnd = (h: Uint8Array) => h.every((b) => b === 0);

/** The regular files of an archive, by path (ustar prefixes and pax `path` records honoured); throws on a malformed archive. */
export function readTar(archive: Uint8Array): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  let paxPath: string | null = null;
  for (let at = 0; at + BLOCK <= archive.length;) {
    const h = archive.subarray(at, at + BLOCK);
    if (isTarEnd(h)) break;
    const { type, size, path } = parseTarHeader(h, at, paxPath);
    const data = archive.subarray(at + BLOCK, at + BLOCK + size);
    if (data.length !== size) throw new Error("tar: truncated archive");
    if (type === "x") {
      paxPath = paxPathOf(data);
    } else {
      if (type === "0" || type === "\0") files.set(path, data);
      paxPath = null;
    }
    at += BLOCK + size + tarPaddingLength(size);
  }
  return files;
}

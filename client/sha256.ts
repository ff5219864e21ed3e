/**
 * @module SHA-256 in lower-case hex (spec 2.0), of bytes in memory (WebCrypto) or of a file read
 * in slices (incremental, @noble/hashes: WebCrypto's digest needs the whole file in memory at
 * once, which a phone may not have for large photos).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

const SLICE_BYTES = 4 * 1024 * 1024;

/** `onProgress` gets the bytes hashed so far (a Blob is hashed slice by slice). */
export async function sha256Hex(data: Uint8Array | Blob, onProgress?: (done: number) => void): Promise<string> {
  if (data instanceof Uint8Array) {
    const digest = bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource)));
    onProgress?.(data.byteLength);
    return digest;
  }
  const h = sha256.create();
  for (let at = 0; at < data.size; at += SLICE_BYTES) {
    h.update(new Uint8Array(await data.slice(at, at + SLICE_BYTES).arrayBuffer()));
    onProgress?.(Math.min(data.size, at + SLICE_BYTES));
  }
  return bytesToHex(h.digest());
}

/**
 * @module SHA-256 of a file in a Web Worker (exposed with comlink), so hashing a folder of
 * photos never blocks the page. Incremental (@noble/hashes): WebCrypto's digest needs the whole
 * file in memory at once, which a phone may not have for large photos.
 */
import { expose } from "comlink";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

const SLICE_BYTES = 4 * 1024 * 1024;

const hasher = {
  /** Lower-case hex SHA-256 of the file; `onProgress` gets the bytes hashed so far. */
  async sha256Hex(file: Blob, onProgress?: (done: number) => void): Promise<string> {
    const h = sha256.create();
    for (let at = 0; at < file.size; at += SLICE_BYTES) {
      h.update(new Uint8Array(await file.slice(at, at + SLICE_BYTES).arrayBuffer()));
      onProgress?.(Math.min(file.size, at + SLICE_BYTES));
    }
    return bytesToHex(h.digest());
  },
};
export type Hasher = typeof hasher;

expose(hasher);

/**
 * @module SHA-256 of a file in a Web Worker (exposed with comlink), so hashing a folder of
 * photos never blocks the page: the client's incremental hash (client/sha256.ts), which reads
 * the file in slices (a phone may not hold a large photo in memory at once).
 */
import { expose } from "comlink";
import { sha256Hex } from "../../../client/index";

const hasher = {
  /** Lower-case hex SHA-256 of the file; `onProgress` gets the bytes hashed so far. */
  sha256Hex: (file: Blob, onProgress?: (done: number) => void): Promise<string> => sha256Hex(file, onProgress),
};
export type Hasher = typeof hasher;

expose(hasher);

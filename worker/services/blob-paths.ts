/** @module The uploaded file a `blob:<sha256>` path names (4.2 `video_path`, `archive_path`): the tenant's stored blob, or 422. */
import { blobPathSha } from "../../protocol";
import { validation } from "../errors";
import { tenantStore } from "./stores";

export async function blobAtPath(env: Env, tenantId: string, path: string, field: string) {
  const sha = blobPathSha(path);
  const blob = await tenantStore(env, tenantId).getBlob(sha);
  if (!blob)
    throw validation(`${field} names no finalized upload of this tenant`, [
      { path: field, message: `no blob with sha ${sha}: upload the file first (4.3)`, code: "unknown_blob" },
    ]);
  return blob;
}

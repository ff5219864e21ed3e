/**
 * @module `svc.matches.verified.v1`: the format of a `matches.verified.v1` artifact (spec 2.11):
 * the verification's `two_view_geometries.json` (2.14: per pair its type, inlier matches and
 * the matrix of that type) plus `x-images`, the table from the file's integer image ids to the
 * dataset's image names and resource ids. Image ids are 1-based positions in the dataset as the
 * job saw it (its DatasetSnapshot order), the same ids the snapshot's images.json uses.
 */
import { z } from "zod";
import { TwoViewGeometriesFile } from "../schemas/snapshot";

export const VERIFIED_MATCHES_KIND = "matches.verified.v1";
export const VERIFIED_MATCHES_FORMAT = "svc.matches.verified.v1";
export const VERIFIED_MATCHES_MEDIA_TYPE = "application/json";

export const VerifiedMatchesFile = TwoViewGeometriesFile.extend({
  "x-images": z.array(z.object({ image_id: z.number().int().positive(), name: z.string(), resource_id: z.string() })),
});
export type VerifiedMatchesFile = z.infer<typeof VerifiedMatchesFile>;

/** The snapshot/verification image id of the dataset image at `index` (0-based). */
export const imageIdAt = (index: number) => index + 1;

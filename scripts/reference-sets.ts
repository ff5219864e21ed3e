/**
 * @module The shared photo sets (`../shared/datasets/<set>/`) through the incremental recipe over
 * HTTP, and the sealed result compared with the set's COLMAP 3.8 reference (issue 5's bars).
 * Shared by the benchmarks and the end-to-end suites; whoever computes (a Node runner, a headless
 * browser) is the caller's choice.
 */
import { existsSync, readFileSync } from "node:fs";
import type { EdgeSfmClient } from "../client/index";
import {
  type AccuracyReport,
  type ImagePose,
  barFailures,
  compareToReference,
  parseColmapResultsTsv,
  referencePoses,
} from "../engine-wasm/ts/accuracy";
import { parseImagesText, readColmapTextModel } from "../engine-wasm/ts/colmap-text";
import { decodePointsHeader } from "../protocol/wire/points";
import { type SubmitOptions, type Submitted, lastSnapshot, submitFolder } from "./photo-folder";

export const datasetDir = (set: string) => new URL(`../../shared/datasets/${set}/`, import.meta.url);

/**
 * COLMAP 3.8's figures on the set: beside the reference, or (gum, whose reference is the dataset
 * authors' poses) beside COLMAP's own model in `reference/colmap-3.8/`.
 */
export function colmapResultsFile(set: string): URL {
  const candidates = ["reference/colmap-3.8-results.tsv", "reference/colmap-3.8/colmap-3.8-results.tsv"].map(
    (f) => new URL(f, datasetDir(set)),
  );
  return candidates.find((f) => existsSync(f)) ?? candidates[0]!;
}

/** The reference's camera setup: one shared camera, except sacre-coeur (one per photo). */
export const INTRINSICS: Record<string, "single_camera" | "per_image"> = { "sacre-coeur": "per_image" };

/** Uploads the set, creates its dataset and submits a pipeline (`mapper`: its recipe, incremental by default; `spec`: fields beside its kind; `pairs`: its PairsSpec). */
export function submitSet(
  client: EdgeSfmClient,
  set: string,
  spec: Record<string, unknown> = {},
  pairs?: SubmitOptions["pairs"],
  mapper?: SubmitOptions["mapper"],
): Promise<Submitted> {
  return submitFolder(client, new URL("images/", datasetDir(set)).pathname, {
    name: set,
    camera_model: "SIMPLE_RADIAL",
    intrinsics_mode: INTRINSICS[set] ?? "single_camera",
    spec,
    pairs,
    mapper,
  });
}

export interface SetResult {
  report: AccuracyReport;
  failures: string[];
  numPoints: number;
  meanReprojectionError: number;
  colmap: { points3D: number; mean_reproj_px: number; total_s: number };
}

/** Reads the reconstruction's last sealed snapshot and scores it against the reference. */
export async function scoreAgainstReference(client: EdgeSfmClient, set: string, reconId: string): Promise<SetResult> {
  const { images, summary, points } = await lastSnapshot(client, reconId);
  const ours: ImagePose[] = images.images.map((im) => {
    const q = im.cam_from_world.rotation;
    return { name: im.name, qvec: [q.w, q.x, q.y, q.z], tvec: im.cam_from_world.translation };
  });
  const dir = datasetDir(set);
  // Poses only: a reference of the dataset authors' poses (gum) has no points.
  const reference = await readColmapTextModel(new URL("reference/", dir).pathname, { points3D: false });
  const row = parseColmapResultsTsv(readFileSync(colmapResultsFile(set), "utf8"))[0]!;
  const colmap = { points3D: Number(row.points3D), mean_reproj_px: Number(row.mean_reproj_px), total_s: Number(row.total_s) };
  const report = compareToReference(ours, referencePoses(reference));
  return {
    report,
    failures: barFailures(report, summary.mean_reproj_err, colmap.mean_reproj_px),
    numPoints: decodePointsHeader(points).count,
    meanReprojectionError: summary.mean_reproj_err,
    colmap,
  };
}

/** Unordered pairs of image names ("a b", sorted) of a COLMAP images.txt sharing at least `minShared` 3D points, with how many they share. */
export function coVisiblePairs(imagesTxt: string, minShared: number): Map<string, number> {
  const byPoint = new Map<number, string[]>();
  for (const im of parseImagesText(readFileSync(imagesTxt, "utf8")).values()) {
    for (const id of new Set(im.point3DIds)) if (id >= 0) (byPoint.get(id) ?? byPoint.set(id, []).get(id)!).push(im.name);
  }
  const shared = new Map<string, number>();
  for (const names of byPoint.values()) {
    for (let i = 0; i < names.length; i++)
      for (let j = i + 1; j < names.length; j++) {
        const key = [names[i], names[j]].sort().join(" ");
        shared.set(key, (shared.get(key) ?? 0) + 1);
      }
  }
  return new Map([...shared].filter(([, n]) => n >= minShared));
}

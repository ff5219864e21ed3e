/**
 * @module What the bytes of a sealed file (2.14) must be before a seal records them: JSON files
 * match their protocol schema; points files decode (header, 44 + 26 n bytes), hold ascending
 * point3d_ids (rule 1) and lie inside their header's bbox. Pure: also run in Node over the shared
 * COLMAP reference models.
 */
import type { z } from "zod";
import {
  CamerasFile,
  FramesFile,
  ImagesFile,
  PoseGraphFile,
  RigsFile,
  SummaryFile,
  TwoViewGeometriesFile,
  meanReprojectionError,
} from "../../protocol";
import { POINT_DESCRIPTORS_FILE, decodePointDescriptors } from "../../protocol/wire/point-descriptors";
import { decodePoints } from "../../protocol/wire/points";

/** The schema each JSON file must satisfy; correspondence_graph.json's inner shape is not specified (2.14), so any object. */
const JSON_SCHEMAS: Record<string, z.ZodType | null> = {
  "cameras.json": CamerasFile,
  "images.json": ImagesFile,
  "rigs.json": RigsFile,
  "frames.json": FramesFile,
  "pose_graph.json": PoseGraphFile,
  "summary.json": SummaryFile,
  "two_view_geometries.json": TwoViewGeometriesFile,
  "correspondence_graph.json": null,
};

/** Why these bytes cannot be the named file, or null when they can (JSON shape, or points header, size, order and bbox). */
export function fileProblem(name: string, bytes: Uint8Array): string | null {
  if (name === POINT_DESCRIPTORS_FILE) return descriptorsProblem(bytes);
  if (name.endsWith(".bin")) return pointsProblem(bytes);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return "not UTF-8 JSON";
  }
  const schema = JSON_SCHEMAS[name];
  if (schema === null || schema === undefined)
    return doc !== null && typeof doc === "object" && !Array.isArray(doc) ? null : "not a JSON object";
  const parsed = schema.safeParse(doc);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0]!;
  return `does not match the ${name} schema: ${issue.path.join(".") || "(root)"}: ${issue.message}`;
}

function descriptorsProblem(bytes: Uint8Array): string | null {
  try {
    decodePointDescriptors(bytes);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

function pointsProblem(bytes: Uint8Array): string | null {
  let cloud: ReturnType<typeof decodePoints>;
  try {
    cloud = decodePoints(bytes);
  } catch (err) {
    return (err as Error).message;
  }
  for (let i = 1; i < cloud.count; i++) {
    if (cloud.ids[i]! <= cloud.ids[i - 1]!) return `records are not in ascending point3d_id order at record ${i} (2.14 rule 1)`;
  }
  for (let i = 0; i < cloud.count; i++) {
    for (let k = 0; k < 3; k++) {
      const v = cloud.xyz[3 * i + k]!;
      if (!Number.isFinite(v)) return `point ${i} has a non-finite coordinate`;
      if (v < cloud.bboxMin[k]! || v > cloud.bboxMax[k]!) return `point ${i} lies outside the header's bbox`;
    }
  }
  return null;
}

/**
 * Why the files sealed together for one model contradict each other, or null: every image's
 * camera is in cameras.json, and every point3d_id images.json names (or x-point_descriptors.bin
 * describes) is in points.bin (when the model has both files of a pair). Exports and the observations sidecar rely on both. And the map
 * result is checked by its own observations: their mean reprojection error, recomputed, is not far
 * above the one summary.json states.
 */
export function modelProblem(files: ReadonlyMap<string, Uint8Array>): string | null {
  const json = (name: string) => {
    const bytes = files.get(name);
    return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null;
  };
  const images = json("images.json") as ImagesFile | null;
  if (!images) return null;
  const cameras = json("cameras.json") as CamerasFile | null;
  if (cameras) {
    const known = new Set(cameras.cameras.map((c) => c.camera_id));
    const orphan = images.images.find((i) => !known.has(i.camera_id));
    if (orphan) return `image ${orphan.image_id} names camera ${orphan.camera_id}, which cameras.json lacks`;
  }
  const points = files.get("points.bin");
  if (points) {
    const cloud = decodePoints(points);
    const ids = new Set(Array.from(cloud.ids, Number));
    for (const image of images.images) {
      const missing = image.points2D.find((p) => p.point3d_id !== null && !ids.has(p.point3d_id));
      if (missing) return `image ${image.image_id} observes point ${missing.point3d_id}, which points.bin lacks`;
    }
    const described = files.get(POINT_DESCRIPTORS_FILE);
    const stranger = described ? decodePointDescriptors(described).ids.find((id) => !ids.has(id)) : undefined;
    if (stranger !== undefined) return `${POINT_DESCRIPTORS_FILE} describes point ${stranger}, which points.bin lacks`;
    const summary = json("summary.json") as SummaryFile | null;
    const measured = cameras && summary ? meanReprojectionError({ images, cameras }, pointLookup(cloud)) : null;
    // Generous (twice the stated error plus a pixel): float32 positions move errors by 1e-4 px; a wrong model by many pixels.
    if (measured !== null && summary && !(measured <= 2 * summary.mean_reproj_err + REPROJECTION_SLACK_PX)) {
      return `the observations reproject with a mean error of ${measured.toFixed(3)} px; summary.json states ${summary.mean_reproj_err} px`;
    }
  }
  return null;
}

/** Pixels a recomputed mean reprojection error may exceed the stated one by (beside twice the stated). */
const REPROJECTION_SLACK_PX = 1;

/** A point's position in a decoded points.bin, by point3D_id. */
function pointLookup(cloud: ReturnType<typeof decodePoints>): (id: number) => [number, number, number] | undefined {
  const at = new Map<number, number>();
  cloud.ids.forEach((id, i) => at.set(Number(id), i));
  return (id) => {
    const i = at.get(id);
    return i === undefined ? undefined : [cloud.xyz[3 * i]!, cloud.xyz[3 * i + 1]!, cloud.xyz[3 * i + 2]!];
  };
}

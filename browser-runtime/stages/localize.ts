/**
 * @module Localizing one image against a sealed snapshot (spec 4.13 localize, 4.15 one-shot,
 * 2.13 LocalizationResult): the snapshot's 3D points get one descriptor each, the mean of the
 * SIFT descriptors of the keypoints that observe them (from images.json's tracks and the
 * features the mapper read), computed when the snapshot is sealed and kept beside it
 * (`x-point_descriptors.bin`, protocol/wire/point-descriptors.ts); the query's SIFT descriptors are matched to them (COLMAP's ratio,
 * distance and cross-check rules); the 2D-3D matches give the pose by P3P in LO-RANSAC with a
 * focal length scan when the query's camera has no EXIF focal length, refined on the inliers
 * (engine-wasm/ts/absolute-pose.ts).
 */
import { type AbsolutePoseOptions, estimateAbsolutePose } from "../../engine-wasm/ts/absolute-pose";
import type { CameraModelName } from "../../engine-wasm/ts/camera";
import type { Engine } from "../../engine-wasm/ts/engine";
import type { MatchOptions, SiftFeatures } from "../../engine-wasm/ts/feature";
import type { ImagesFile, LocalizationResult } from "../../protocol";
import { DescriptorKind, type LocalFeatures } from "../../protocol/wire/features";
import type { PointDescriptors } from "../../protocol/wire/point-descriptors";
import type { PointCloud } from "../../protocol/wire/points";
import type { InitialCamera } from "./cameras";

/** The snapshot's 3D points that some keypoint with features observes, each with its mean descriptor. */
export interface PointIndex {
  /** point3d_id per indexed point. */
  ids: number[];
  /** X Y Z per indexed point. */
  xyz: Float64Array;
  /** 128 bytes per indexed point. */
  descriptors: Uint8Array;
  /** How the descriptors were normalised (the query's must be alike to compare). */
  descriptorKind: DescriptorKind;
  /** Images whose features matched their images.json entry (keypoint counts agree). */
  numImages: number;
  /** Images skipped: no features, or features of other keypoints than the mapper's (only their count when read from a sealed file). */
  skippedImages: string[];
  numSkippedImages: number;
}

/**
 * The point index of a snapshot model: each point of points.bin that at least one keypoint of
 * images.json observes, with the mean of those keypoints' descriptors (rounded to bytes).
 * `featuresOf` answers an image's features by name, or null when there are none.
 */
export async function pointIndex(
  images: ImagesFile,
  points: Pick<PointCloud, "xyz" | "ids">,
  featuresOf: (name: string) => Promise<LocalFeatures | null>,
): Promise<PointIndex> {
  const row = new Map<number, number>();
  for (let i = 0; i < points.ids.length; i++) row.set(Number(points.ids[i]!), i);
  const sums = new Float32Array(128 * points.ids.length);
  const counts = new Uint32Array(points.ids.length);
  const skipped: string[] = [];
  let numImages = 0;
  let descriptorKind: DescriptorKind = DescriptorKind.siftL1Root;
  for (const image of images.images) {
    const f = await featuresOf(image.name);
    if (!f || f.descriptorDim !== 128 || f.keypoints.length / 4 !== image.points2D.length) {
      skipped.push(image.name);
      continue;
    }
    numImages++;
    if (f.descriptorKind !== DescriptorKind.unspecified) descriptorKind = f.descriptorKind;
    image.points2D.forEach((p, k) => {
      const r = p.point3d_id === null ? undefined : row.get(p.point3d_id);
      if (r === undefined) return;
      counts[r]!++;
      const sum = sums.subarray(128 * r, 128 * r + 128);
      const d = f.descriptors.subarray(128 * k, 128 * k + 128);
      for (let j = 0; j < 128; j++) sum[j]! += d[j]!;
    });
  }
  const kept = [...counts.keys()].filter((r) => counts[r]! > 0);
  const descriptors = new Uint8Array(128 * kept.length);
  const xyz = new Float64Array(3 * kept.length);
  kept.forEach((r, i) => {
    for (let j = 0; j < 128; j++) descriptors[128 * i + j] = Math.min(255, Math.round(sums[128 * r + j]! / counts[r]!));
    for (let j = 0; j < 3; j++) xyz[3 * i + j] = points.xyz[3 * r + j]!;
  });
  return {
    ids: kept.map((r) => Number(points.ids[r]!)),
    xyz,
    descriptors,
    descriptorKind,
    numImages,
    skippedImages: skipped,
    numSkippedImages: skipped.length,
  };
}

/** The point index as the snapshot's `x-point_descriptors.bin` keeps it (positions stay in points.bin). */
export const pointDescriptorsOf = (index: PointIndex): PointDescriptors => ({
  ids: index.ids,
  descriptorDim: 128,
  descriptorKind: index.descriptorKind,
  descriptors: index.descriptors,
  numImages: index.numImages,
  numImagesSkipped: index.numSkippedImages,
});

/** The point index of a snapshot from its sealed descriptors and its points.bin; a descriptor of a point points.bin lacks is an error. */
export function indexFromDescriptors(sealed: PointDescriptors, points: Pick<PointCloud, "xyz" | "ids">): PointIndex {
  if (sealed.descriptorDim !== 128)
    throw new Error(`the snapshot's point descriptors have ${sealed.descriptorDim} dimensions, not SIFT's 128`);
  const row = new Map<number, number>();
  for (let i = 0; i < points.ids.length; i++) row.set(Number(points.ids[i]!), i);
  const xyz = new Float64Array(3 * sealed.ids.length);
  sealed.ids.forEach((id, i) => {
    const r = row.get(id);
    if (r === undefined) throw new Error(`the snapshot's point descriptors name point ${id}, which its points.bin lacks`);
    for (let j = 0; j < 3; j++) xyz[3 * i + j] = points.xyz[3 * r + j]!;
  });
  return {
    ids: sealed.ids,
    xyz,
    descriptors: sealed.descriptors,
    descriptorKind: sealed.descriptorKind,
    numImages: sealed.numImages,
    skippedImages: [],
    numSkippedImages: sealed.numImagesSkipped,
  };
}

export interface LocalizeInput {
  query: SiftFeatures;
  camera: InitialCamera;
  index: PointIndex;
  /** Descriptor matching on the runner's faster path (gpu/select.ts). */
  match(descA: Uint8Array, descB: Uint8Array, options?: Partial<MatchOptions>): Promise<Uint32Array>;
  pose?: AbsolutePoseOptions;
  /** diagnostics.query_path and diagnostics.sparse_dir (2.13). */
  queryPath: string;
  sparseDir: string;
}

/** At least this many 2D-3D inliers make a localization (the binding's default). */
export const MIN_LOCALIZATION_INLIERS = 12;

const IDENTITY = { rotation: { w: 1, x: 0, y: 0, z: 0 }, translation: [0, 0, 0] as [number, number, number] };

/** Matches the query to the point index and estimates its pose; `success: false` says why in diagnostics.reason. */
export async function localize(engine: Engine, input: LocalizeInput): Promise<LocalizationResult> {
  const { query, camera, index } = input;
  const numKeypoints = query.keypoints.length / 4;
  const diagnostics: LocalizationResult["diagnostics"] = {
    query_path: input.queryPath,
    sparse_dir: input.sparseDir,
    num_keypoints: numKeypoints,
    num_points3D: index.ids.length,
    num_images_indexed: index.numImages,
    num_matches: 0,
    camera: {
      model: camera.model,
      width: camera.width,
      height: camera.height,
      params: camera.params,
      has_prior_focal_length: camera.hasPriorFocalLength,
    },
  };
  const fail = (reason: string): LocalizationResult => ({
    success: false,
    cam_from_world: IDENTITY,
    num_inliers: 0,
    inlier_matches: [],
    diagnostics: { ...diagnostics, reason },
  });
  if (index.ids.length === 0) return fail("the snapshot has no 3D point observed by a keypoint with features");
  if (numKeypoints === 0) return fail("no SIFT keypoint was found in the query image");
  const matches = await input.match(query.descriptors, index.descriptors);
  const n = matches.length / 2;
  diagnostics.num_matches = n;
  const minInliers = input.pose?.minNumInliers ?? MIN_LOCALIZATION_INLIERS;
  if (n < minInliers) return fail(`${n} descriptor matches between the query and the snapshot's points; at least ${minInliers} are needed`);
  const points2D = new Float64Array(2 * n);
  const points3D = new Float64Array(3 * n);
  for (let m = 0; m < n; m++) {
    const [k, p] = [matches[2 * m]!, matches[2 * m + 1]!];
    points2D[2 * m] = query.keypoints[4 * k]!;
    points2D[2 * m + 1] = query.keypoints[4 * k + 1]!;
    points3D.set(index.xyz.subarray(3 * p, 3 * p + 3), 3 * m);
  }
  const pose = estimateAbsolutePose(engine, {
    points2D,
    points3D,
    camera: {
      model: camera.model as CameraModelName,
      width: camera.width,
      height: camera.height,
      params: camera.params,
      hasPriorFocalLength: camera.hasPriorFocalLength,
    },
    options: { minNumInliers: minInliers, ...input.pose },
  });
  Object.assign(diagnostics, {
    ransac_inliers: pose.ransac_inliers,
    ransac_trials: pose.ransac_trials,
    mean_reproj_error: pose.mean_reproj_error,
    camera: { ...(diagnostics.camera as object), params: pose.params },
  });
  if (!pose.success)
    return fail(`no pose with at least ${minInliers} inliers among ${n} 2D-3D matches (RANSAC found ${pose.ransac_inliers})`);
  const inlierMatches: [number, number][] = [];
  for (let m = 0; m < n; m++) if (pose.inlier_mask[m]) inlierMatches.push([matches[2 * m]!, index.ids[matches[2 * m + 1]!]!]);
  return { success: true, cam_from_world: pose.cam_from_world, num_inliers: pose.num_inliers, inlier_matches: inlierMatches, diagnostics };
}

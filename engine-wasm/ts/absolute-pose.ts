/**
 * @module Absolute pose from 2D-3D correspondences (spec 4.13 localize, 4.15 one-shot) through
 * the wasm engine: src/bindings/absolute_pose.cc over sfm/registration_geometry.h (P3P in
 * LO-RANSAC with EPnP, a focal length scan for a camera without a prior focal length, then
 * refinement with a Cauchy loss), as the incremental mapper registers an image.
 */
import { validateCamera, type CameraSpec } from "./camera";
import type { Engine } from "./engine";
import type { Rigid3 } from "./two-view";

export interface AbsolutePoseOptions {
  /** RANSAC inlier threshold, pixels. Default 12 (COLMAP's abs_pose_max_error). */
  maxError?: number;
  minInlierRatio?: number;
  minNumTrials?: number;
  maxNumTrials?: number;
  confidence?: number;
  /** Same seed, same result. Default 0. */
  seed?: number;
  /** Fewer inliers than this is no pose. Default 12. */
  minNumInliers?: number;
  /** Refine the focal length with the pose. Default true. */
  refineFocalLength?: boolean;
  /** Refine the distortion parameters with the pose. Default true. */
  refineExtraParams?: boolean;
}

/** The options array's order: must match OptionIndex in src/bindings/absolute_pose.cc. */
const OPTION_DEFAULTS: ReadonlyArray<[keyof AbsolutePoseOptions, number | boolean]> = [
  ["maxError", 12],
  ["minInlierRatio", 0.25],
  ["minNumTrials", 100],
  ["maxNumTrials", 10000],
  ["confidence", 0.99999],
  ["seed", 0],
  ["minNumInliers", 12],
  ["refineFocalLength", true],
  ["refineExtraParams", true],
];

export interface AbsolutePoseInput {
  /** x y per correspondence, pixels (COLMAP convention). */
  points2D: ArrayLike<number>;
  /** X Y Z per correspondence, world frame. */
  points3D: ArrayLike<number>;
  /** The query's camera; its focal length is a prior when `hasPriorFocalLength`, else scanned from 0.2x to 5x. */
  camera: CameraSpec & { hasPriorFocalLength: boolean };
  options?: AbsolutePoseOptions;
}

export interface AbsolutePoseResult {
  success: boolean;
  cam_from_world: Rigid3;
  /** The camera's parameters after the scan and refinement. */
  params: number[];
  num_inliers: number;
  /** 1 per correspondence the refined pose reprojects within maxError. */
  inlier_mask: Int32Array;
  /** Inliers of the RANSAC model before refinement and its trials. */
  ransac_inliers: number;
  ransac_trials: number;
  /** Mean reprojection error of the inliers, pixels. */
  mean_reproj_error: number;
}

export function estimateAbsolutePose(engine: Engine, input: AbsolutePoseInput): AbsolutePoseResult {
  const n = input.points2D.length / 2;
  if (!Number.isInteger(n) || input.points3D.length !== 3 * n)
    throw new Error("estimateAbsolutePose: need x y per 2D point and X Y Z per 3D point, as many of each");
  const modelId = validateCamera(engine, input.camera);
  const options = OPTION_DEFAULTS.map(([name, fallback]) => Number(input.options?.[name] ?? fallback));
  const { camera } = input;
  return engine.withHeap((heap) => {
    const handle = engine.call(
      "edgesfm_absolute_pose",
      heap.f64(input.points2D),
      heap.f64(input.points3D),
      n,
      modelId,
      heap.f64(camera.params),
      camera.params.length,
      camera.width,
      camera.height,
      camera.hasPriorFocalLength ? 1 : 0,
      heap.f64(options),
      options.length,
    );
    try {
      const pose = engine.readF64(engine.call("edgesfm_absolute_pose_result_pose", handle), 7);
      const stats = engine.readF64(engine.call("edgesfm_absolute_pose_result_stats", handle), 3);
      return {
        success: engine.call("edgesfm_absolute_pose_result_success", handle) === 1,
        cam_from_world: { rotation: { w: pose[0]!, x: pose[1]!, y: pose[2]!, z: pose[3]! }, translation: [pose[4]!, pose[5]!, pose[6]!] },
        params: Array.from(engine.readF64(engine.call("edgesfm_absolute_pose_result_params", handle), camera.params.length)),
        num_inliers: engine.call("edgesfm_absolute_pose_result_num_inliers", handle),
        inlier_mask: n > 0 ? engine.readI32(engine.call("edgesfm_absolute_pose_result_inlier_mask", handle), n) : new Int32Array(0),
        ransac_inliers: stats[0]!,
        ransac_trials: stats[1]!,
        mean_reproj_error: stats[2]!,
      };
    } finally {
      engine.call("edgesfm_absolute_pose_result_free", handle);
    }
  });
}

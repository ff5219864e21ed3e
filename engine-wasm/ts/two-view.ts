/**
 * @module Two-view verification (spec 4.6 `verify`, 2.14 two_view_geometries.json) through
 * the wasm engine: src/bindings/two_view.cc over src/estimators/two_view_geometry.h.
 */
import { validateCamera, type CameraModelName } from "./camera";
import type { Engine } from "./engine";
import { TWO_VIEW_TYPES, type TwoViewType } from "../../protocol/schemas/snapshot";

/** A camera with known intrinsics (COLMAP layout), or only its size (`model: null`). */
export type TwoViewCamera =
  { model: CameraModelName; width: number; height: number; params: ArrayLike<number> } | { model: null; width: number; height: number };

export interface TwoViewOptions {
  /** RANSAC inlier threshold in pixels (turned into an angle for E). Default 4. */
  maxError?: number;
  /** VerifySpec.min_inlier_ratio. Default 0.25. */
  minInlierRatio?: number;
  confidence?: number;
  minNumTrials?: number;
  maxNumTrials?: number;
  /** RANSAC seed (spec `seed`): same seed, same result. Default 0. */
  seed?: number;
  minNumInliers?: number;
  multipleModels?: boolean;
  maxNumModels?: number;
  detectWatermark?: boolean;
  computeRelativePose?: boolean;
}

/** The options array's order: must match OptionIndex in src/bindings/two_view.cc. */
const TWO_VIEW_OPTION_DEFAULTS: ReadonlyArray<[keyof TwoViewOptions, number | boolean]> = [
  ["maxError", 4],
  ["minInlierRatio", 0.25],
  ["confidence", 0.999],
  ["minNumTrials", 100],
  ["maxNumTrials", 10000],
  ["seed", 0],
  ["minNumInliers", 15],
  ["multipleModels", false],
  ["maxNumModels", 5],
  ["detectWatermark", true],
  ["computeRelativePose", true],
];

export interface TwoViewInput {
  /** Keypoints of image 1, interleaved x0 y0 x1 y1 ... in pixels (COLMAP convention). */
  keypoints1: ArrayLike<number>;
  keypoints2: ArrayLike<number>;
  camera1: TwoViewCamera;
  camera2: TwoViewCamera;
  /** Raw matches: interleaved keypoint indices i0 j0 i1 j1 ..., or pairs. */
  matches: ArrayLike<number> | ReadonlyArray<readonly [number, number]>;
  options?: TwoViewOptions;
}

export interface Rigid3 {
  rotation: { w: number; x: number; y: number; z: number };
  translation: [number, number, number];
}

export interface TwoViewResult {
  type: TwoViewType;
  num_inliers: number;
  /** Inlier matches as [idx1, idx2] (spec 2.14). */
  inlier_matches: Array<[number, number]>;
  /** Spec 2.14: only the matrix matching `type` is set (row-major, 9 numbers). */
  E: number[] | null;
  F: number[] | null;
  H: number[] | null;
  /** Every model the estimation produced, whatever the type (for the mapper). */
  models: { E: number[] | null; F: number[] | null; H: number[] | null };
  /** Relative pose (unit translation, zero for panoramic), null when not recoverable. */
  cam2_from_cam1: Rigid3 | null;
  /** Median triangulation angle of the inliers under that pose, degrees. */
  tri_angle_deg: number;
}

function flattenMatches(matches: TwoViewInput["matches"]): ArrayLike<number> {
  const first = (matches as ArrayLike<unknown>)[0];
  if (Array.isArray(first)) return (matches as ReadonlyArray<readonly [number, number]>).flat();
  return matches as ArrayLike<number>;
}

function cameraArgs(engine: Engine, camera: TwoViewCamera, heapParams: (p: ArrayLike<number>) => number): number[] {
  if (camera.model === null) return [-1, 0, 0, camera.width, camera.height];
  const modelId = validateCamera(engine, camera);
  return [modelId, heapParams(camera.params), camera.params.length, camera.width, camera.height];
}

/** Verifies the raw matches of one image pair. */
export function verifyTwoView(engine: Engine, input: TwoViewInput): TwoViewResult {
  if (input.keypoints1.length % 2 !== 0 || input.keypoints2.length % 2 !== 0) {
    throw new Error("verifyTwoView: keypoints must be interleaved x y pairs");
  }
  const matches = flattenMatches(input.matches);
  if (matches.length % 2 !== 0) throw new Error("verifyTwoView: matches must be index pairs");
  const options = TWO_VIEW_OPTION_DEFAULTS.map(([name, fallback]) => Number(input.options?.[name] ?? fallback));
  return engine.withHeap((heap) => {
    const handle = engine.call(
      "edgesfm_two_view_verify",
      heap.f64(input.keypoints1),
      input.keypoints1.length / 2,
      heap.f64(input.keypoints2),
      input.keypoints2.length / 2,
      ...cameraArgs(engine, input.camera1, (p) => heap.f64(p)),
      ...cameraArgs(engine, input.camera2, (p) => heap.f64(p)),
      heap.i32(matches),
      matches.length / 2,
      heap.f64(options),
      options.length,
    );
    try {
      return readResult(engine, handle);
    } finally {
      engine.call("edgesfm_two_view_result_free", handle);
    }
  });
}

function readResult(engine: Engine, handle: number): TwoViewResult {
  const type = TWO_VIEW_TYPES[engine.call("edgesfm_two_view_result_type", handle)] ?? "undefined";
  const numInliers = engine.call("edgesfm_two_view_result_num_inliers", handle);
  const flat =
    numInliers > 0 ? engine.readI32(engine.call("edgesfm_two_view_result_inlier_matches", handle), 2 * numInliers) : new Int32Array(0);
  const inlierMatches: Array<[number, number]> = [];
  for (let i = 0; i < numInliers; i += 1) inlierMatches.push([flat[2 * i]!, flat[2 * i + 1]!]);
  const matrix = (which: number) => {
    const ptr = engine.call("edgesfm_two_view_result_matrix", handle, which);
    return ptr === 0 ? null : Array.from(engine.readF64(ptr, 9));
  };
  const models = { E: matrix(0), F: matrix(1), H: matrix(2) };
  const pose = engine.readF64(engine.call("edgesfm_two_view_result_pose", handle), 8);
  const hasPose = engine.call("edgesfm_two_view_result_has_pose", handle) === 1;
  return {
    type,
    num_inliers: numInliers,
    inlier_matches: inlierMatches,
    E: type === "calibrated" ? models.E : null,
    F: type === "uncalibrated" ? models.F : null,
    H: type === "planar" || type === "panoramic" || type === "planar_or_panoramic" ? models.H : null,
    models,
    cam2_from_cam1: hasPose
      ? { rotation: { w: pose[0]!, x: pose[1]!, y: pose[2]!, z: pose[3]! }, translation: [pose[4]!, pose[5]!, pose[6]!] }
      : null,
    tri_angle_deg: hasPose ? (pose[7]! * 180) / Math.PI : 0,
  };
}

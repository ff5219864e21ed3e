/**
 * @module Bundle adjustment of a scene given as arrays (src/bindings/ba.cc ->
 * src/optim/bundle_adjustment.h): Levenberg-Marquardt with the Schur complement, the
 * loss kernels and refine flags of spec 2.12 BundleAdjustmentSpec.
 */
import { cameraModelId } from "./camera";
import type { Engine } from "./engine";

export const LOSS_KERNELS = ["squared", "huber", "cauchy", "soft_l1", "tukey"] as const;
export type LossKernelName = (typeof LOSS_KERNELS)[number];

/** Spec 2.12 BundleAdjustmentSpec (modes `standard` and `two_stage`). */
export interface BundleAdjustmentOptions {
  mode?: "standard" | "two_stage";
  refine_focal_length?: boolean;
  refine_principal_point?: boolean;
  refine_extra_params?: boolean;
  max_num_iterations?: number;
  loss_kernel?: LossKernelName;
  loss_threshold?: number;
  /** two_stage: observations above this reprojection error (px) are dropped. Default 4. */
  max_reprojection_error?: number;
  /** Hold the first image's pose and the scale of the second (COLMAP's global BA gauge). */
  fix_gauge?: boolean;
}

export interface BaCamera {
  model: string;
  width: number;
  height: number;
  params: number[];
  constant?: boolean;
}

export interface BaImage {
  /** Index into `cameras`. */
  camera: number;
  /** cam_from_world, Hamilton quaternion [w, x, y, z]. */
  qvec: [number, number, number, number];
  tvec: [number, number, number];
  constantPose?: boolean;
}

export interface BundleAdjustmentScene {
  cameras: BaCamera[];
  images: BaImage[];
  /** xyz interleaved. */
  points: Float64Array;
  /** (image index, point index) per observation, interleaved. */
  observations: Int32Array;
  /** Observed pixel (x, y) per observation, interleaved. */
  observationsXY: Float64Array;
}

export interface BundleAdjustmentResult {
  scene: BundleAdjustmentScene;
  numIterations: number;
  initialCost: number;
  finalCost: number;
  converged: boolean;
  numObservationsKept: number;
  meanReprojectionError: number;
  /** Per input observation: kept (two_stage drops outliers). */
  inliers: boolean[];
}

/** Adjusts `scene` (unchanged) and returns the adjusted copy with a summary. */
export function bundleAdjust(engine: Engine, scene: BundleAdjustmentScene, options: BundleAdjustmentOptions = {}): BundleAdjustmentResult {
  const numObs = scene.observations.length / 2;
  const params = scene.cameras.flatMap((c) => c.params);
  const poses = scene.images.flatMap((im) => [...im.qvec, ...im.tvec]);
  const opts = [
    LOSS_KERNELS.indexOf(options.loss_kernel ?? "squared"),
    options.loss_threshold ?? 1,
    (options.refine_focal_length ?? true) ? 1 : 0,
    (options.refine_principal_point ?? false) ? 1 : 0,
    (options.refine_extra_params ?? true) ? 1 : 0,
    options.max_num_iterations ?? 100,
    options.mode === "two_stage" ? 1 : 0,
    options.max_reprojection_error ?? 4,
    options.fix_gauge ? 1 : 0,
  ];
  if (opts[0]! < 0) throw new Error(`unknown loss kernel ${options.loss_kernel}`);
  return engine.withHeap((heap) => {
    const paramsPtr = heap.f64(params);
    const posesPtr = heap.f64(poses);
    const xyzPtr = heap.f64(scene.points);
    const summaryPtr = heap.alloc(6 * 8);
    const inliersPtr = heap.alloc(Math.max(1, numObs) * 4);
    engine.call(
      "edgesfm_ba_solve",
      scene.cameras.length,
      heap.i32(scene.cameras.map((c) => cameraModelId(engine, c.model))),
      heap.f64(scene.cameras.flatMap((c) => [c.width, c.height])),
      paramsPtr,
      heap.i32(scene.cameras.map((c) => (c.constant ? 1 : 0))),
      scene.images.length,
      heap.i32(scene.images.map((im) => im.camera)),
      posesPtr,
      heap.i32(scene.images.map((im) => (im.constantPose ? 1 : 0))),
      scene.points.length / 3,
      xyzPtr,
      numObs,
      heap.i32(scene.observations),
      heap.f64(scene.observationsXY),
      heap.f64(opts),
      summaryPtr,
      inliersPtr,
    );
    // (An invalid scene throws an EngineError naming the rule it breaks.)
    const newParams = engine.readF64(paramsPtr, params.length);
    const newPoses = engine.readF64(posesPtr, poses.length);
    const summary = engine.readF64(summaryPtr, 6);
    const inliers = Array.from(engine.readI32(inliersPtr, numObs), (v) => v !== 0);
    let offset = 0;
    const cameras = scene.cameras.map((c) => {
      const p = Array.from(newParams.subarray(offset, offset + c.params.length));
      offset += c.params.length;
      return { ...c, params: p };
    });
    const images = scene.images.map((im, i) => ({
      ...im,
      qvec: Array.from(newPoses.subarray(7 * i, 7 * i + 4)) as BaImage["qvec"],
      tvec: Array.from(newPoses.subarray(7 * i + 4, 7 * i + 7)) as BaImage["tvec"],
    }));
    return {
      scene: { ...scene, cameras, images, points: engine.readF64(xyzPtr, scene.points.length) },
      numIterations: summary[0]!,
      initialCost: summary[1]!,
      finalCost: summary[2]!,
      converged: summary[3] === 1,
      numObservationsKept: summary[4]!,
      meanReprojectionError: summary[5]!,
      inliers,
    };
  });
}

/**
 * @module Camera model names and parameter counts as the engine knows them
 * (src/scene/camera_models.h, COLMAP's layouts).
 */
import type { Engine } from "./engine";

export const CAMERA_MODEL_NAMES = [
  "SIMPLE_PINHOLE",
  "PINHOLE",
  "SIMPLE_RADIAL",
  "RADIAL",
  "OPENCV",
  "OPENCV_FISHEYE",
  "FULL_OPENCV",
  "SIMPLE_RADIAL_FISHEYE",
  "RADIAL_FISHEYE",
  "SPHERICAL",
] as const;
export type CameraModelName = (typeof CAMERA_MODEL_NAMES)[number];

/** A camera as the spec's cameras.json carries it. */
export interface CameraSpec {
  model: CameraModelName;
  width: number;
  height: number;
  params: ArrayLike<number>;
}

/** The engine's numeric model id for a COLMAP model name; throws if unknown. */
export function cameraModelId(engine: Engine, model: string): number {
  const id = engine.withHeap((heap) => engine.call("edgesfm_camera_model_id", heap.string(model)));
  if (id < 0) throw new Error(`unknown camera model ${model}`);
  return id;
}

/** Checks a camera's parameter count against its model; returns the model id. */
export function validateCamera(engine: Engine, camera: CameraSpec): number {
  const id = cameraModelId(engine, camera.model);
  const expected = engine.call("edgesfm_camera_model_num_params", id);
  if (camera.params.length !== expected) {
    throw new Error(`camera model ${camera.model} takes ${expected} params, got ${camera.params.length}`);
  }
  return id;
}

/**
 * @module Camera models and their parameter layouts, as COLMAP defines them
 * (src/colmap/sensor/models.h), plus the spec's SPHERICAL (2.4: equirectangular, no params).
 * The engine (engine-wasm/src/scene/camera_models.h) implements the same list and ids.
 */
export interface CameraModelInfo {
  readonly model_id: number;
  readonly name: string;
  readonly params: readonly string[];
  readonly focal_length_idxs: readonly number[];
  readonly principal_point_idxs: readonly number[];
  readonly extra_params_idxs: readonly number[];
}

function model(model_id: number, name: string, params: string[]): CameraModelInfo {
  const idx = (pred: (p: string) => boolean) => params.flatMap((p, i) => (pred(p) ? [i] : []));
  return {
    model_id,
    name,
    params,
    focal_length_idxs: idx((p) => p.startsWith("f")),
    principal_point_idxs: idx((p) => p === "cx" || p === "cy"),
    extra_params_idxs: idx((p) => !p.startsWith("f") && p !== "cx" && p !== "cy"),
  };
}

export const CAMERA_MODELS = [
  model(0, "SIMPLE_PINHOLE", ["f", "cx", "cy"]),
  model(1, "PINHOLE", ["fx", "fy", "cx", "cy"]),
  model(2, "SIMPLE_RADIAL", ["f", "cx", "cy", "k"]),
  model(3, "RADIAL", ["f", "cx", "cy", "k1", "k2"]),
  model(4, "OPENCV", ["fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2"]),
  model(5, "OPENCV_FISHEYE", ["fx", "fy", "cx", "cy", "k1", "k2", "k3", "k4"]),
  model(6, "FULL_OPENCV", ["fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2", "k3", "k4", "k5", "k6"]),
  model(8, "SIMPLE_RADIAL_FISHEYE", ["f", "cx", "cy", "k"]),
  model(9, "RADIAL_FISHEYE", ["f", "cx", "cy", "k1", "k2"]),
  model(100, "SPHERICAL", []),
] as const satisfies readonly CameraModelInfo[];

export const CAMERA_MODEL_NAMES = CAMERA_MODELS.map((m) => m.name) as unknown as readonly [string, ...string[]];

/**
 * @module The cameras of a dataset before mapping (spec 2.4 `camera_model`, `intrinsics_mode`):
 * which images share a camera, and each camera's initial parameters. Without a prior focal
 * length (no usable EXIF), COLMAP starts from f = 1.2 max(width, height), the principal point at
 * the image centre and zero distortion; so do we (`has_prior_focal_length` false), and
 * verification then estimates uncalibrated (F/H) geometry, as COLMAP does.
 */
import { CAMERA_MODELS } from "../../protocol/camera-models";
import type { DatasetSnapshot } from "../../protocol";

export interface InitialCamera {
  model: string;
  width: number;
  height: number;
  params: number[];
  hasPriorFocalLength: boolean;
}

/** COLMAP's default focal length factor (ImageReaderOptions::default_focal_length_factor). */
export const DEFAULT_FOCAL_LENGTH_FACTOR = 1.2;

export function initialCamera(model: string, width: number, height: number): InitialCamera {
  const info = CAMERA_MODELS.find((m) => m.name === model);
  if (!info) throw new Error(`unknown camera model ${model}`);
  const f = DEFAULT_FOCAL_LENGTH_FACTOR * Math.max(width, height);
  const params = info.params.map((name) => (name.startsWith("f") ? f : name === "cx" ? width / 2 : name === "cy" ? height / 2 : 0));
  return { model, width, height, params, hasPriorFocalLength: false };
}

/**
 * Cameras and the camera index of each image: one for the whole dataset (`single_camera`, when
 * all images have one size), one per folder of the image name (`per_folder`), or one per image.
 */
export function datasetCameras(dataset: DatasetSnapshot, sizes: ReadonlyArray<{ width: number; height: number }>): {
  cameras: InitialCamera[];
  cameraOfImage: number[];
} {
  const keyOf = (i: number): string => {
    const { width, height } = sizes[i]!;
    const size = `${width}x${height}`;
    if (dataset.intrinsics_mode === "single_camera") return size;
    if (dataset.intrinsics_mode === "per_folder") return `${dataset.images[i]!.name.split("/").slice(0, -1).join("/")}|${size}`;
    return `${i}`;
  };
  const index = new Map<string, number>();
  const cameras: InitialCamera[] = [];
  const cameraOfImage = sizes.map((s, i) => {
    const key = keyOf(i);
    let c = index.get(key);
    if (c === undefined) {
      c = cameras.push(initialCamera(dataset.camera_model, s.width, s.height)) - 1;
      index.set(key, c);
    }
    return c;
  });
  return { cameras, cameraOfImage };
}

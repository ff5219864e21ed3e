/**
 * @module The cameras of a dataset before mapping (spec 2.4 `camera_model`, `intrinsics_mode`):
 * which images share a camera, and each camera's initial parameters, as COLMAP's ImageReader
 * makes them. With an EXIF 35 mm-equivalent focal length, f = f35 / 35 max(width, height) and
 * the camera has a prior focal length: verification then also estimates calibrated (E) geometry
 * and registration keeps the focal. Without one, f = 1.2 max(width, height) and no prior (F/H
 * only). The principal point starts at the image centre, distortion at zero.
 */
import type { CameraModelName } from "../../engine-wasm/ts/camera";
import type { TwoViewCamera } from "../../engine-wasm/ts/two-view";
import { CAMERA_MODELS } from "../../protocol/camera-models";
import type { DatasetSnapshot } from "../../protocol";

/** What the cameras depend on: the dataset's settings and each image's name and EXIF focal. */
export type CameraSettings = Pick<DatasetSnapshot, "camera_model" | "intrinsics_mode"> & {
  /** A spherical dataset's images are equirectangular panoramas: SPHERICAL cameras, whatever `camera_model` says (2.4). */
  is_spherical?: boolean;
  images: ReadonlyArray<Pick<DatasetSnapshot["images"][number], "name" | "focal_length_35mm">>;
};

export interface InitialCamera {
  model: string;
  width: number;
  height: number;
  params: number[];
  hasPriorFocalLength: boolean;
}

/** COLMAP's default focal length factor (ImageReaderOptions::default_focal_length_factor). */
export const DEFAULT_FOCAL_LENGTH_FACTOR = 1.2;

/** The focal length in pixels an EXIF 35 mm-equivalent focal length gives (COLMAP's Bitmap::ExifFocalLength). */
export function focalFrom35mm(focalLength35mm: number, width: number, height: number): number {
  return (focalLength35mm / 35) * Math.max(width, height);
}

export function initialCamera(model: string, width: number, height: number, focalLength35mm: number | null = null): InitialCamera {
  const info = CAMERA_MODELS.find((m) => m.name === model);
  if (!info) throw new Error(`unknown camera model ${model}`);
  const exif = focalLength35mm !== null && focalLength35mm > 0;
  const f = exif ? focalFrom35mm(focalLength35mm, width, height) : DEFAULT_FOCAL_LENGTH_FACTOR * Math.max(width, height);
  // A SPHERICAL camera has no intrinsics to estimate: it is calibrated (E geometry, rays).
  const hasPriorFocalLength = exif || model === "SPHERICAL";
  const params = info.params.map((name) => (name.startsWith("f") ? f : name === "cx" ? width / 2 : name === "cy" ? height / 2 : 0));
  return { model, width, height, params, hasPriorFocalLength };
}

/** The camera with focal length(s) f taken as known (a guess for two-view poses, not a prior for mapping). */
export function withFocalLength(c: InitialCamera, f: number): InitialCamera {
  const info = CAMERA_MODELS.find((m) => m.name === c.model);
  if (!info) throw new Error(`unknown camera model ${c.model}`);
  return { ...c, params: c.params.map((v, k) => (info.params[k]!.startsWith("f") ? f : v)), hasPriorFocalLength: true };
}

/**
 * Cameras and the camera index of each image: one for the whole dataset (`single_camera`, when
 * all images have one size), one per folder of the image name (`per_folder`), or one per image.
 * A shared camera takes its prior from the first image that makes it, as COLMAP's ImageReader.
 */
/** A dataset's cameras and the camera index of each image. */
export interface DatasetCameras {
  cameras: InitialCamera[];
  cameraOfImage: number[];
}

export function datasetCameras(dataset: CameraSettings, sizes: ReadonlyArray<{ width: number; height: number }>): DatasetCameras {
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
      c =
        cameras.push(
          initialCamera(dataset.is_spherical ? "SPHERICAL" : dataset.camera_model, s.width, s.height, dataset.images[i]!.focal_length_35mm),
        ) - 1;
      index.set(key, c);
    }
    return c;
  });
  return { cameras, cameraOfImage };
}

/** A camera as two-view verification takes it: its intrinsics only when it has a prior focal length (else F/H only). */
export function twoViewCamera(c: InitialCamera): TwoViewCamera {
  return c.hasPriorFocalLength
    ? { model: c.model as CameraModelName, width: c.width, height: c.height, params: c.params }
    : { model: null, width: c.width, height: c.height };
}

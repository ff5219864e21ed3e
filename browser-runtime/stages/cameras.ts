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
 * Relative step between sorted aspect ratios that resizing alone explains: each side rounded to
 * whole pixels moves a 4:3 photo resized to 410 x 307 from 1.3333 to 1.3355. The engine's bundle
 * adjustment groups per-image cameras by the same rule (sfm/bundle_adjustment_config.cc).
 */
export const ASPECT_TOLERANCE = 0.005;

/**
 * Each camera's aspect group (an index): cameras sorted by aspect ratio (larger side over smaller,
 * so either orientation), a new group wherever one ratio exceeds the previous by more than
 * ASPECT_TOLERANCE. Photos of one device resized to varied sizes fall in one group.
 */
export function aspectGroups(cameras: ReadonlyArray<{ width: number; height: number }>): number[] {
  const aspect = cameras.map((c) => Math.max(c.width, c.height) / Math.max(1, Math.min(c.width, c.height)));
  const order = aspect.map((_, i) => i).sort((a, b) => aspect[a]! - aspect[b]!);
  const groups = new Array<number>(cameras.length);
  let group = 0;
  order.forEach((ci, k) => {
    if (k > 0 && aspect[ci]! > aspect[order[k - 1]!]! * (1 + ASPECT_TOLERANCE)) group += 1;
    groups[ci] = group;
  });
  return groups;
}

/** A dataset's cameras and the camera index of each image. */
export interface DatasetCameras {
  cameras: InitialCamera[];
  cameraOfImage: number[];
}

/**
 * Cameras and the camera index of each image: one for the whole dataset (`single_camera`, when
 * all images have one size), one per folder of the image name (`per_folder`), or one per image.
 * A shared camera takes its prior from the first image that makes it, as COLMAP's ImageReader.
 */
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

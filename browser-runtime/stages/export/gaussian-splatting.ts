/**
 * @module `export.gaussian_splatting`: the dataset layout 3D Gaussian Splatting trainers read
 * (graphdeco-inria/gaussian-splatting scene/dataset_readers.py readColmapSceneInfo:
 * `<source>/sparse/0/{cameras,images,points3D}.bin` in COLMAP's binary layout, photos in
 * `<source>/images/`; the trainer builds its initial points from points3D.bin).
 *
 * The reference trainer asserts PINHOLE or SIMPLE_PINHOLE cameras ("only undistorted datasets
 * supported"): it does not undistort. So by default a snapshot with any other model is refused
 * with `unsupported_camera_model`. With `allowDistortedCameras` the cameras are written unchanged
 * and a warning is returned for the artifact's metadata: trainers that undistort themselves
 * (gsplat's COLMAP parser, nerfstudio's splatfacto) read them; the reference trainer will not.
 * We do not resample photos here (that needs decoding and interpolating every image).
 */
import { exportColmapBinary } from "./colmap-bin";
import { requireColmapCameras, type ExportModel } from "./export-model";

export const GAUSSIAN_SPLATTING_CAMERA_MODELS = ["SIMPLE_PINHOLE", "PINHOLE"] as const;

export function exportGaussianSplatting(
  model: ExportModel,
  options: { allowDistortedCameras?: boolean },
  warnings: string[],
): Map<string, Uint8Array> {
  if (options.allowDistortedCameras) {
    const distorted = model.cameras.filter((c) => !(GAUSSIAN_SPLATTING_CAMERA_MODELS as readonly string[]).includes(c.model));
    if (distorted.length > 0) {
      warnings.push(
        `cameras ${distorted.map((c) => `${c.camera_id} (${c.model})`).join(", ")} are distorted and written unchanged: ` +
          "the reference 3DGS trainer accepts only PINHOLE/SIMPLE_PINHOLE; use a trainer that undistorts (gsplat, splatfacto) or undistort first",
      );
    }
  } else {
    requireColmapCameras(model, "gaussian_splatting (3DGS reads undistorted cameras only)", GAUSSIAN_SPLATTING_CAMERA_MODELS);
  }
  return exportColmapBinary(model, "sparse/0/");
}

// A camera: intrinsics shared by the images taken with it (COLMAP's Camera).
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "scene/camera_models.h"
#include "scene/types.h"

namespace edgesfm {

struct Camera {
  camera_t camera_id = kInvalidCameraId;
  CameraModelId model_id = CameraModelId::kInvalid;
  int width = 0;
  int height = 0;
  // In the model's layout (scene/camera_models.h).
  std::vector<double> params;
  // True when the focal length came from EXIF or the user, not a guess.
  bool has_prior_focal_length = false;

  // A camera with COLMAP's default parameters for `focal_length` and the image size.
  static Camera CreateFromModelId(camera_t camera_id, CameraModelId model_id, double focal_length,
                                  int width, int height);
  static Camera CreateFromModelName(camera_t camera_id, const std::string& model_name,
                                    double focal_length, int width, int height);

  std::string ModelName() const { return CameraModelIdToName(model_id); }

  // Mean of the focal lengths (fx, fy), or 0 for models without one (SPHERICAL).
  double MeanFocalLength() const;
  double FocalLengthX() const;
  double FocalLengthY() const;
  double PrincipalPointX() const;
  double PrincipalPointY() const;
  void SetFocalLength(double focal_length);
  void SetPrincipalPoint(double x, double y);

  std::vector<int> FocalLengthIdxs() const { return CameraModelFocalLengthIdxs(model_id); }
  std::vector<int> PrincipalPointIdxs() const { return CameraModelPrincipalPointIdxs(model_id); }
  std::vector<int> ExtraParamsIdxs() const { return CameraModelExtraParamsIdxs(model_id); }

  // True when the number of parameters matches the model.
  bool VerifyParams() const { return CameraModelVerifyParams(model_id, params.size()); }
  // COLMAP's sanity check after bundle adjustment: focal length within
  // [min_focal_length_ratio, max_focal_length_ratio] * max(width, height), principal point
  // inside the image, and |extra params| at most max_extra_param.
  bool HasBogusParams(double min_focal_length_ratio, double max_focal_length_ratio,
                      double max_extra_param) const;

  // [fx 0 cx; 0 fy cy; 0 0 1] (distortion ignored); identity-like for SPHERICAL.
  Eigen::Matrix3d CalibrationMatrix() const;

  // Pixel of a camera-frame point; false if the camera cannot image it.
  bool ImgFromCam(const Eigen::Vector3d& point_in_cam, Eigen::Vector2d* xy) const;
  // Viewing ray of a pixel: (u, v, 1) for perspective models, a unit vector for fisheye
  // and spherical models (see camera_models.h).
  Eigen::Vector3d CamFromImg(const Eigen::Vector2d& xy) const;
  // A pixel error converted to the normalised image plane (or radians for SPHERICAL).
  double CamFromImgThreshold(double threshold) const;
};

}  // namespace edgesfm

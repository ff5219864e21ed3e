#include "scene/camera.h"

#include <algorithm>
#include <cmath>

namespace edgesfm {

Camera Camera::CreateFromModelId(camera_t camera_id, CameraModelId model_id, double focal_length,
                                 int width, int height) {
  Camera camera;
  camera.camera_id = camera_id;
  camera.model_id = model_id;
  camera.width = width;
  camera.height = height;
  camera.params = CameraModelInitializeParams(model_id, focal_length, width, height);
  return camera;
}

Camera Camera::CreateFromModelName(camera_t camera_id, const std::string& model_name,
                                   double focal_length, int width, int height) {
  return CreateFromModelId(camera_id, CameraModelNameToId(model_name), focal_length, width, height);
}

double Camera::MeanFocalLength() const {
  const std::vector<int> idxs = FocalLengthIdxs();
  if (idxs.empty()) return 0;
  double sum = 0;
  for (const int idx : idxs) sum += params[idx];
  return sum / idxs.size();
}

double Camera::FocalLengthX() const {
  const std::vector<int> idxs = FocalLengthIdxs();
  return idxs.empty() ? 0 : params[idxs.front()];
}

double Camera::FocalLengthY() const {
  const std::vector<int> idxs = FocalLengthIdxs();
  return idxs.empty() ? 0 : params[idxs.back()];
}

double Camera::PrincipalPointX() const {
  const std::vector<int> idxs = PrincipalPointIdxs();
  return idxs.empty() ? width / 2.0 : params[idxs[0]];
}

double Camera::PrincipalPointY() const {
  const std::vector<int> idxs = PrincipalPointIdxs();
  return idxs.empty() ? height / 2.0 : params[idxs[1]];
}

void Camera::SetFocalLength(double focal_length) {
  for (const int idx : FocalLengthIdxs()) params[idx] = focal_length;
}

void Camera::SetPrincipalPoint(double x, double y) {
  const std::vector<int> idxs = PrincipalPointIdxs();
  if (idxs.size() != 2) return;
  params[idxs[0]] = x;
  params[idxs[1]] = y;
}

bool Camera::HasBogusParams(double min_focal_length_ratio, double max_focal_length_ratio,
                            double max_extra_param) const {
  const double max_size = std::max(width, height);
  for (const int idx : FocalLengthIdxs()) {
    const double ratio = params[idx] / max_size;
    if (ratio < min_focal_length_ratio || ratio > max_focal_length_ratio) return true;
  }
  const std::vector<int> pp = PrincipalPointIdxs();
  if (pp.size() == 2 &&
      (params[pp[0]] < 0 || params[pp[0]] > width || params[pp[1]] < 0 || params[pp[1]] > height)) {
    return true;
  }
  for (const int idx : ExtraParamsIdxs()) {
    if (std::abs(params[idx]) > max_extra_param) return true;
  }
  return false;
}

Eigen::Matrix3d Camera::CalibrationMatrix() const {
  Eigen::Matrix3d K = Eigen::Matrix3d::Identity();
  if (FocalLengthIdxs().empty()) return K;
  K(0, 0) = FocalLengthX();
  K(1, 1) = FocalLengthY();
  K(0, 2) = PrincipalPointX();
  K(1, 2) = PrincipalPointY();
  return K;
}

bool Camera::ImgFromCam(const Eigen::Vector3d& point_in_cam, Eigen::Vector2d* xy) const {
  return CameraModelImgFromCam(model_id, params.data(), point_in_cam.x(), point_in_cam.y(),
                               point_in_cam.z(), width, height, &xy->x(), &xy->y());
}

Eigen::Vector3d Camera::CamFromImg(const Eigen::Vector2d& xy) const {
  Eigen::Vector3d ray;
  CameraModelCamFromImg(model_id, params.data(), xy.x(), xy.y(), width, height, &ray.x(), &ray.y(),
                        &ray.z());
  return ray;
}

double Camera::CamFromImgThreshold(double threshold) const {
  return CameraModelCamFromImgThreshold(model_id, params.data(), width, height, threshold);
}

}  // namespace edgesfm

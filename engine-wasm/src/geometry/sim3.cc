#include "geometry/sim3.h"

#include <Eigen/Geometry>

namespace edgesfm {

Rigid3d TransformCameraPose(const Sim3d& new_from_old, const Rigid3d& cam_from_old) {
  // x_cam = R x_old + t and x_old = (x_new - t_s) R_s^T / s, so
  // x_cam = R R_s^T x_new / s + (t - R R_s^T t_s / s); scale the whole pose by s to
  // keep a rigid transform of the scaled world.
  const Eigen::Quaterniond rotation =
      (cam_from_old.rotation * new_from_old.rotation.inverse()).normalized();
  const Eigen::Vector3d translation =
      new_from_old.scale * cam_from_old.translation - rotation * new_from_old.translation;
  return Rigid3d(rotation, translation);
}

bool EstimateSim3d(const std::vector<Eigen::Vector3d>& src, const std::vector<Eigen::Vector3d>& dst,
                   Sim3d* dst_from_src) {
  if (src.size() != dst.size() || src.size() < 3) return false;
  Eigen::Matrix3Xd src_mat(3, src.size());
  Eigen::Matrix3Xd dst_mat(3, dst.size());
  for (size_t i = 0; i < src.size(); ++i) {
    src_mat.col(i) = src[i];
    dst_mat.col(i) = dst[i];
  }
  // Degenerate (collinear) configurations give a rank-deficient covariance.
  const Eigen::Matrix3Xd centered = src_mat.colwise() - src_mat.rowwise().mean();
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(centered * centered.transpose());
  if (svd.singularValues()(1) < 1e-12 * std::max(1.0, svd.singularValues()(0))) return false;
  const Eigen::Matrix4d transform = Eigen::umeyama(src_mat, dst_mat, true);
  const Eigen::Matrix3d scaled_rotation = transform.topLeftCorner<3, 3>();
  const double scale = std::cbrt(scaled_rotation.determinant());
  if (!(scale > 0)) return false;
  dst_from_src->scale = scale;
  dst_from_src->rotation = Eigen::Quaterniond(scaled_rotation / scale).normalized();
  dst_from_src->translation = transform.topRightCorner<3, 1>();
  return true;
}

}  // namespace edgesfm

// Similarity transforms in 3D (scale, rotation, translation), COLMAP's Sim3d:
// `b_from_a * x = scale * R x + t`. Used to align a reconstruction to a reference
// (evaluation, geo-registration) and for the spec's Sim3 shape (2.13).
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <vector>

#include "geometry/rigid3.h"

namespace edgesfm {

struct Sim3d {
  double scale = 1;
  Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();
  Eigen::Vector3d translation = Eigen::Vector3d::Zero();

  Sim3d() = default;
  Sim3d(double scale, const Eigen::Quaterniond& rotation, const Eigen::Vector3d& translation)
      : scale(scale), rotation(rotation), translation(translation) {}

  Eigen::Matrix<double, 3, 4> ToMatrix() const {
    Eigen::Matrix<double, 3, 4> m;
    m.leftCols<3>() = scale * rotation.toRotationMatrix();
    m.col(3) = translation;
    return m;
  }

  Eigen::Vector3d operator*(const Eigen::Vector3d& x) const {
    return scale * (rotation * x) + translation;
  }

  // Composition: (c_from_b * b_from_a) = c_from_a.
  Sim3d operator*(const Sim3d& b_from_a) const {
    return Sim3d(scale * b_from_a.scale, (rotation * b_from_a.rotation).normalized(),
                 translation + scale * (rotation * b_from_a.translation));
  }
};

inline Sim3d Inverse(const Sim3d& b_from_a) {
  const Eigen::Quaterniond rotation = b_from_a.rotation.inverse();
  const double scale = 1 / b_from_a.scale;
  return Sim3d(scale, rotation, -scale * (rotation * b_from_a.translation));
}

// Moves a cam_from_world pose into the frame of `new_from_old`: the same camera,
// expressed against the transformed world (camera scale is unchanged).
Rigid3d TransformCameraPose(const Sim3d& new_from_old, const Rigid3d& cam_from_old);

// Least-squares similarity dst ~ b_from_a * src (Umeyama, "Least-squares estimation of
// transformation parameters between two point patterns", PAMI 1991). Needs >= 3
// non-collinear points; returns false otherwise.
bool EstimateSim3d(const std::vector<Eigen::Vector3d>& src, const std::vector<Eigen::Vector3d>& dst,
                   Sim3d* dst_from_src);

}  // namespace edgesfm

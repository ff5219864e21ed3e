// Rigid transforms in 3D (rotation + translation), COLMAP's Rigid3d: `b_from_a * x_a`
// maps a point from frame a to frame b. Poses are stored as cam_from_world.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace edgesfm {

struct Rigid3d {
  Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();
  Eigen::Vector3d translation = Eigen::Vector3d::Zero();

  Rigid3d() = default;
  Rigid3d(const Eigen::Quaterniond& rotation, const Eigen::Vector3d& translation)
      : rotation(rotation), translation(translation) {}
  Rigid3d(const Eigen::Matrix3d& rotation_matrix, const Eigen::Vector3d& translation)
      : rotation(rotation_matrix), translation(translation) {}

  // [R | t] as a 3x4 matrix.
  Eigen::Matrix<double, 3, 4> ToMatrix() const {
    Eigen::Matrix<double, 3, 4> m;
    m.leftCols<3>() = rotation.toRotationMatrix();
    m.col(3) = translation;
    return m;
  }

  Eigen::Vector3d operator*(const Eigen::Vector3d& x) const { return rotation * x + translation; }

  // Composition: (c_from_b * b_from_a) = c_from_a.
  Rigid3d operator*(const Rigid3d& b_from_a) const {
    return Rigid3d((rotation * b_from_a.rotation).normalized(),
                   translation + rotation * b_from_a.translation);
  }
};

// a_from_b from b_from_a.
inline Rigid3d Inverse(const Rigid3d& b_from_a) {
  const Eigen::Quaterniond a_from_b_rotation = b_from_a.rotation.inverse();
  return Rigid3d(a_from_b_rotation, -(a_from_b_rotation * b_from_a.translation));
}

// Position of the camera centre in world coordinates for a cam_from_world pose.
inline Eigen::Vector3d ProjectionCenter(const Rigid3d& cam_from_world) {
  return -(cam_from_world.rotation.inverse() * cam_from_world.translation);
}

// The camera's optical axis (+z) in world coordinates.
inline Eigen::Vector3d ViewingDirection(const Rigid3d& cam_from_world) {
  return cam_from_world.rotation.inverse() * Eigen::Vector3d::UnitZ();
}

// Angle in radians of the rotation taking `a` to `b` (0..pi).
inline double RotationAngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  return a.angularDistance(b);
}

// Cross-product matrix [v]_x so that [v]_x w = v x w.
inline Eigen::Matrix3d CrossProductMatrix(const Eigen::Vector3d& v) {
  Eigen::Matrix3d m;
  m << 0, -v.z(), v.y(), v.z(), 0, -v.x(), -v.y(), v.x(), 0;
  return m;
}

}  // namespace edgesfm

#include "scene/cubemap.h"

#include <cmath>

namespace edgesfm {
namespace {

Eigen::Matrix3d FromColumns(const Eigen::Vector3d& x, const Eigen::Vector3d& y,
                            const Eigen::Vector3d& z) {
  Eigen::Matrix3d m;
  m.col(0) = x;
  m.col(1) = y;
  m.col(2) = z;
  return m;
}

const std::array<Eigen::Matrix3d, kNumCubemapFaces>& Table() {
  // Turning right (yaw) keeps y down; looking up or down (pitch) keeps x right.
  static const std::array<Eigen::Matrix3d, kNumCubemapFaces> table = {
      FromColumns({1, 0, 0}, {0, 1, 0}, {0, 0, 1}),    // front: +z
      FromColumns({0, 0, -1}, {0, 1, 0}, {1, 0, 0}),   // right: +x
      FromColumns({-1, 0, 0}, {0, 1, 0}, {0, 0, -1}),  // back: -z
      FromColumns({0, 0, 1}, {0, 1, 0}, {-1, 0, 0}),   // left: -x
      FromColumns({1, 0, 0}, {0, 0, 1}, {0, -1, 0}),   // up: -y, image bottom toward front
      FromColumns({1, 0, 0}, {0, 0, -1}, {0, 1, 0}),   // down: +y, image top toward front
  };
  return table;
}

}  // namespace

const Eigen::Matrix3d& CubemapRigFromFace(int face) { return Table().at(face); }

Rigid3d CubemapFaceFromRig(int face) {
  return Rigid3d(Eigen::Matrix3d(CubemapRigFromFace(face).transpose()), Eigen::Vector3d::Zero());
}

int CubemapFaceOfRay(const Eigen::Vector3d& ray) {
  const double ax = std::abs(ray.x()), ay = std::abs(ray.y()), az = std::abs(ray.z());
  if (az >= ax && az >= ay) return ray.z() >= 0 ? 0 : 2;
  if (ax >= ay) return ray.x() >= 0 ? 1 : 3;
  return ray.y() < 0 ? 4 : 5;
}

CubemapFaceIntrinsics CubemapIntrinsics(int face_size) {
  return {face_size / 2.0, face_size / 2.0};
}

}  // namespace edgesfm

#include "geometry/rigid3.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

Rigid3d RandomRigid(int seed) {
  std::srand(seed);
  return Rigid3d(Eigen::Quaterniond::UnitRandom(), Eigen::Vector3d::Random());
}

TEST(Rigid3d, InverseAndCompositionAreConsistent) {
  const Rigid3d b_from_a = RandomRigid(1);
  const Rigid3d c_from_b = RandomRigid(2);
  const Eigen::Vector3d x(0.3, -1.2, 2.5);
  EXPECT_LT(((c_from_b * b_from_a) * x - c_from_b * (b_from_a * x)).norm(), 1e-12);
  EXPECT_LT((Inverse(b_from_a) * (b_from_a * x) - x).norm(), 1e-12);
  EXPECT_LT((b_from_a.ToMatrix() * x.homogeneous() - b_from_a * x).norm(), 1e-12);
}

TEST(Rigid3d, ProjectionCenterMapsToTheOrigin) {
  const Rigid3d cam_from_world = RandomRigid(3);
  EXPECT_LT((cam_from_world * ProjectionCenter(cam_from_world)).norm(), 1e-12);
  EXPECT_LT((cam_from_world.rotation * ViewingDirection(cam_from_world) - Eigen::Vector3d::UnitZ())
                .norm(),
            1e-12);
}

TEST(Rigid3d, CrossProductMatrix) {
  const Eigen::Vector3d a(1, 2, 3), b(-4, 0.5, 2);
  EXPECT_LT((CrossProductMatrix(a) * b - a.cross(b)).norm(), 1e-12);
}

}  // namespace
}  // namespace edgesfm

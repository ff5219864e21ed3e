#include "geometry/sim3.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(Sim3d, InverseCompositionAndUmeyama) {
  const Sim3d b_from_a(2.5, Eigen::Quaterniond::UnitRandom(), Eigen::Vector3d(1, -2, 3));
  const Eigen::Vector3d x(0.3, -1.2, 2.5);
  EXPECT_LT((Inverse(b_from_a) * (b_from_a * x) - x).norm(), 1e-12);
  std::vector<Eigen::Vector3d> src, dst;
  for (int i = 0; i < 10; ++i) {
    src.push_back(Eigen::Vector3d::Random());
    dst.push_back(b_from_a * src.back());
  }
  Sim3d estimate;
  ASSERT_TRUE(EstimateSim3d(src, dst, &estimate));
  EXPECT_NEAR(estimate.scale, 2.5, 1e-9);
  EXPECT_LT(estimate.rotation.angularDistance(b_from_a.rotation), 1e-9);
  EXPECT_LT((estimate.translation - b_from_a.translation).norm(), 1e-9);
  // Collinear points do not determine a similarity.
  std::vector<Eigen::Vector3d> line = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}};
  EXPECT_FALSE(EstimateSim3d(line, line, &estimate));
}

TEST(Sim3d, TransformCameraPoseKeepsProjections) {
  const Sim3d new_from_old(0.5, Eigen::Quaterniond::UnitRandom(), Eigen::Vector3d(4, 0, -1));
  const Rigid3d cam_from_old(Eigen::Quaterniond::UnitRandom(), Eigen::Vector3d(1, 2, 3));
  const Rigid3d cam_from_new = TransformCameraPose(new_from_old, cam_from_old);
  const Eigen::Vector3d x_old(0.2, 0.1, 3);
  const Eigen::Vector3d in_cam_old = cam_from_old * x_old;
  const Eigen::Vector3d in_cam_new = cam_from_new * (new_from_old * x_old);
  // Same viewing ray, depth scaled by the similarity's scale.
  EXPECT_LT((in_cam_new - new_from_old.scale * in_cam_old).norm(), 1e-12);
}

}  // namespace
}  // namespace edgesfm

#include "geometry/triangulation.h"

#include <gtest/gtest.h>

#include <cmath>

namespace edgesfm {
namespace {

// Two cameras looking at the origin from a baseline of 1 at distance 5.
struct TwoViews {
  Rigid3d cam1_from_world{Eigen::Quaterniond::Identity(), Eigen::Vector3d(0, 0, 5)};
  Rigid3d cam2_from_world{Eigen::Quaterniond(Eigen::AngleAxisd(-0.2, Eigen::Vector3d::UnitY())),
                          Eigen::Vector3d(-1, 0.1, 5)};
  Eigen::Vector3d point{0.3, -0.4, 0.5};
  Eigen::Vector3d Ray(const Rigid3d& cam_from_world) const {
    const Eigen::Vector3d x = cam_from_world * point;
    return x / x.z();
  }
};

TEST(Triangulation, DltRecoversThePoint) {
  const TwoViews v;
  Eigen::Vector3d xyz;
  ASSERT_TRUE(TriangulatePoint(v.cam1_from_world, v.cam2_from_world, v.Ray(v.cam1_from_world),
                               v.Ray(v.cam2_from_world), &xyz));
  EXPECT_LT((xyz - v.point).norm(), 1e-9);
}

TEST(Triangulation, MidPointAndMultiViewRecoverThePoint) {
  const TwoViews v;
  Eigen::Vector3d xyz;
  ASSERT_TRUE(TriangulateMidPoint(v.cam1_from_world, v.cam2_from_world, v.Ray(v.cam1_from_world),
                                  v.Ray(v.cam2_from_world), &xyz));
  EXPECT_LT((xyz - v.point).norm(), 1e-9);
  const Rigid3d cam3_from_world(Eigen::Quaterniond::Identity(), Eigen::Vector3d(1, 0, 6));
  ASSERT_TRUE(TriangulateMultiViewPoint(
      {v.cam1_from_world, v.cam2_from_world, cam3_from_world},
      {v.Ray(v.cam1_from_world), v.Ray(v.cam2_from_world), 2.0 * v.Ray(cam3_from_world)}, &xyz));
  EXPECT_LT((xyz - v.point).norm(), 1e-9);
}

TEST(Triangulation, ParallelRaysAreRejected) {
  const TwoViews v;
  const Rigid3d shifted(Eigen::Quaterniond::Identity(), Eigen::Vector3d(0, 0, 4));
  Eigen::Vector3d xyz;
  const Eigen::Vector3d ray(0, 0, 1);
  EXPECT_FALSE(TriangulateMidPoint(v.cam1_from_world, shifted, ray, ray, &xyz));
  EXPECT_FALSE(TriangulateMultiViewPoint({v.cam1_from_world, shifted}, {ray, ray}, &xyz));
}

TEST(Triangulation, AngleDepthAndCheirality) {
  EXPECT_NEAR(CalculateTriangulationAngle({-1, 0, 0}, {1, 0, 0}, {0, 0, 1}), M_PI / 2, 1e-12);
  EXPECT_NEAR(CalculateTriangulationAngle({0, 0, 0}, {0, 0, 0}, {0, 0, 1}), 0, 1e-12);
  const TwoViews v;
  EXPECT_NEAR(CalculateDepth(v.cam1_from_world, v.point), 5.5, 1e-12);
  EXPECT_TRUE(HasPointPositiveDepth(v.cam1_from_world, v.Ray(v.cam1_from_world), v.point));
  EXPECT_FALSE(HasPointPositiveDepth(v.cam1_from_world, v.Ray(v.cam1_from_world),
                                     Eigen::Vector3d(0, 0, -10)));
}

}  // namespace
}  // namespace edgesfm

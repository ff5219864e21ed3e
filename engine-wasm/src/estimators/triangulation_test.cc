#include "estimators/triangulation.h"

#include <gtest/gtest.h>

#include <random>

namespace edgesfm {
namespace {

// Cameras on a circle of radius 3 around the point (0, 0, 5), looking at it.
struct Track {
  Eigen::Vector3d point{0.2, -0.1, 5};
  std::vector<Rigid3d> cams_from_world;
  std::vector<Eigen::Vector3d> rays;
  std::vector<bool> is_inlier;
};

Track MakeTrack(int num_views, int num_outliers, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> gaussian(0, noise > 0 ? noise : 1);
  std::uniform_real_distribution<double> unit(-1, 1);
  Track track;
  for (int i = 0; i < num_views; ++i) {
    const double angle = -0.4 + 0.8 * i / std::max(1, num_views - 1);
    const Eigen::Vector3d center(3 * std::sin(angle), 0.3 * unit(rng), 5 - 3 * std::cos(angle));
    // Look at the point: z axis towards it.
    const Eigen::Vector3d z = (track.point - center).normalized();
    const Eigen::Vector3d x = Eigen::Vector3d::UnitY().cross(z).normalized();
    Eigen::Matrix3d R;
    R.row(0) = x;
    R.row(1) = z.cross(x);
    R.row(2) = z;
    const Rigid3d cam_from_world(R, -R * center);
    Eigen::Vector3d ray = cam_from_world * track.point;
    ray /= ray.z();
    const bool outlier = i < num_outliers;
    if (outlier) {
      ray += Eigen::Vector3d(0.2 * unit(rng), 0.2 * unit(rng), 0);
    } else if (noise > 0) {
      ray += Eigen::Vector3d(gaussian(rng), gaussian(rng), 0);
    }
    track.cams_from_world.push_back(cam_from_world);
    track.rays.push_back(ray);
    track.is_inlier.push_back(!outlier);
  }
  return track;
}

TEST(RobustTriangulation, RobustToOutlierObservations) {
  const Track track = MakeTrack(8, 3, 1e-4, 1);
  TriangulationOptions options;
  options.ransac.max_error = 2e-3;
  std::vector<char> inlier_mask;
  Eigen::Vector3d xyz;
  ASSERT_TRUE(
      EstimateTriangulation(options, track.rays, track.cams_from_world, &inlier_mask, &xyz));
  EXPECT_LT((xyz - track.point).norm(), 5e-3);
  for (size_t i = 0; i < track.is_inlier.size(); ++i) {
    EXPECT_EQ(static_cast<bool>(inlier_mask[i]), track.is_inlier[i]) << i;
  }
}

TEST(RobustTriangulation, RejectsTooSmallTriangulationAngles) {
  Track track = MakeTrack(2, 0, 0, 2);
  TriangulationOptions options;
  options.ransac.max_error = 1e-3;
  std::vector<char> inlier_mask;
  Eigen::Vector3d xyz;
  ASSERT_TRUE(
      EstimateTriangulation(options, track.rays, track.cams_from_world, &inlier_mask, &xyz));
  // The two views see the point under ~46 degrees; demanding more rejects it.
  options.min_tri_angle_deg = 60;
  EXPECT_FALSE(
      EstimateTriangulation(options, track.rays, track.cams_from_world, &inlier_mask, &xyz));
}

TEST(RobustTriangulation, PointBehindACameraIsNotAModel) {
  const Track track = MakeTrack(2, 0, 0, 3);
  const TriangulationEstimator estimator(0);
  std::vector<Eigen::Vector3d> models;
  // Flip one ray: the rays now meet behind that camera (or not at all).
  estimator.Estimate({track.rays[0], -track.rays[1]}, track.cams_from_world, &models);
  EXPECT_TRUE(models.empty());
}

}  // namespace
}  // namespace edgesfm

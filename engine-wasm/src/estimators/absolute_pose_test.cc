#include "estimators/absolute_pose.h"

#include <gtest/gtest.h>

#include <random>

#include "estimators/loransac.h"

namespace edgesfm {
namespace {

struct PnPScene {
  Rigid3d cam_from_world;
  std::vector<Eigen::Vector3d> points3D, rays;
  std::vector<bool> is_inlier;
};

// Points in front of a camera at a random pose; unit rays through normalised-plane points
// (u, v, 1) with optional noise; outliers get a random ray.
PnPScene MakePnPScene(int num_points, double outlier_ratio, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::normal_distribution<double> gaussian(0, noise > 0 ? noise : 1);
  PnPScene scene;
  scene.cam_from_world =
      Rigid3d(Eigen::Quaterniond(Eigen::AngleAxisd(
                  2 * unit(rng), Eigen::Vector3d(unit(rng), unit(rng), unit(rng)).normalized())),
              Eigen::Vector3d(unit(rng), unit(rng), 5 + unit(rng)));
  const Rigid3d world_from_cam = Inverse(scene.cam_from_world);
  for (int i = 0; i < num_points; ++i) {
    const Eigen::Vector3d in_cam(unit(rng) * 2, unit(rng) * 1.5, 4 + 2 * unit(rng));
    scene.points3D.push_back(world_from_cam * in_cam);
    Eigen::Vector3d ray = in_cam / in_cam.z();
    const bool outlier = i < outlier_ratio * num_points;
    if (outlier) {
      ray = Eigen::Vector3d(unit(rng) * 0.5, unit(rng) * 0.4, 1);
    } else if (noise > 0) {
      ray += Eigen::Vector3d(gaussian(rng), gaussian(rng), 0);
    }
    scene.rays.push_back(ray.normalized());
    scene.is_inlier.push_back(!outlier);
  }
  return scene;
}

double PoseError(const Rigid3d& a, const Rigid3d& b) {
  return a.rotation.angularDistance(b.rotation) + (a.translation - b.translation).norm();
}

TEST(P3P, OneOfTheSolutionsIsTheTruth) {
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const PnPScene scene = MakePnPScene(3, 0, 0, seed);
    std::vector<Rigid3d> models;
    P3PEstimator::Estimate(scene.rays, scene.points3D, &models);
    ASSERT_GE(models.size(), 1u) << "seed " << seed;
    EXPECT_LE(models.size(), 4u);
    double best = 1e9;
    for (const auto& model : models) best = std::min(best, PoseError(model, scene.cam_from_world));
    EXPECT_LT(best, 1e-8) << "seed " << seed;
  }
}

TEST(EPnP, ExactWithoutNoiseAndAccurateWithNoise) {
  for (uint32_t seed = 0; seed < 10; ++seed) {
    const PnPScene exact = MakePnPScene(10, 0, 0, seed);
    std::vector<Rigid3d> models;
    EPnPEstimator::Estimate(exact.rays, exact.points3D, &models);
    ASSERT_EQ(models.size(), 1u);
    EXPECT_LT(PoseError(models[0], exact.cam_from_world), 1e-6) << "seed " << seed;
  }
  const PnPScene noisy = MakePnPScene(100, 0, 1e-3, 11);
  std::vector<Rigid3d> models;
  EPnPEstimator::Estimate(noisy.rays, noisy.points3D, &models);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_LT(PoseError(models[0], noisy.cam_from_world), 2e-2);
}

TEST(AbsolutePose, LoRansacP3PWithEPnPRefitRejectsOutliers) {
  const PnPScene scene = MakePnPScene(200, 0.4, 5e-4, 3);
  RansacOptions options;
  options.max_error = 3e-3;
  const auto report =
      LoRansac<P3PEstimator, EPnPEstimator>(options).Estimate(scene.rays, scene.points3D);
  ASSERT_TRUE(report.success);
  EXPECT_LT(PoseError(report.model, scene.cam_from_world), 1e-2);
  size_t wrong = 0;
  for (size_t i = 0; i < scene.is_inlier.size(); ++i) {
    if (static_cast<bool>(report.inlier_mask[i]) != scene.is_inlier[i]) wrong += 1;
  }
  EXPECT_LE(wrong, 4u);
}

TEST(AbsolutePose, PointsBehindTheCameraAreNotInliers) {
  const Rigid3d identity;
  std::vector<double> residuals;
  P3PEstimator::Residuals({Eigen::Vector3d(0, 0, 1)}, {Eigen::Vector3d(0, 0, -3)}, identity,
                          &residuals);
  EXPECT_EQ(residuals[0], std::numeric_limits<double>::max());
}

}  // namespace
}  // namespace edgesfm

#include "estimators/essential_matrix.h"

#include <gtest/gtest.h>

#include "estimators/loransac.h"
#include "estimators/synthetic_two_view_scene.h"

namespace edgesfm {
namespace {

using testing_support::MakeTwoViewScene;
using testing_support::ProjectiveDistance;
using testing_support::TrueEssentialMatrix;
using testing_support::TwoViewScene;
using testing_support::TwoViewSceneOptions;

TEST(EssentialMatrixFivePoint, OneSolutionIsTheTruth) {
  TwoViewSceneOptions options;
  options.num_points = 5;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    options.seed = seed;
    const TwoViewScene scene = MakeTwoViewScene(options);
    std::vector<Eigen::Matrix3d> models;
    EssentialMatrixFivePointEstimator::Estimate(scene.rays1, scene.rays2, &models);
    ASSERT_GE(models.size(), 1u) << "seed " << seed;
    EXPECT_LE(models.size(), 10u);
    double best = 1e9;
    for (const auto& E : models) {
      best = std::min(best, ProjectiveDistance(E, TrueEssentialMatrix(scene)));
      // Every solution satisfies the five constraints and is an essential matrix.
      std::vector<double> residuals;
      EssentialMatrixFivePointEstimator::Residuals(scene.rays1, scene.rays2, E, &residuals);
      for (const double r : residuals) EXPECT_LT(r, 1e-12);
      const Eigen::JacobiSVD<Eigen::Matrix3d> svd(E);
      EXPECT_NEAR(svd.singularValues()(0), svd.singularValues()(1), 1e-6);
      EXPECT_NEAR(svd.singularValues()(2), 0, 1e-6);
    }
    EXPECT_LT(best, 1e-6) << "seed " << seed;
  }
}

TEST(EssentialMatrixFivePoint, LeastSquaresFromManyPoints) {
  TwoViewSceneOptions options;
  options.num_points = 50;
  options.noise_px = 0.3;
  const TwoViewScene scene = MakeTwoViewScene(options);
  std::vector<Eigen::Matrix3d> models;
  EssentialMatrixFivePointEstimator::Estimate(scene.rays1, scene.rays2, &models);
  double best = 1e9;
  for (const auto& E : models)
    best = std::min(best, ProjectiveDistance(E, TrueEssentialMatrix(scene)));
  // The least-squares null space is an approximation (as in COLMAP); the pose error it
  // implies is checked in two_view_geometry_test.
  EXPECT_LT(best, 3e-2);
}

TEST(EssentialMatrixFivePoint, SampsonErrorIsAnAngle) {
  // Translation along x: epipolar planes contain the x axis. Two rays at angle a to each
  // other's epipolar plane have error tan(a)^2 / 2: the angle shared by both views.
  Eigen::Matrix3d E;
  E << 0, 0, 0, 0, 0, -1, 0, 1, 0;
  const double a = 1e-3;
  const Eigen::Vector3d ray1(0, 0, 1);
  const Eigen::Vector3d ray2(0, std::sin(a), std::cos(a));
  EXPECT_NEAR(std::sqrt(SphericalSampsonError(ray1, ray2, E)), std::tan(a) / std::sqrt(2.0), 1e-12);
  // Scaling a ray changes nothing.
  EXPECT_NEAR(SphericalSampsonError(3 * ray1, 0.5 * ray2, E), SphericalSampsonError(ray1, ray2, E),
              1e-18);
}

TEST(EssentialMatrixFivePoint, LoRansacWithOutliersAndNoise) {
  TwoViewSceneOptions options;
  options.num_points = 300;
  options.outlier_ratio = 0.3;
  options.noise_px = 0.5;
  options.seed = 5;
  const TwoViewScene scene = MakeTwoViewScene(options);
  RansacOptions ransac;
  ransac.max_error = 3.0 / options.focal;
  const auto report =
      LoRansac<EssentialMatrixFivePointEstimator>(ransac).Estimate(scene.rays1, scene.rays2);
  ASSERT_TRUE(report.success);
  EXPECT_LT(ProjectiveDistance(report.model, TrueEssentialMatrix(scene)), 2e-2);
  size_t true_inliers_kept = 0;
  for (size_t i = 0; i < scene.is_inlier.size(); ++i) {
    if (scene.is_inlier[i] && report.inlier_mask[i]) true_inliers_kept += 1;
  }
  EXPECT_GE(true_inliers_kept, 205u);
}

}  // namespace
}  // namespace edgesfm

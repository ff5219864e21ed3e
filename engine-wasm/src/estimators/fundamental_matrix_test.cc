#include "estimators/fundamental_matrix.h"

#include <gtest/gtest.h>

#include "estimators/loransac.h"
#include "estimators/synthetic_two_view_scene.h"

namespace edgesfm {
namespace {

using testing_support::MakeTwoViewScene;
using testing_support::ProjectiveDistance;
using testing_support::TwoViewScene;
using testing_support::TwoViewSceneOptions;

Eigen::Matrix3d TrueFundamentalMatrix(const TwoViewScene& scene) {
  const Eigen::Matrix3d Kinv = scene.K.inverse();
  return Kinv.transpose() * testing_support::TrueEssentialMatrix(scene) * Kinv;
}

std::vector<Eigen::Vector2d> Head(const std::vector<Eigen::Vector2d>& v, size_t n) {
  return std::vector<Eigen::Vector2d>(v.begin(), v.begin() + n);
}

TEST(FundamentalMatrix, SevenPointRecoversTheTruthAmongItsSolutions) {
  TwoViewSceneOptions options;
  options.num_points = 7;
  for (uint32_t seed = 0; seed < 10; ++seed) {
    options.seed = seed;
    const TwoViewScene scene = MakeTwoViewScene(options);
    std::vector<Eigen::Matrix3d> models;
    FundamentalMatrixSevenPointEstimator::Estimate(scene.pixels1, scene.pixels2, &models);
    ASSERT_GE(models.size(), 1u);
    ASSERT_LE(models.size(), 3u);
    double best = 1e9;
    for (const auto& F : models)
      best = std::min(best, ProjectiveDistance(F, TrueFundamentalMatrix(scene)));
    EXPECT_LT(best, 1e-6) << "seed " << seed;
  }
}

TEST(FundamentalMatrix, EightPointIsExactWithoutNoiseAndRankTwo) {
  TwoViewSceneOptions options;
  options.num_points = 30;
  const TwoViewScene scene = MakeTwoViewScene(options);
  std::vector<Eigen::Matrix3d> models;
  FundamentalMatrixEightPointEstimator::Estimate(Head(scene.pixels1, 8), Head(scene.pixels2, 8),
                                                 &models);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_LT(ProjectiveDistance(models[0], TrueFundamentalMatrix(scene)), 1e-6);
  FundamentalMatrixEightPointEstimator::Estimate(scene.pixels1, scene.pixels2, &models);
  EXPECT_LT(std::abs(models[0].determinant()), 1e-12);
  std::vector<double> residuals;
  FundamentalMatrixEightPointEstimator::Residuals(scene.pixels1, scene.pixels2, models[0],
                                                  &residuals);
  for (const double r : residuals) EXPECT_LT(r, 1e-12);
}

TEST(FundamentalMatrix, SampsonErrorIsTheDistanceToTheEpipolarLine) {
  // F for a pure x translation between identical pinholes: epipolar lines are rows.
  Eigen::Matrix3d F;
  F << 0, 0, 0, 0, 0, -1, 0, 1, 0;
  std::vector<double> residuals;
  ComputeSquaredSampsonError({{10, 5}}, {{40, 8}}, F, &residuals);
  // Vertical offset 3 split between the two images: (3^2) / 2.
  EXPECT_NEAR(residuals[0], 4.5, 1e-12);
}

TEST(FundamentalMatrix, LoRansacWithOutliersAndNoise) {
  TwoViewSceneOptions options;
  options.num_points = 300;
  options.outlier_ratio = 0.3;
  options.noise_px = 0.5;
  const TwoViewScene scene = MakeTwoViewScene(options);
  RansacOptions ransac;
  ransac.max_error = 3;
  const auto report =
      LoRansac<FundamentalMatrixSevenPointEstimator, FundamentalMatrixEightPointEstimator>(ransac)
          .Estimate(scene.pixels1, scene.pixels2);
  ASSERT_TRUE(report.success);
  size_t true_inliers_kept = 0, outliers_kept = 0;
  for (size_t i = 0; i < scene.is_inlier.size(); ++i) {
    if (!report.inlier_mask[i]) continue;
    (scene.is_inlier[i] ? true_inliers_kept : outliers_kept) += 1;
  }
  EXPECT_GE(true_inliers_kept, 205u);  // of 210
  EXPECT_LE(outliers_kept, 10u);       // a random outlier can fall near its epipolar line
}

}  // namespace
}  // namespace edgesfm

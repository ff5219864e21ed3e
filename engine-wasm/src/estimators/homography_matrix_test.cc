#include "estimators/homography_matrix.h"

#include <gtest/gtest.h>

#include "estimators/loransac.h"
#include "estimators/synthetic_two_view_scene.h"

namespace edgesfm {
namespace {

using testing_support::MakeTwoViewScene;
using testing_support::ProjectiveDistance;
using testing_support::TwoViewScene;
using testing_support::TwoViewSceneOptions;

// The homography induced by the plane z = 6 (n = (0, 0, 1), d = 6) in cam1's frame:
// H = K (R + t n^T / d) K^-1.
Eigen::Matrix3d PlaneHomography(const TwoViewScene& scene) {
  const Eigen::Matrix3d R = scene.cam2_from_cam1.rotation.toRotationMatrix();
  const Eigen::Matrix3d Hn =
      R + scene.cam2_from_cam1.translation * Eigen::Vector3d(0, 0, 1).transpose() / 6.0;
  return scene.K * Hn * scene.K.inverse();
}

TEST(HomographyMatrix, FourPointsGiveThePlaneHomography) {
  TwoViewSceneOptions options;
  options.num_points = 4;
  options.planar = true;
  for (uint32_t seed = 0; seed < 10; ++seed) {
    options.seed = seed;
    const TwoViewScene scene = MakeTwoViewScene(options);
    std::vector<Eigen::Matrix3d> models;
    HomographyMatrixEstimator::Estimate(scene.pixels1, scene.pixels2, &models);
    ASSERT_EQ(models.size(), 1u);
    EXPECT_LT(ProjectiveDistance(models[0], PlaneHomography(scene)), 1e-6) << "seed " << seed;
  }
}

TEST(HomographyMatrix, TransferResiduals) {
  Eigen::Matrix3d H = Eigen::Matrix3d::Identity();
  H(0, 2) = 10;  // shift by 10 px in x
  std::vector<double> residuals;
  HomographyMatrixEstimator::Residuals({{1, 2}, {5, 5}}, {{11, 2}, {15, 8}}, H, &residuals);
  EXPECT_NEAR(residuals[0], 0, 1e-12);
  EXPECT_NEAR(residuals[1], 9, 1e-12);
}

TEST(HomographyMatrix, LoRansacOnAPlaneWithOutliers) {
  TwoViewSceneOptions options;
  options.num_points = 200;
  options.planar = true;
  options.outlier_ratio = 0.3;
  options.noise_px = 0.5;
  const TwoViewScene scene = MakeTwoViewScene(options);
  RansacOptions ransac;
  ransac.max_error = 3;
  const auto report =
      LoRansac<HomographyMatrixEstimator>(ransac).Estimate(scene.pixels1, scene.pixels2);
  ASSERT_TRUE(report.success);
  EXPECT_LT(ProjectiveDistance(report.model, PlaneHomography(scene)), 1e-2);
  EXPECT_GE(report.support.num_inliers, 135u);
  EXPECT_LE(report.support.num_inliers, 145u);
}

}  // namespace
}  // namespace edgesfm

#include "estimators/two_view_geometry.h"

#include <gtest/gtest.h>

#include "estimators/synthetic_two_view_scene.h"

namespace edgesfm {
namespace {

using testing_support::MakeTwoViewScene;
using testing_support::TwoViewScene;
using testing_support::TwoViewSceneOptions;

Camera SceneCamera(const TwoViewSceneOptions& options, bool known_intrinsics) {
  Camera camera =
      Camera::CreateFromModelId(1, CameraModelId::kPinhole, options.focal,
                                static_cast<int>(options.width), static_cast<int>(options.height));
  camera.has_prior_focal_length = known_intrinsics;
  return camera;
}

FeatureMatches IdentityMatches(size_t n) {
  FeatureMatches matches;
  for (point2D_t i = 0; i < n; ++i) matches.emplace_back(i, i);
  return matches;
}

double RotationErrorDeg(const Rigid3d& a, const Rigid3d& b) {
  return a.rotation.angularDistance(b.rotation) * 180 / M_PI;
}

double TranslationAngleDeg(const Rigid3d& a, const Rigid3d& b) {
  const double c = a.translation.normalized().dot(b.translation.normalized());
  return std::acos(std::clamp(c, -1.0, 1.0)) * 180 / M_PI;
}

struct Outcome {
  TwoViewGeometry geometry;
  size_t true_inliers_kept = 0, outliers_kept = 0, num_true_inliers = 0;
};

Outcome Verify(const TwoViewScene& scene, const Camera& camera,
               const TwoViewGeometryOptions& options) {
  Outcome outcome;
  outcome.geometry = EstimateTwoViewGeometry(camera, scene.pixels1, camera, scene.pixels2,
                                             IdentityMatches(scene.pixels1.size()), options);
  for (const bool inlier : scene.is_inlier) outcome.num_true_inliers += inlier;
  for (const auto& [idx1, idx2] : outcome.geometry.inlier_matches) {
    (scene.is_inlier[idx1] ? outcome.true_inliers_kept : outcome.outliers_kept) += 1;
  }
  return outcome;
}

TEST(TwoViewGeometry, GeneralSceneWithKnownIntrinsicsIsCalibrated) {
  TwoViewSceneOptions options;
  options.num_points = 400;
  options.outlier_ratio = 0.3;
  options.noise_px = 0.5;
  for (uint32_t seed = 0; seed < 3; ++seed) {
    options.seed = seed;
    const TwoViewScene scene = MakeTwoViewScene(options);
    const Outcome outcome = Verify(scene, SceneCamera(options, true), TwoViewGeometryOptions());
    const TwoViewGeometry& geometry = outcome.geometry;
    ASSERT_EQ(geometry.type, TwoViewGeometryType::kCalibrated) << "seed " << seed;
    EXPECT_GE(outcome.true_inliers_kept, outcome.num_true_inliers * 99 / 100);
    EXPECT_LE(outcome.outliers_kept, 10u);
    ASSERT_TRUE(geometry.has_pose);
    EXPECT_LT(RotationErrorDeg(geometry.cam2_from_cam1, scene.cam2_from_cam1), 0.1)
        << "seed " << seed;
    EXPECT_LT(TranslationAngleDeg(geometry.cam2_from_cam1, scene.cam2_from_cam1), 2.0)
        << "seed " << seed;
    EXPECT_GT(geometry.tri_angle, 0.05);
  }
}

TEST(TwoViewGeometry, UnknownIntrinsicsGiveUncalibrated) {
  TwoViewSceneOptions options;
  options.num_points = 300;
  options.outlier_ratio = 0.2;
  options.noise_px = 0.5;
  const TwoViewScene scene = MakeTwoViewScene(options);
  const Outcome outcome = Verify(scene, SceneCamera(options, false), TwoViewGeometryOptions());
  EXPECT_EQ(outcome.geometry.type, TwoViewGeometryType::kUncalibrated);
  EXPECT_TRUE(outcome.geometry.has_F);
  EXPECT_FALSE(outcome.geometry.has_E);
  EXPECT_GE(outcome.true_inliers_kept, outcome.num_true_inliers * 98 / 100);
}

TEST(TwoViewGeometry, PlaneIsPlanarWithItsPose) {
  TwoViewSceneOptions options;
  options.num_points = 300;
  options.planar = true;
  options.outlier_ratio = 0.2;
  options.noise_px = 0.3;
  const TwoViewScene scene = MakeTwoViewScene(options);
  const Outcome outcome = Verify(scene, SceneCamera(options, true), TwoViewGeometryOptions());
  EXPECT_EQ(outcome.geometry.type, TwoViewGeometryType::kPlanar);
  ASSERT_TRUE(outcome.geometry.has_pose);
  EXPECT_LT(RotationErrorDeg(outcome.geometry.cam2_from_cam1, scene.cam2_from_cam1), 0.5);
}

TEST(TwoViewGeometry, PureRotationIsPanoramic) {
  TwoViewSceneOptions options;
  options.num_points = 300;
  options.baseline = 0;
  options.outlier_ratio = 0.2;
  options.noise_px = 0.3;
  const TwoViewScene scene = MakeTwoViewScene(options);
  const Outcome outcome = Verify(scene, SceneCamera(options, true), TwoViewGeometryOptions());
  EXPECT_EQ(outcome.geometry.type, TwoViewGeometryType::kPanoramic);
  ASSERT_TRUE(outcome.geometry.has_pose);
  EXPECT_LT(RotationErrorDeg(outcome.geometry.cam2_from_cam1, scene.cam2_from_cam1), 0.2);
  EXPECT_EQ(outcome.geometry.cam2_from_cam1.translation.norm(), 0);
}

TEST(TwoViewGeometry, TooFewOrTooInconsistentMatchesAreDegenerate) {
  TwoViewSceneOptions options;
  options.num_points = 10;
  TwoViewScene scene = MakeTwoViewScene(options);
  EXPECT_EQ(Verify(scene, SceneCamera(options, true), TwoViewGeometryOptions()).geometry.type,
            TwoViewGeometryType::kDegenerate);
  options.num_points = 200;
  options.outlier_ratio = 1.0;
  scene = MakeTwoViewScene(options);
  TwoViewGeometryOptions verify;
  verify.ransac.max_num_trials = 1000;  // pure noise would run every trial
  const Outcome outcome = Verify(scene, SceneCamera(options, true), verify);
  EXPECT_EQ(outcome.geometry.type, TwoViewGeometryType::kDegenerate);
  EXPECT_TRUE(outcome.geometry.inlier_matches.empty());
}

TEST(TwoViewGeometry, MinInlierRatioRejectsWeakPairs) {
  TwoViewSceneOptions options;
  options.num_points = 400;
  options.outlier_ratio = 0.8;  // 80 true matches out of 400
  options.noise_px = 0.3;
  const TwoViewScene scene = MakeTwoViewScene(options);
  TwoViewGeometryOptions verify;
  verify.min_inlier_ratio = 0.25;
  verify.ransac.max_num_trials = 3000;  // keeps the test fast; LO-RANSAC needs few hits
  EXPECT_EQ(Verify(scene, SceneCamera(options, true), verify).geometry.type,
            TwoViewGeometryType::kDegenerate);
  verify.min_inlier_ratio = 0.1;
  EXPECT_EQ(Verify(scene, SceneCamera(options, true), verify).geometry.type,
            TwoViewGeometryType::kCalibrated);
}

TEST(TwoViewGeometry, StaticBorderOverlayIsAWatermark) {
  // Matches that stay put in the image border (a logo or timestamp) while the scene
  // content is absent.
  TwoViewSceneOptions options;
  const Camera camera = SceneCamera(options, true);
  std::vector<Eigen::Vector2d> points1, points2;
  for (int i = 0; i < 60; ++i) {
    const Eigen::Vector2d p(20 + (i % 10) * 7.0, options.height - 60 + (i / 10) * 8.0);
    points1.push_back(p);
    points2.push_back(p + Eigen::Vector2d(0.2 * ((i % 3) - 1), 0));
  }
  const TwoViewGeometry geometry = EstimateTwoViewGeometry(
      camera, points1, camera, points2, IdentityMatches(60), TwoViewGeometryOptions());
  EXPECT_EQ(geometry.type, TwoViewGeometryType::kWatermark);
}

TEST(TwoViewGeometry, TwoIndependentMotionsAreMultiple) {
  TwoViewSceneOptions options;
  options.num_points = 200;
  options.noise_px = 0.3;
  options.seed = 1;
  const TwoViewScene a = MakeTwoViewScene(options);
  options.seed = 2;
  options.rotation_angle = 0.35;
  const TwoViewScene b = MakeTwoViewScene(options);
  std::vector<Eigen::Vector2d> points1 = a.pixels1, points2 = a.pixels2;
  points1.insert(points1.end(), b.pixels1.begin(), b.pixels1.end());
  points2.insert(points2.end(), b.pixels2.begin(), b.pixels2.end());
  TwoViewGeometryOptions verify;
  verify.multiple_models = true;
  verify.min_inlier_ratio = 0.1;
  const Camera camera = SceneCamera(options, true);
  const TwoViewGeometry geometry =
      EstimateTwoViewGeometry(camera, points1, camera, points2, IdentityMatches(400), verify);
  EXPECT_EQ(geometry.type, TwoViewGeometryType::kMultiple);
  EXPECT_GE(geometry.inlier_matches.size(), 390u);
}

TEST(TwoViewGeometry, SameSeedSameResultAndBadIndicesIgnored) {
  TwoViewSceneOptions options;
  options.num_points = 200;
  options.outlier_ratio = 0.4;
  options.noise_px = 0.5;
  const TwoViewScene scene = MakeTwoViewScene(options);
  const Camera camera = SceneCamera(options, true);
  FeatureMatches matches = IdentityMatches(200);
  matches.emplace_back(5000, 1);  // out of range: dropped
  const TwoViewGeometry a = EstimateTwoViewGeometry(camera, scene.pixels1, camera, scene.pixels2,
                                                    matches, TwoViewGeometryOptions());
  const TwoViewGeometry b = EstimateTwoViewGeometry(camera, scene.pixels1, camera, scene.pixels2,
                                                    matches, TwoViewGeometryOptions());
  EXPECT_EQ(a.inlier_matches, b.inlier_matches);
  EXPECT_EQ(a.E, b.E);
  EXPECT_EQ(TwoViewGeometryTypeName(a.type), "calibrated");
}

}  // namespace
}  // namespace edgesfm

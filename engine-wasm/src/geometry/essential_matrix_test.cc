#include "geometry/essential_matrix.h"

#include <gtest/gtest.h>

#include "estimators/essential_matrix.h"
#include "estimators/synthetic_two_view_scene.h"

namespace edgesfm {
namespace {

using testing_support::MakeTwoViewScene;
using testing_support::TwoViewScene;
using testing_support::TwoViewSceneOptions;

double RotationErrorDeg(const Rigid3d& a, const Rigid3d& b) {
  return a.rotation.angularDistance(b.rotation) * 180 / M_PI;
}

double TranslationAngleDeg(const Rigid3d& a, const Rigid3d& b) {
  return std::acos(
             std::clamp(a.translation.normalized().dot(b.translation.normalized()), -1.0, 1.0)) *
         180 / M_PI;
}

TEST(EssentialMatrixGeometry, DecompositionContainsThePose) {
  const Rigid3d truth(
      Eigen::Quaterniond(Eigen::AngleAxisd(0.3, Eigen::Vector3d(1, 2, 3).normalized())),
      Eigen::Vector3d(0.5, -0.2, 0.1));
  Eigen::Matrix3d R1, R2;
  Eigen::Vector3d t;
  DecomposeEssentialMatrix(-2.5 * EssentialMatrixFromPose(truth), &R1, &R2, &t);
  const Eigen::Matrix3d R = truth.rotation.toRotationMatrix();
  EXPECT_LT(std::min((R1 - R).norm(), (R2 - R).norm()), 1e-9);
  EXPECT_NEAR(std::abs(t.dot(truth.translation.normalized())), 1, 1e-9);
}

TEST(EssentialMatrixGeometry, CheiralityPicksTheTruePose) {
  TwoViewSceneOptions options;
  options.num_points = 50;
  for (uint32_t seed = 0; seed < 5; ++seed) {
    options.seed = seed;
    const TwoViewScene scene = MakeTwoViewScene(options);
    const Eigen::Matrix3d E = EssentialMatrixFromPose(scene.cam2_from_cam1);
    Rigid3d pose;
    std::vector<Eigen::Vector3d> points;
    ASSERT_TRUE(PoseFromEssentialMatrix(E, scene.rays1, scene.rays2, &pose, &points));
    EXPECT_EQ(points.size(), 50u);
    EXPECT_LT(RotationErrorDeg(pose, scene.cam2_from_cam1), 1e-6);
    EXPECT_LT(TranslationAngleDeg(pose, scene.cam2_from_cam1), 1e-6);
    // Triangulated points match the scene up to the baseline's scale.
    const double scale = scene.cam2_from_cam1.translation.norm();
    EXPECT_LT((points[0] * scale - scene.points3D[0]).norm(), 1e-6);
  }
}

TEST(EssentialMatrixGeometry, RefinementReducesThePoseError) {
  TwoViewSceneOptions options;
  options.num_points = 200;
  options.noise_px = 0.5;
  options.seed = 3;
  const TwoViewScene scene = MakeTwoViewScene(options);
  // Start from a perturbed pose.
  Rigid3d pose = scene.cam2_from_cam1;
  pose.rotation =
      Eigen::Quaterniond(Eigen::AngleAxisd(0.02, Eigen::Vector3d::UnitY())) * pose.rotation;
  pose.translation = (pose.translation + Eigen::Vector3d(0, 0.1, 0)).normalized();
  ASSERT_TRUE(RefineRelativePose(scene.rays1, scene.rays2, &pose));
  EXPECT_LT(RotationErrorDeg(pose, scene.cam2_from_cam1), 0.05);
  EXPECT_LT(TranslationAngleDeg(pose, scene.cam2_from_cam1), 1.0);
}

TEST(EssentialMatrixGeometry, FundamentalAndEssentialConvertBothWays) {
  Eigen::Matrix3d K1, K2;
  K1 << 800, 0, 320, 0, 810, 240, 0, 0, 1;
  K2 << 1000, 0, 500, 0, 1000, 400, 0, 0, 1;
  const Eigen::Matrix3d E = EssentialMatrixFromPose(
      Rigid3d(Eigen::Quaterniond(Eigen::AngleAxisd(0.1, Eigen::Vector3d::UnitZ())),
              Eigen::Vector3d(1, 0, 0)));
  const Eigen::Matrix3d F = FundamentalFromEssentialMatrix(K2, E, K1);
  EXPECT_LT((EssentialFromFundamentalMatrix(K2, F, K1) - E).norm(), 1e-9);
}

}  // namespace
}  // namespace edgesfm

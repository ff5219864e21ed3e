#include "geometry/homography_matrix.h"

#include <gtest/gtest.h>

#include "estimators/synthetic_two_view_scene.h"

namespace edgesfm {
namespace {

using testing_support::MakeTwoViewScene;
using testing_support::TwoViewScene;
using testing_support::TwoViewSceneOptions;

TEST(HomographyDecomposition, RecoversThePoseOfAPlanarScene) {
  TwoViewSceneOptions options;
  options.num_points = 60;
  options.planar = true;
  for (uint32_t seed = 0; seed < 10; ++seed) {
    options.seed = seed;
    const TwoViewScene scene = MakeTwoViewScene(options);
    // Plane z = 6 in camera 1: n^T x = 1 with n = (0, 0, 1/6).
    const Eigen::Matrix3d R = scene.cam2_from_cam1.rotation.toRotationMatrix();
    const Eigen::Matrix3d H =
        scene.K *
        (R + scene.cam2_from_cam1.translation * Eigen::Vector3d(0, 0, 1.0 / 6).transpose()) *
        scene.K.inverse();
    Rigid3d pose;
    Eigen::Vector3d normal;
    std::vector<Eigen::Vector3d> points;
    ASSERT_TRUE(PoseFromHomographyMatrix(3.0 * H, scene.K, scene.K, scene.rays1, scene.rays2, &pose,
                                         &normal, &points));
    EXPECT_LT(pose.rotation.angularDistance(scene.cam2_from_cam1.rotation), 1e-6)
        << "seed " << seed;
    // The translation comes scaled by the plane distance (t / d).
    EXPECT_LT((pose.translation - scene.cam2_from_cam1.translation / 6).norm(), 1e-6)
        << "seed " << seed;
    EXPECT_EQ(points.size(), 60u);
  }
}

TEST(HomographyDecomposition, PureRotationHasNoTranslation) {
  const Eigen::Matrix3d R =
      Eigen::AngleAxisd(0.3, Eigen::Vector3d(0.2, 1, 0).normalized()).toRotationMatrix();
  Eigen::Matrix3d K;
  K << 900, 0, 400, 0, 900, 300, 0, 0, 1;
  std::vector<Eigen::Matrix3d> Rs;
  std::vector<Eigen::Vector3d> ts, normals;
  DecomposeHomographyMatrix(K * R * K.inverse(), K, K, &Rs, &ts, &normals);
  ASSERT_EQ(Rs.size(), 1u);
  EXPECT_LT((Rs[0] - R).norm(), 1e-9);
  EXPECT_EQ(ts[0], Eigen::Vector3d::Zero());
}

}  // namespace
}  // namespace edgesfm

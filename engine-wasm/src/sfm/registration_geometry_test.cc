#include "sfm/registration_geometry.h"

#include <gtest/gtest.h>

#include <random>

#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

TEST(RegistrationGeometry, RelativePoseOfTwoViewsUpToScale) {
  SyntheticDatasetOptions options;
  options.num_images = 2;
  options.arc_step = 0.3;
  options.outlier_match_ratio = 0.3;
  const SyntheticDataset data = SynthesizeDataset(options);
  const auto matches = data.correspondence_graph.FindCorrespondencesBetweenImages(1, 2);
  std::vector<Eigen::Vector2d> p1, p2;
  for (const auto& [a, b] : matches) {
    p1.push_back(data.input.ImageAt(1).Point2DAt(a).xy);
    p2.push_back(data.input.ImageAt(2).Point2DAt(b).xy);
  }
  RelativePoseResult result;
  ASSERT_TRUE(EstimateRelativePose(data.truth.CameraAt(1), data.truth.CameraAt(1), p1, p2, 2.0, 7,
                                   &result));
  const Rigid3d& pose1 = data.truth.ImageAt(1).cam_from_world;
  const Rigid3d truth = data.truth.ImageAt(2).cam_from_world * Inverse(pose1);
  EXPECT_LT(result.cam2_from_cam1.rotation.angularDistance(truth.rotation) * 180 / M_PI, 0.5);
  EXPECT_GT(result.cam2_from_cam1.translation.dot(truth.translation.normalized()), 0.99);
  EXPECT_GE(result.num_inliers, matches.size() / 1.3 * 0.95);
}

TEST(RegistrationGeometry, AbsolutePoseWithOutliersAndUnknownFocalLength) {
  SyntheticDatasetOptions options;
  options.num_images = 3;
  const SyntheticDataset data = SynthesizeDataset(options);
  const Image& image = data.truth.ImageAt(3);
  std::vector<Eigen::Vector2d> points2D;
  std::vector<Eigen::Vector3d> points3D;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (const Point2D& p : image.Points2D()) {
    if (!p.HasPoint3D()) continue;
    points2D.push_back(p.xy);
    // A quarter of the correspondences point to a wrong 3D point.
    points3D.push_back(points2D.size() % 4 == 0
                           ? Eigen::Vector3d(uniform(rng), uniform(rng), uniform(rng))
                           : data.truth.Point3DAt(p.point3D_id).xyz);
  }
  Camera camera = data.truth.CameraAt(1);
  for (bool estimate_focal : {false, true}) {
    if (estimate_focal) camera.SetFocalLength(1.6 * 700);
    AbsolutePoseOptions pose_options;
    pose_options.estimate_focal_length = estimate_focal;
    AbsolutePoseResult result;
    ASSERT_TRUE(EstimateAbsolutePose(pose_options, camera, points2D, points3D, &result));
    EXPECT_GT(result.num_inliers, 0.7 * points2D.size());
    Camera refined = camera;
    refined.SetFocalLength(result.focal_length);
    std::vector<Eigen::Vector2d> in2;
    std::vector<Eigen::Vector3d> in3;
    for (size_t i = 0; i < points2D.size(); ++i) {
      if (result.inlier_mask[i]) {
        in2.push_back(points2D[i]);
        in3.push_back(points3D[i]);
      }
    }
    Rigid3d pose = result.cam_from_world;
    ASSERT_TRUE(RefineAbsolutePose(in2, in3, estimate_focal, estimate_focal, &pose, &refined));
    EXPECT_LT(pose.rotation.angularDistance(image.cam_from_world.rotation) * 180 / M_PI, 0.1);
    EXPECT_LT((ProjectionCenter(pose) - ProjectionCenter(image.cam_from_world)).norm(), 0.05);
    EXPECT_NEAR(refined.MeanFocalLength(), 700, 10);
  }
}

TEST(RegistrationGeometry, AbsolutePoseDrawsAtLeastColmapsMinimumTrials) {
  // Every correspondence fits: adaptive stopping alone would end after a few samples,
  // and on a borderline image (barely abs_pose_min_num_inliers correspondences, noisy
  // far points) an early stop can miss inliers. COLMAP draws at least 100 samples at
  // confidence 0.99999.
  SyntheticDatasetOptions options;
  options.num_images = 3;
  const SyntheticDataset data = SynthesizeDataset(options);
  std::vector<Eigen::Vector2d> points2D;
  std::vector<Eigen::Vector3d> points3D;
  for (const Point2D& p : data.truth.ImageAt(3).Points2D()) {
    if (!p.HasPoint3D()) continue;
    points2D.push_back(p.xy);
    points3D.push_back(data.truth.Point3DAt(p.point3D_id).xyz);
  }
  AbsolutePoseResult result;
  ASSERT_TRUE(EstimateAbsolutePose(AbsolutePoseOptions(), data.truth.CameraAt(1), points2D,
                                   points3D, &result));
  EXPECT_EQ(result.num_inliers, points2D.size());
  EXPECT_GE(result.num_trials, 100u);
}

}  // namespace
}  // namespace edgesfm

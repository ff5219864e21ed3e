#include "sfm/incremental_mapper.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

// A model of the first two images of a synthetic arc, ready to grow. Two cameras: odd
// images use camera 1, even ones camera 2.
struct TwoViewModel {
  SyntheticDataset data;
  Reconstruction model;
  std::unordered_map<image_t, int> num_registrations;
  std::unique_ptr<IncrementalMapper> mapper;
  IncrementalMapperOptions options;

  explicit TwoViewModel(int num_cameras = 2) {
    SyntheticDatasetOptions scene;
    scene.num_images = 6;
    scene.num_cameras = num_cameras;
    data = SynthesizeDataset(scene);
    data.input.SetUp(data.correspondence_graph);
    model = data.input;
    options.init_min_tri_angle = 4;
    mapper = std::make_unique<IncrementalMapper>(&data.correspondence_graph, &data.input, &model,
                                                 &num_registrations);
  }
};

TEST(IncrementalMapper, RegistrationEstimatesABogusSharedCameraAgainFromItsInitialParameters) {
  TwoViewModel m;
  ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
  // Refinement of a small model drove camera 2's distortion out of range.
  m.model.CameraAt(2).params[3] = 5;
  const auto bogus = [&](const Camera& c) {
    return c.HasBogusParams(m.options.min_focal_length_ratio, m.options.max_focal_length_ratio,
                            m.options.max_extra_param);
  };
  ASSERT_TRUE(bogus(m.model.CameraAt(2)));
  // As COLMAP: image 4 (camera 2) registers through image 1's points (image 2's are left
  // out while its camera is bogus), and its registration estimates camera 2 again from
  // the input's parameters instead of rejecting every image of that camera.
  ASSERT_TRUE(m.mapper->RegisterNextImage(m.options, 4));
  EXPECT_FALSE(bogus(m.model.CameraAt(2)));
  EXPECT_NEAR(m.model.CameraAt(2).params[3], 0.02, 0.05);
}

// COLMAP's bounds on refined intrinsics guard the adjustments too: a camera that a bundle
// adjustment drives out of them (here the distortion the two views give, about 0.09, is beyond a
// max_extra_param of 0.01) is put back where it was and held while the rest is adjusted; within
// the bounds the same adjustment refines it.
TEST(IncrementalMapper, AnAdjustmentThatMakesACameraBogusHoldsItInstead) {
  for (const double max_extra_param : {1.0, 0.01}) {
    TwoViewModel m;
    for (camera_t id : {1, 2}) {
      m.data.input.CameraAt(id).params[3] = 0;
      m.model.CameraAt(id).params[3] = 0;
    }
    m.options.max_extra_param = max_extra_param;
    ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
    ASSERT_TRUE(m.mapper->AdjustGlobalBundle(m.options, ReconstructionBundleAdjustmentOptions()));
    for (camera_t id : {1, 2}) {
      const Camera& camera = m.model.CameraAt(id);
      EXPECT_FALSE(camera.HasBogusParams(m.options.min_focal_length_ratio,
                                         m.options.max_focal_length_ratio, max_extra_param));
      if (max_extra_param < 0.02) {
        EXPECT_EQ(camera.params[3], 0);
        EXPECT_EQ(camera.params[0], 700);
      } else {
        // Refined (two views fix a distortion of each camera's own only loosely).
        EXPECT_GT(std::abs(camera.params[3]), 0.01);
        EXPECT_LE(std::abs(camera.params[3]), max_extra_param);
      }
    }
    // Either way the poses are adjusted: the model still reprojects its points well.
    m.model.UpdatePoint3DErrors();
    double sum = 0;
    for (const auto& [id, point] : m.model.Points3D()) sum += point.error;
    EXPECT_LT(sum / m.model.NumPoints3D(), max_extra_param < 0.02 ? 3.0 : 1.0);
  }
}

TEST(IncrementalMapper, ImagesOfASmallModelAreNotFilteredForTheirCamera) {
  TwoViewModel m;
  ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
  m.model.CameraAt(1).params[0] =
      50 * std::max(m.model.CameraAt(1).width, m.model.CameraAt(1).height);
  // Under 20 images the intrinsics are still settling (COLMAP): both images stay.
  EXPECT_EQ(m.mapper->FilterImages(m.options), 0u);
  EXPECT_EQ(m.model.NumRegImages(), 2u);
}

// With more inliers demanded than the two-view model has points, image 3 can register only
// through the epipolar check: its PnP pose is accepted on half the inliers because the
// essential matrix it makes with its best-matched registered image explains their matches.
TEST(IncrementalMapper, AnImageWithFewInliersRegistersWhenItsEpipolarGeometryAgrees) {
  for (const bool epipolar_check : {false, true}) {
    TwoViewModel m;
    ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
    m.options.abs_pose_min_num_inliers = static_cast<int>(m.model.NumPoints3D()) + 1;
    if (!epipolar_check) m.options.abs_pose_epipolar_min_num_matches = 1 << 30;
    EXPECT_EQ(m.mapper->RegisterNextImage(m.options, 3), epipolar_check);
  }
}

TEST(IncrementalMapper, EpipolarSupportAcceptsTheTruePoseAndRejectsAWrongOne) {
  TwoViewModel m;
  ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
  ASSERT_TRUE(m.mapper->RegisterNextImage(m.options, 3));
  const Image& image = m.model.ImageAt(3);
  const Camera& camera = m.model.CameraAt(image.camera_id);
  const auto [partner, num_matches] = m.mapper->BestMatchedRegisteredImage(3);
  EXPECT_TRUE(partner == 1 || partner == 2);
  EXPECT_GT(num_matches, 100u);
  EXPECT_GT(m.mapper->EpipolarSupport(3, image.cam_from_world, camera, partner, 4.0), 0.95);
  // Tilted by 3 degrees about the camera's x axis, across the arc's (horizontal) epipolar
  // lines: the matches no longer fit. (A turn along the epipolar lines would: that part of
  // the pose is the PnP inliers' to check.)
  Rigid3d turned = image.cam_from_world;
  turned.rotation =
      Eigen::Quaterniond(Eigen::AngleAxisd(3 * M_PI / 180, Eigen::Vector3d::UnitX())) *
      turned.rotation;
  EXPECT_LT(m.mapper->EpipolarSupport(3, turned, camera, partner, 4.0), 0.2);
}

// Per-image cameras: image 3's camera is estimated with it. With more inliers demanded than
// the two-view model has points, it registers through the epipolar check (which takes the
// essential matrix through the estimated camera) or not at all.
TEST(IncrementalMapper, AnImageOfItsOwnCameraWithFewInliersRegistersWhenItsEpipolarGeometryAgrees) {
  for (const bool epipolar_check : {false, true}) {
    TwoViewModel m(/*num_cameras=*/6);
    ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
    m.options.abs_pose_min_num_inliers = static_cast<int>(m.model.NumPoints3D()) + 1;
    if (!epipolar_check) m.options.abs_pose_epipolar_min_num_matches = 1 << 30;
    ASSERT_EQ(m.mapper->RegisterNextImage(m.options, 3), epipolar_check);
    if (epipolar_check) EXPECT_NEAR(m.model.CameraAt(3).params[0], 700, 70);
  }
}

}  // namespace
}  // namespace edgesfm

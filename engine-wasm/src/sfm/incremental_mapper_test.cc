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

  TwoViewModel() {
    SyntheticDatasetOptions scene;
    scene.num_images = 6;
    scene.num_cameras = 2;
    data = SynthesizeDataset(scene);
    data.input.SetUp(data.correspondence_graph);
    model = data.input;
    options.init_min_tri_angle = 4;
    mapper = std::make_unique<IncrementalMapper>(&data.correspondence_graph, &data.input, &model, &num_registrations);
  }
};

TEST(IncrementalMapper, RegistrationEstimatesABogusSharedCameraAgainFromItsInitialParameters) {
  TwoViewModel m;
  ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
  // Refinement of a small model drove camera 2's distortion out of range.
  m.model.CameraAt(2).params[3] = 5;
  const auto bogus = [&](const Camera& c) {
    return c.HasBogusParams(m.options.min_focal_length_ratio, m.options.max_focal_length_ratio, m.options.max_extra_param);
  };
  ASSERT_TRUE(bogus(m.model.CameraAt(2)));
  // As COLMAP: image 4 (camera 2) registers through image 1's points (image 2's are left
  // out while its camera is bogus), and its registration estimates camera 2 again from
  // the input's parameters instead of rejecting every image of that camera.
  ASSERT_TRUE(m.mapper->RegisterNextImage(m.options, 4));
  EXPECT_FALSE(bogus(m.model.CameraAt(2)));
  EXPECT_NEAR(m.model.CameraAt(2).params[3], 0.02, 0.05);
}

TEST(IncrementalMapper, ImagesOfASmallModelAreNotFilteredForTheirCamera) {
  TwoViewModel m;
  ASSERT_TRUE(m.mapper->RegisterInitialImagePair(m.options, 1, 2));
  m.model.CameraAt(1).params[0] = 50 * std::max(m.model.CameraAt(1).width, m.model.CameraAt(1).height);
  // Under 20 images the intrinsics are still settling (COLMAP): both images stay.
  EXPECT_EQ(m.mapper->FilterImages(m.options), 0u);
  EXPECT_EQ(m.model.NumRegImages(), 2u);
}

}  // namespace
}  // namespace edgesfm

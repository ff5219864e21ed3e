#include "sfm/incremental_pipeline.h"

#include <gtest/gtest.h>

#include "geometry/sim3.h"
#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

// The dataset's input with cameras reset to COLMAP's guess without EXIF: focal length
// 1.2 x the larger image side, no distortion.
Reconstruction UncalibratedInput(const SyntheticDataset& data) {
  Reconstruction input = data.input;
  for (const auto& [id, camera] : data.input.Cameras()) {
    input.CameraAt(id) =
        Camera::CreateFromModelId(id, camera.model_id, 1.2 * std::max(camera.width, camera.height), camera.width, camera.height);
  }
  return input;
}

struct Accuracy {
  size_t num_registered = 0;
  double max_rotation_error_deg = 0;
  double max_center_error_fraction = 0;
};

// Similarity-aligns the model's camera centres to the truth and measures the errors.
Accuracy Measure(const Reconstruction& model, const Reconstruction& truth) {
  std::vector<Eigen::Vector3d> src, dst;
  for (image_t id : model.RegImageIds()) {
    src.push_back(model.ImageAt(id).ProjectionCenter());
    dst.push_back(truth.ImageAt(id).ProjectionCenter());
  }
  Accuracy a;
  a.num_registered = src.size();
  Sim3d truth_from_model;
  if (src.size() < 3 || !EstimateSim3d(src, dst, &truth_from_model)) return a;
  double extent = 0;
  for (const auto& c1 : dst) {
    for (const auto& c2 : dst) extent = std::max(extent, (c1 - c2).norm());
  }
  for (size_t i = 0; i < src.size(); ++i) {
    const image_t id = model.RegImageIds()[i];
    const Rigid3d aligned = TransformCameraPose(truth_from_model, model.ImageAt(id).cam_from_world);
    a.max_rotation_error_deg = std::max(
        a.max_rotation_error_deg, aligned.rotation.angularDistance(truth.ImageAt(id).cam_from_world.rotation) * 180 / M_PI);
    a.max_center_error_fraction =
        std::max(a.max_center_error_fraction, (ProjectionCenter(aligned) - dst[i]).norm() / extent);
  }
  return a;
}

SyntheticDatasetOptions SceneOptions() {
  SyntheticDatasetOptions options;
  options.num_images = 8;
  options.num_points3D = 400;
  options.arc_step = 0.15;
  options.outlier_match_ratio = 0.1;
  return options;
}

TEST(IncrementalPipeline, ReconstructsSyntheticSceneFromUncalibratedCameras) {
  SyntheticDataset data = SynthesizeDataset(SceneOptions());
  IncrementalPipelineOptions options;
  options.mapper.init_min_tri_angle = 8;
  IncrementalPipeline pipeline(options, UncalibratedInput(data), data.correspondence_graph);
  pipeline.Run();
  ASSERT_EQ(pipeline.FinishedModels().size(), 1u);
  Reconstruction model = pipeline.FinishedModels()[0];
  const Accuracy a = Measure(model, data.truth);
  EXPECT_EQ(a.num_registered, 8u);
  EXPECT_LT(a.max_rotation_error_deg, 0.1);
  EXPECT_LT(a.max_center_error_fraction, 0.005);
  model.UpdatePoint3DErrors();
  EXPECT_LT(model.ComputeMeanReprojectionError(), 0.5);
  EXPECT_NEAR(model.CameraAt(1).MeanFocalLength(), 700, 7);
  EXPECT_GT(model.NumPoints3D(), 0.9 * data.truth.NumPoints3D());
}

}  // namespace
}  // namespace edgesfm

#include "sfm/global_mapper.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <random>

#include "sfm/incremental_pipeline.h"
#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

// The truth's rotations, each turned by `noise_deg` about a random axis (rotation averaging's
// error).
std::unordered_map<image_t, Eigen::Quaterniond> Rotations(const Reconstruction& truth,
                                                          double noise_deg, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::unordered_map<image_t, Eigen::Quaterniond> rotations;
  for (image_t id : truth.RegImageIds()) {
    const Eigen::Vector3d axis(normal(rng), normal(rng), normal(rng));
    rotations[id] =
        Eigen::Quaterniond(Eigen::AngleAxisd(noise_deg * M_PI / 180, axis.normalized())) *
        truth.ImageAt(id).cam_from_world.rotation;
  }
  return rotations;
}

struct Errors {
  double max_centre_error = 0;  // fraction of the centres' extent
  double max_rotation_error_deg = 0;
};

Errors Measure(const Reconstruction& model, const Reconstruction& truth) {
  const size_t n = model.NumRegImages();
  Eigen::Matrix3Xd src(3, n), dst(3, n);
  for (size_t i = 0; i < n; ++i) {
    const image_t id = model.RegImageIds()[i];
    src.col(i) = model.ImageAt(id).ProjectionCenter();
    dst.col(i) = truth.ImageAt(id).ProjectionCenter();
  }
  const Eigen::Matrix4d t = Eigen::umeyama(src, dst, true);
  const double scale = t.topLeftCorner<3, 3>().col(0).norm();
  const Eigen::Matrix3d rotation = t.topLeftCorner<3, 3>() / scale;
  double extent = 0;
  for (size_t i = 0; i < n; ++i)
    extent = std::max(extent, (dst.col(i) - dst.rowwise().mean()).norm());
  Errors e;
  for (size_t i = 0; i < n; ++i) {
    const image_t id = model.RegImageIds()[i];
    const Eigen::Vector3d moved = t.topLeftCorner<3, 3>() * src.col(i) + t.topRightCorner<3, 1>();
    e.max_centre_error = std::max(e.max_centre_error, (moved - dst.col(i)).norm() / extent);
    // truth cam_from_world ~ model cam_from_world * rotation^T
    const Eigen::Quaterniond aligned(model.ImageAt(id).cam_from_world.rotation.toRotationMatrix() *
                                     rotation.transpose());
    e.max_rotation_error_deg =
        std::max(e.max_rotation_error_deg,
                 aligned.angularDistance(truth.ImageAt(id).cam_from_world.rotation) * 180 / M_PI);
  }
  return e;
}

TEST(GlobalMapper, PlacesEveryImageOfAnArcAndRefinesIt) {
  SyntheticDatasetOptions scene;
  scene.num_images = 12;
  scene.num_points3D = 400;
  scene.outlier_match_ratio = 0.1;
  const SyntheticDataset data = SynthesizeDataset(scene);
  GlobalMapperOptions options;
  GlobalPositioningSummary summary;
  // One degree of error in every rotation: positioning places the images roughly, the
  // bundle adjustment brings them to the truth.
  Reconstruction model = PositionImages(options, data.input, data.correspondence_graph,
                                        Rotations(data.truth, 1.0, 2), &summary);
  EXPECT_EQ(summary.num_images_in_component, 12u);
  EXPECT_EQ(model.NumRegImages(), 12u);
  EXPECT_GT(model.NumPoints3D(), 100u);
  const Errors positioned = Measure(model, data.truth);
  EXPECT_LT(positioned.max_centre_error, 0.1);

  RefineGlobalModel(options, data.input, data.correspondence_graph, &model);
  EXPECT_EQ(model.NumRegImages(), 12u);
  const Errors refined = Measure(model, data.truth);
  EXPECT_LT(refined.max_centre_error, 0.01);
  EXPECT_LT(refined.max_rotation_error_deg, 0.2);
  EXPECT_LT(model.ComputeMeanReprojectionError(), 1.0);
  EXPECT_GT(model.NumPoints3D(), 300u);
}

TEST(GlobalMapper, RegistersAgainAnImageItsMatchesContradict) {
  SyntheticDatasetOptions scene;
  scene.trajectory = SyntheticTrajectory::kStreet;
  scene.num_images = 12;
  scene.num_cameras = 12;
  scene.num_points3D = 600;
  const SyntheticDataset data = SynthesizeDataset(scene);
  GlobalMapperOptions options;
  Reconstruction model = PositionImages(options, data.input, data.correspondence_graph,
                                        Rotations(data.truth, 0.0, 2), nullptr);
  RefineGlobalModel(options, data.input, data.correspondence_graph, &model);
  ASSERT_EQ(model.NumRegImages(), 12u);
  const std::unordered_map<image_t, int> no_other_models;
  IncrementalMapper mapper(&data.correspondence_graph, &data.input, &model, &no_other_models);
  // A well placed model: nothing to do.
  EXPECT_EQ(ReRegisterContradictedImages(options, data.correspondence_graph, &mapper, &model), 0u);
  // Image 1 at the wrong depth, a third of the street ahead along its viewing direction, with
  // a focal length a fifth short: the matches with its neighbours contradict that pose.
  const double street =
      (model.ImageAt(1).ProjectionCenter() - model.ImageAt(12).ProjectionCenter()).norm();
  Image& image = model.ImageAt(1);
  const Eigen::Vector3d viewing =
      image.cam_from_world.rotation.conjugate() * Eigen::Vector3d::UnitZ();
  const Eigen::Vector3d centre = image.ProjectionCenter() + street / 3 * viewing;
  image.cam_from_world.translation = -(image.cam_from_world.rotation * centre);
  model.CameraAt(image.camera_id).params[0] *= 0.8;
  EXPECT_GT(Measure(model, data.truth).max_centre_error, 0.1);
  EXPECT_EQ(ReRegisterContradictedImages(options, data.correspondence_graph, &mapper, &model), 1u);
  EXPECT_EQ(model.NumRegImages(), 12u);
  const Errors registered = Measure(model, data.truth);
  EXPECT_LT(registered.max_centre_error, 0.01);
  EXPECT_LT(registered.max_rotation_error_deg, 0.2);
  EXPECT_NEAR(model.CameraAt(image.camera_id).params[0], scene.focal_length,
              0.02 * scene.focal_length);
}

TEST(GlobalMapper, KeepsTheLargestConnectedPart) {
  SyntheticDatasetOptions scene;
  scene.num_images = 10;
  const SyntheticDataset data = SynthesizeDataset(scene);
  auto rotations = Rotations(data.truth, 0, 1);
  // Image 10 gets no rotation (rotation averaging did not reach it), so it is not placed.
  rotations.erase(10);
  GlobalPositioningSummary summary;
  const Reconstruction model = PositionImages(GlobalMapperOptions(), data.input,
                                              data.correspondence_graph, rotations, &summary);
  EXPECT_EQ(summary.num_images_with_rotation, 9u);
  EXPECT_EQ(model.NumRegImages(), 9u);
  EXPECT_FALSE(model.IsImageRegistered(10));
}

TEST(GlobalMapper, NothingToPlaceWithoutRotations) {
  const SyntheticDataset data = SynthesizeDataset(SyntheticDatasetOptions());
  GlobalPositioningSummary summary;
  Reconstruction model =
      PositionImages(GlobalMapperOptions(), data.input, data.correspondence_graph, {}, &summary);
  EXPECT_EQ(model.NumRegImages(), 0u);
  RefineGlobalModel(GlobalMapperOptions(), data.input, data.correspondence_graph, &model);
  EXPECT_EQ(model.NumRegImages(), 0u);
}

}  // namespace
}  // namespace edgesfm

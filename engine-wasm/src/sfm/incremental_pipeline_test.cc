#include "sfm/incremental_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "geometry/sim3.h"
#include "sfm/mapping_checkpoint.h"
#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

// The dataset's input with cameras reset to COLMAP's guess without EXIF: focal length
// 1.2 x the larger image side, no distortion.
Reconstruction UncalibratedInput(const SyntheticDataset& data) {
  Reconstruction input = data.input;
  for (const auto& [id, camera] : data.input.Cameras()) {
    input.CameraAt(id) =
        Camera::CreateFromModelId(id, camera.model_id, 1.2 * std::max(camera.width, camera.height),
                                  camera.width, camera.height);
  }
  return input;
}

struct Accuracy {
  size_t num_registered = 0;
  double max_rotation_error_deg = 0;
  double max_center_error_fraction = 0;
};

// Similarity-aligns the model to the truth and measures the errors: the rotation from
// the camera orientations (their chordal mean; centres alone leave it free when they lie
// near a line, as along a street), scale and translation from the centres.
Accuracy Measure(const Reconstruction& model, const Reconstruction& truth) {
  std::vector<Eigen::Vector3d> src, dst;
  Eigen::Matrix3d sum = Eigen::Matrix3d::Zero();
  for (image_t id : model.RegImageIds()) {
    src.push_back(model.ImageAt(id).ProjectionCenter());
    dst.push_back(truth.ImageAt(id).ProjectionCenter());
    // truth_from_model world rotation A: R_model = R_truth A.
    sum += truth.ImageAt(id).cam_from_world.rotation.toRotationMatrix().transpose() *
           model.ImageAt(id).cam_from_world.rotation.toRotationMatrix();
  }
  Accuracy a;
  a.num_registered = src.size();
  if (src.size() < 2) return a;
  const Eigen::JacobiSVD<Eigen::Matrix3d> svd(sum, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d rotation = svd.matrixU() * svd.matrixV().transpose();
  if (rotation.determinant() < 0) {
    Eigen::Matrix3d flip = Eigen::Matrix3d::Identity();
    flip(2, 2) = -1;
    rotation = svd.matrixU() * flip * svd.matrixV().transpose();
  }
  Eigen::Vector3d mean_src = Eigen::Vector3d::Zero(), mean_dst = Eigen::Vector3d::Zero();
  for (size_t i = 0; i < src.size(); ++i) {
    mean_src += src[i] / src.size();
    mean_dst += dst[i] / dst.size();
  }
  double dot = 0, var = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    dot += (rotation * (src[i] - mean_src)).dot(dst[i] - mean_dst);
    var += (src[i] - mean_src).squaredNorm();
  }
  const double scale = dot / var;
  const Sim3d truth_from_model(scale, Eigen::Quaterniond(rotation),
                               mean_dst - scale * (rotation * mean_src));
  double extent = 0;
  for (const auto& c1 : dst) {
    for (const auto& c2 : dst) extent = std::max(extent, (c1 - c2).norm());
  }
  for (size_t i = 0; i < src.size(); ++i) {
    const image_t id = model.RegImageIds()[i];
    const Rigid3d aligned = TransformCameraPose(truth_from_model, model.ImageAt(id).cam_from_world);
    a.max_rotation_error_deg = std::max(
        a.max_rotation_error_deg,
        aligned.rotation.angularDistance(truth.ImageAt(id).cam_from_world.rotation) * 180 / M_PI);
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

// Maps the dataset from uncalibrated cameras and expects one model holding every image,
// rotations within 0.1 degree, centres within 0.5% of the extent and the focal length
// (700) within 1%. Answers the model.
Reconstruction ExpectAccurateModel(const SyntheticDataset& data,
                                   const IncrementalPipelineOptions& options) {
  IncrementalPipeline pipeline(options, UncalibratedInput(data), data.correspondence_graph);
  pipeline.Run();
  EXPECT_EQ(pipeline.FinishedModels().size(), 1u);
  if (pipeline.FinishedModels().empty()) return Reconstruction();
  Reconstruction model = pipeline.FinishedModels()[0];
  const Accuracy a = Measure(model, data.truth);
  EXPECT_EQ(a.num_registered, data.truth.NumRegImages());
  EXPECT_LT(a.max_rotation_error_deg, 0.1);
  EXPECT_LT(a.max_center_error_fraction, 0.005);
  EXPECT_NEAR(model.CameraAt(1).MeanFocalLength(), 700, 7);
  return model;
}

TEST(IncrementalPipeline, ReconstructsSyntheticSceneFromUncalibratedCameras) {
  SyntheticDataset data = SynthesizeDataset(SceneOptions());
  IncrementalPipelineOptions options;
  options.mapper.init_min_tri_angle = 8;
  Reconstruction model = ExpectAccurateModel(data, options);
  model.UpdatePoint3DErrors();
  EXPECT_LT(model.ComputeMeanReprojectionError(), 0.5);
  EXPECT_GT(model.NumPoints3D(), 0.9 * data.truth.NumPoints3D());
}

TEST(IncrementalPipeline, InitialPairPassesLiftTheForwardMotionLimitBeforeTheSupportDrops) {
  const std::vector<IncrementalMapperOptions> passes =
      InitialPairPasses(IncrementalMapperOptions());
  // (inliers, angle, forward-motion limit): COLMAP's five passes, each inlier count
  // followed by the pairs beyond the limit, the angle halved from 16 to 2 (filtering: 1.5).
  const std::vector<std::tuple<int, double, double>> expected = {
      {100, 16, 0.95}, {100, 16, 1}, {100, 8, 1}, {100, 4, 1}, {100, 2, 1}, {50, 16, 0.95},
      {50, 8, 0.95},   {50, 16, 1},  {50, 8, 1},  {50, 4, 1},  {50, 2, 1},  {25, 8, 0.95},
      {25, 4, 0.95},   {25, 16, 1},  {25, 8, 1},  {25, 4, 1},  {25, 2, 1}};
  ASSERT_EQ(passes.size(), expected.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    EXPECT_EQ(passes[i].init_min_num_inliers, std::get<0>(expected[i])) << i;
    EXPECT_EQ(passes[i].init_min_tri_angle, std::get<1>(expected[i])) << i;
    EXPECT_EQ(passes[i].init_max_forward_motion, std::get<2>(expected[i])) << i;
    EXPECT_EQ(passes[i].init_min_forward_motion, std::get<2>(expected[i]) == 1 ? 0.95 : 0) << i;
  }
}

TEST(IncrementalPipeline, ReconstructsAStreetWalkedAlongItsViewingDirection) {
  // Every baseline lies along the viewing direction: no pair can pass COLMAP's
  // forward-motion rule with its true pose; the passes that lift it start the model.
  SyntheticDatasetOptions scene;
  scene.trajectory = SyntheticTrajectory::kStreet;
  scene.num_images = 10;
  scene.num_points3D = 600;
  scene.center_jitter = 0.02;
  scene.outlier_match_ratio = 0.1;
  const SyntheticDataset data = SynthesizeDataset(scene);
  size_t forward_pairs = 0;
  for (const auto& [pair_id, pair] : data.correspondence_graph.ImagePairs()) {
    const auto [id1, id2] = PairIdToImagePair(pair_id);
    const Rigid3d relative =
        data.truth.ImageAt(id2).cam_from_world * Inverse(data.truth.ImageAt(id1).cam_from_world);
    forward_pairs += std::abs(relative.translation.normalized().z()) >
                     IncrementalMapperOptions().init_max_forward_motion;
  }
  EXPECT_EQ(forward_pairs, data.correspondence_graph.NumImagePairs());

  ExpectAccurateModel(data, IncrementalPipelineOptions());
}

SyntheticDatasetOptions SmallSceneOptions(uint32_t seed) {
  SyntheticDatasetOptions options;
  options.num_images = 6;
  options.num_points3D = 250;
  options.arc_step = 0.2;
  options.seed = seed;
  return options;
}

IncrementalPipelineOptions SmallPipelineOptions() {
  IncrementalPipelineOptions options;
  options.mapper.init_min_tri_angle = 8;
  options.mapper.init_min_num_inliers = 50;
  options.min_model_size = 3;
  options.seed = 42;
  return options;
}

double MaxPoseDifference(const Reconstruction& a, const Reconstruction& b) {
  double d = 0;
  for (image_t id : a.RegImageIds()) {
    d = std::max(
        d, (a.ImageAt(id).cam_from_world.translation - b.ImageAt(id).cam_from_world.translation)
               .norm());
  }
  return d;
}

TEST(IncrementalPipeline, SameSeedSameResultAndCheckpointResumesIdentically) {
  const SyntheticDataset data = SynthesizeDataset(SmallSceneOptions(3));
  const IncrementalPipelineOptions options = SmallPipelineOptions();
  IncrementalPipeline straight(options, UncalibratedInput(data), data.correspondence_graph);
  straight.Run();
  IncrementalPipeline again(options, UncalibratedInput(data), data.correspondence_graph);
  again.Run();
  ASSERT_EQ(straight.FinishedModels().size(), 1u);
  EXPECT_EQ(straight.FinishedModels()[0].RegImageIds(), again.FinishedModels()[0].RegImageIds());
  EXPECT_EQ(MaxPoseDifference(straight.FinishedModels()[0], again.FinishedModels()[0]), 0.0);

  // Interrupt after three steps (initial pair + two registrations), serialise, and resume
  // in a fresh pipeline fed the same input.
  IncrementalPipeline first(options, UncalibratedInput(data), data.correspondence_graph);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first.Step());
  const std::vector<uint8_t> bytes = SerializeMappingCheckpoint(first.SaveState());
  IncrementalPipeline resumed(options, UncalibratedInput(data), data.correspondence_graph);
  IncrementalPipeline::State state;
  ASSERT_TRUE(DeserializeMappingCheckpoint(bytes, resumed.Input(), &state));
  EXPECT_EQ(state.current.NumRegImages(), 4u);
  // The restored model keeps its point ids and their numbering.
  EXPECT_EQ(state.current.Point3DIds(), first.SaveState().current.Point3DIds());
  EXPECT_EQ(state.current.MaxPoint3DId(), first.SaveState().current.MaxPoint3DId());
  resumed.RestoreState(std::move(state));
  resumed.Run();
  ASSERT_EQ(resumed.FinishedModels().size(), 1u);
  EXPECT_EQ(resumed.FinishedModels()[0].RegImageIds(), straight.FinishedModels()[0].RegImageIds());
  EXPECT_LT(MaxPoseDifference(resumed.FinishedModels()[0], straight.FinishedModels()[0]), 1e-6);
  EXPECT_EQ(resumed.FinishedModels()[0].Point3DIds(), straight.FinishedModels()[0].Point3DIds());

  // Corrupt or foreign bytes are refused.
  std::vector<uint8_t> broken = bytes;
  broken.resize(broken.size() / 2);
  EXPECT_FALSE(DeserializeMappingCheckpoint(broken, resumed.Input(), &state));
}

TEST(IncrementalPipeline, DisconnectedScenesBecomeSeparateModels) {
  // Two scenes without matches between them, in one input.
  const SyntheticDataset a = SynthesizeDataset(SmallSceneOptions(5));
  const SyntheticDataset b = SynthesizeDataset(SmallSceneOptions(6));
  Reconstruction input = UncalibratedInput(a);
  Camera second_camera = input.CameraAt(1);
  second_camera.camera_id = 2;
  input.AddCamera(second_camera);
  std::vector<ImagePairMatches> pairs;
  const image_t offset = 100;
  for (const SyntheticDataset* data : {&a, &b}) {
    const image_t shift = data == &a ? 0 : offset;
    if (shift) {
      for (const auto& [id, image] : data->input.Images()) {
        Image copy = image;
        copy.image_id = id + shift;
        copy.camera_id = 2;
        input.AddImage(copy);
      }
    }
    for (const auto& [pair_id, pair] : data->correspondence_graph.ImagePairs()) {
      const auto [id1, id2] = PairIdToImagePair(pair_id);
      pairs.push_back({id1 + shift, id2 + shift,
                       data->correspondence_graph.FindCorrespondencesBetweenImages(id1, id2)});
    }
  }
  IncrementalPipelineOptions options = SmallPipelineOptions();
  options.snapshot_frames_freq = 4;
  const CorrespondenceGraph graph = BuildCorrespondenceGraph(input, pairs, options.min_num_matches);
  IncrementalPipeline pipeline(options, input, graph);
  int snapshots = 0;
  pipeline.Run([&](const IncrementalPipeline& p) {
    snapshots += 1;
    EXPECT_EQ(p.NumRegistrations() % 4, 0u);
    EXPECT_FALSE(p.Models().empty());
  });
  ASSERT_EQ(pipeline.FinishedModels().size(), 2u);
  for (const Reconstruction& model : pipeline.FinishedModels()) {
    EXPECT_EQ(model.NumRegImages(), 6u);
    const bool first_scene = model.RegImageIds()[0] < offset;
    for (image_t id : model.RegImageIds()) EXPECT_EQ(id < offset, first_scene);
  }
  EXPECT_EQ(snapshots, 3);  // 12 registrations

  // Below min(min_model_size, 80% of the images), only the first model is kept (COLMAP):
  // a sparse collection still gets a model.
  IncrementalPipelineOptions large = options;
  large.min_model_size = 10;
  IncrementalPipeline sparse(large, input, graph);
  sparse.Run();
  ASSERT_EQ(sparse.FinishedModels().size(), 1u);
  EXPECT_EQ(sparse.FinishedModels()[0].NumRegImages(), 6u);

  // max_num_models = 1 stops after the first model; without multiple_models likewise.
  options.max_num_models = 1;
  IncrementalPipeline capped(options, input, graph);
  capped.Run();
  EXPECT_EQ(capped.FinishedModels().size(), 1u);
}

// Twelve images along an arc, each seeing its neighbours: one model holds them all.
SyntheticDatasetOptions TwelveImageArcOptions() {
  SyntheticDatasetOptions scene = SceneOptions();
  scene.num_images = 12;
  scene.num_points3D = 250;
  scene.arc_step = 0.1;
  return scene;
}

TEST(IncrementalPipeline, LaterModelsStartOutsideEarlierOnesAndStopAtTheOverlap) {
  // Images 1-5 are held by an earlier model (as when it failed to register the others).
  const SyntheticDataset data = SynthesizeDataset(TwelveImageArcOptions());
  IncrementalPipelineOptions options = SmallPipelineOptions();
  options.max_model_overlap = 3;
  IncrementalPipeline pipeline(options, UncalibratedInput(data), data.correspondence_graph);
  IncrementalPipeline::State state = pipeline.SaveState();
  for (image_t id = 1; id <= 5; ++id) state.num_registrations[id] = 1;
  pipeline.RestoreState(std::move(state));
  EXPECT_EQ(pipeline.NumImagesHeld(), 5u);
  EXPECT_EQ(pipeline.NumImagesReachable(), 12u);
  size_t steps = 0;
  while (pipeline.Step()) {
    steps += 1;
    // Progress tells the truth: never all reachable images while work remains.
    EXPECT_LE(pipeline.NumImagesHeld(), pipeline.NumImagesReachable());
  }
  EXPECT_LT(steps, 30u);
  ASSERT_EQ(pipeline.FinishedModels().size(), 1u);
  const Reconstruction& model = pipeline.FinishedModels()[0];
  // Started from images no model held, then stopped once it held max_model_overlap of the
  // earlier model's images: enough to merge, no repetition.
  EXPECT_GT(model.RegImageIds()[0], 5u);
  EXPECT_GT(model.RegImageIds()[1], 5u);
  size_t shared = 0;
  for (image_t id : model.RegImageIds()) shared += id <= 5;
  EXPECT_EQ(shared, 3u);
  EXPECT_GE(model.NumRegImages(), 8u);
  // The loop ends once fewer than two images are outside every model.
  EXPECT_EQ(pipeline.NumImagesHeld(), 5 + model.NumRegImages() - shared);
  EXPECT_GE(pipeline.NumImagesHeld(), 11u);
}

TEST(IncrementalPipeline, AnEarlierModelALaterOneHoldsWhollyIsDropped) {
  // An earlier model of images 1-4 (as when it stalled after a weak initial pair); the next
  // model, allowed to overlap it fully, registers all twelve.
  const SyntheticDataset data = SynthesizeDataset(TwelveImageArcOptions());
  IncrementalPipelineOptions options = SmallPipelineOptions();
  options.max_model_overlap = 20;
  const Reconstruction input = UncalibratedInput(data);
  IncrementalPipeline pipeline(options, input, data.correspondence_graph);
  IncrementalPipeline::State state = pipeline.SaveState();
  Reconstruction earlier = input;
  for (image_t id = 1; id <= 4; ++id) {
    earlier.RegisterImage(id);
    state.num_registrations[id] = 1;
  }
  state.models.push_back(earlier);
  pipeline.RestoreState(std::move(state));
  pipeline.Run();
  ASSERT_EQ(pipeline.FinishedModels().size(), 1u);
  EXPECT_EQ(pipeline.FinishedModels()[0].NumRegImages(), 12u);
  EXPECT_EQ(pipeline.NumImagesHeld(), 12u);
  // Each image is counted once: the dropped model's registrations are given back.
  for (image_t id = 1; id <= 12; ++id) EXPECT_EQ(pipeline.SaveState().num_registrations[id], 1);
}

TEST(IncrementalPipeline, RequestFinishKeepsTheCurrentModelAndStartsNoOther) {
  const SyntheticDataset a = SynthesizeDataset(SmallSceneOptions(5));
  IncrementalPipelineOptions options = SmallPipelineOptions();
  IncrementalPipeline pipeline(options, UncalibratedInput(a), a.correspondence_graph);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pipeline.Step());
  const size_t registered = pipeline.Models().back()->NumRegImages();
  pipeline.RequestFinish();
  pipeline.Run();
  EXPECT_TRUE(pipeline.Done());
  ASSERT_EQ(pipeline.FinishedModels().size(), 1u);
  EXPECT_EQ(pipeline.FinishedModels()[0].NumRegImages(), registered);
  EXPECT_EQ(pipeline.NumImagesHeld(), registered);
}

// `model` without the images `dropped` as a model to continue from; its tracks keep every
// element, the dropped images' too (ExtendModel leaves those out).
SeedModel SeedWithout(const Reconstruction& model, const std::vector<image_t>& dropped) {
  SeedModel seed;
  for (const auto& [id, camera] : model.Cameras()) seed.camera_params[id] = camera.params;
  for (image_t id : model.RegImageIds()) {
    if (std::find(dropped.begin(), dropped.end(), id) == dropped.end()) {
      seed.images.emplace_back(id, model.ImageAt(id).cam_from_world);
    }
  }
  for (const auto& [id, point] : model.Points3D()) {
    seed.points.emplace_back(point.xyz, point.track.Elements());
  }
  return seed;
}

TEST(IncrementalPipeline, AModelWithoutSomeImagesIsExtendedByRegisteringThem) {
  // A model of the whole scene with two of its images taken out (as a part of a hierarchical
  // run may lose them): continued from it, the pipeline registers them again and refines.
  const SyntheticDataset data = SynthesizeDataset(SceneOptions());
  IncrementalPipelineOptions options;
  options.mapper.init_min_tri_angle = 8;
  const Reconstruction full = ExpectAccurateModel(data, options);
  const SeedModel seed = SeedWithout(full, {3, 8});
  ASSERT_EQ(seed.images.size(), data.truth.NumRegImages() - 2);

  options.multiple_models = false;
  IncrementalPipeline pipeline(options, UncalibratedInput(data), data.correspondence_graph);
  const size_t left_out = pipeline.ExtendModel(seed);
  // Every observation of images 3 and 8 is left out, and with them points seen only twice.
  size_t expected = 0;
  for (const auto& [id, point] : full.Points3D()) {
    size_t kept = 0;
    for (const TrackElement& e : point.track.Elements()) kept += e.image_id != 3 && e.image_id != 8;
    expected += kept >= 2 ? point.track.Length() - kept : point.track.Length();
  }
  EXPECT_EQ(left_out, expected);
  EXPECT_EQ(pipeline.phase(), IncrementalPipeline::Phase::kGrowModel);
  EXPECT_EQ(pipeline.Models().size(), 1u);
  EXPECT_EQ(pipeline.Models()[0]->NumRegImages(), data.truth.NumRegImages() - 2);
  pipeline.Run();
  ASSERT_EQ(pipeline.FinishedModels().size(), 1u);
  const Reconstruction& model = pipeline.FinishedModels()[0];
  const Accuracy a = Measure(model, data.truth);
  EXPECT_EQ(a.num_registered, data.truth.NumRegImages());
  EXPECT_LT(a.max_rotation_error_deg, 0.1);
  EXPECT_LT(a.max_center_error_fraction, 0.005);
  // The model continued: the seed's frame is kept (no new initial pair), poses within 1% of
  // the extent of the camera centres.
  double extent = 0;
  for (image_t i : full.RegImageIds()) {
    for (image_t j : full.RegImageIds()) {
      extent = std::max(
          extent, (full.ImageAt(i).ProjectionCenter() - full.ImageAt(j).ProjectionCenter()).norm());
    }
  }
  EXPECT_LT(MaxPoseDifference(full, model), 0.01 * extent);

  // Only before the first step, and only of the input's images and cameras.
  EXPECT_THROW(pipeline.ExtendModel(seed), std::invalid_argument);
  IncrementalPipeline other(options, UncalibratedInput(data), data.correspondence_graph);
  SeedModel unknown = seed;
  unknown.images.emplace_back(99, Rigid3d());
  EXPECT_THROW(other.ExtendModel(unknown), std::invalid_argument);
  SeedModel wrong_params = seed;
  wrong_params.camera_params[1].push_back(0);
  EXPECT_THROW(other.ExtendModel(wrong_params), std::invalid_argument);
}

TEST(IncrementalPipeline, GivenInitialPairStartsTheModel) {
  const SyntheticDataset data = SynthesizeDataset(SmallSceneOptions(8));
  IncrementalPipelineOptions options = SmallPipelineOptions();
  options.init_image_id1 = 2;
  options.init_image_id2 = 5;
  IncrementalPipeline pipeline(options, UncalibratedInput(data), data.correspondence_graph);
  pipeline.Run();
  ASSERT_EQ(pipeline.FinishedModels().size(), 1u);
  const auto& reg = pipeline.FinishedModels()[0].RegImageIds();
  ASSERT_GE(reg.size(), 2u);
  EXPECT_EQ(reg[0], 2u);
  EXPECT_EQ(reg[1], 5u);
  EXPECT_EQ(reg.size(), 6u);
}

TEST(IncrementalPipeline, PairsBelowMinNumMatchesOrWithoutGeometryAreIgnored) {
  const SyntheticDataset data = SynthesizeDataset(SmallSceneOptions(9));
  std::vector<ImagePairMatches> pairs;
  for (const auto& [pair_id, pair] : data.correspondence_graph.ImagePairs()) {
    const auto [id1, id2] = PairIdToImagePair(pair_id);
    ImagePairMatches p{id1, id2,
                       data.correspondence_graph.FindCorrespondencesBetweenImages(id1, id2)};
    if (id1 == 1 && id2 == 2) p.type = "degenerate";
    if (id1 == 1 && id2 == 3) p.matches.resize(10);
    pairs.push_back(p);
  }
  const CorrespondenceGraph graph = BuildCorrespondenceGraph(data.input, pairs, 15);
  EXPECT_EQ(graph.NumCorrespondencesBetweenImages(1, 2), 0u);
  EXPECT_EQ(graph.NumCorrespondencesBetweenImages(1, 3), 0u);
  EXPECT_GT(graph.NumCorrespondencesBetweenImages(1, 4), 15u);
}

}  // namespace
}  // namespace edgesfm

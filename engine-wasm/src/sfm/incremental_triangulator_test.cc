#include "sfm/incremental_triangulator.h"

#include <gtest/gtest.h>

#include "sfm/synthetic_dataset.h"

namespace edgesfm {
namespace {

// The input of a synthetic dataset with every image registered at its true pose.
Reconstruction RegisteredAtTruth(const SyntheticDataset& data) {
  Reconstruction reconstruction = data.input;
  for (const auto& [id, image] : data.truth.Images()) {
    reconstruction.ImageAt(id).cam_from_world = image.cam_from_world;
    reconstruction.RegisterImage(id);
  }
  return reconstruction;
}

// Mean distance of each point to the true point of its first observation.
double MeanPointError(const Reconstruction& reconstruction, const SyntheticDataset& data,
                      size_t* num_wrong) {
  double sum = 0;
  *num_wrong = 0;
  for (const auto& [id, point] : reconstruction.Points3D()) {
    const TrackElement& e = point.track.Element(0);
    const point3D_t truth_id = data.truth.ImageAt(e.image_id).Point2DAt(e.point2D_idx).point3D_id;
    if (truth_id == kInvalidPoint3DId) {
      *num_wrong += 1;
      continue;
    }
    // Every observation must belong to the same true point.
    for (const TrackElement& o : point.track.Elements()) {
      if (data.truth.ImageAt(o.image_id).Point2DAt(o.point2D_idx).point3D_id != truth_id)
        *num_wrong += 1;
    }
    sum += (point.xyz - data.truth.Point3DAt(truth_id).xyz).norm();
  }
  return sum / std::max<size_t>(1, reconstruction.NumPoints3D());
}

TEST(IncrementalTriangulator, TriangulatesEveryImageDespiteOutlierMatches) {
  SyntheticDatasetOptions options;
  options.outlier_match_ratio = 0.2;
  const SyntheticDataset data = SynthesizeDataset(options);
  Reconstruction reconstruction = RegisteredAtTruth(data);
  IncrementalTriangulator triangulator(&data.correspondence_graph, &reconstruction);
  IncrementalTriangulatorOptions tri_options;
  for (image_t id : reconstruction.RegImageIds()) triangulator.TriangulateImage(tri_options, id);
  triangulator.CompleteAllTracks(tri_options);
  triangulator.MergeAllTracks(tri_options);
  size_t num_wrong = 0;
  EXPECT_LT(MeanPointError(reconstruction, data, &num_wrong), 0.01);
  // Random outlier matches can only survive when they happen to reproject within 4 px.
  EXPECT_LT(num_wrong, reconstruction.ComputeNumObservations() / 200);
  EXPECT_GT(reconstruction.NumPoints3D(), 0.9 * data.truth.NumPoints3D());
  EXPECT_GT(reconstruction.ComputeMeanTrackLength(), 0.9 * data.truth.ComputeMeanTrackLength());
  EXPECT_EQ(triangulator.ModifiedPoints3D().size(), reconstruction.NumPoints3D());
}

TEST(IncrementalTriangulator, CompletesAndMergesSplitTracks) {
  SyntheticDatasetOptions options;
  options.point2D_noise_px = 0;
  const SyntheticDataset data = SynthesizeDataset(options);
  Reconstruction reconstruction = RegisteredAtTruth(data);
  // One true point, split into two points over disjoint halves of its track.
  const auto& [truth_id, truth_point] = *data.truth.Points3D().begin();
  const auto& elements = truth_point.track.Elements();
  ASSERT_GE(elements.size(), 4u);
  Track first, second;
  for (size_t k = 0; k < elements.size(); ++k)
    (k < elements.size() / 2 ? first : second).AddElement(elements[k]);
  reconstruction.AddPoint3D(truth_point.xyz, first);
  reconstruction.AddPoint3D(truth_point.xyz + Eigen::Vector3d(1e-4, 0, 0), second);
  IncrementalTriangulator triangulator(&data.correspondence_graph, &reconstruction);
  EXPECT_EQ(triangulator.MergeAllTracks(IncrementalTriangulatorOptions()), 1u);
  ASSERT_EQ(reconstruction.NumPoints3D(), 1u);
  EXPECT_EQ(reconstruction.Points3D().begin()->second.track.Length(), elements.size());

  // A point observed in two images gains the rest of its track by completion.
  Reconstruction partial = RegisteredAtTruth(data);
  Track two;
  two.AddElement(elements[0]);
  two.AddElement(elements[1]);
  partial.AddPoint3D(truth_point.xyz, two);
  IncrementalTriangulator completer(&data.correspondence_graph, &partial);
  EXPECT_EQ(completer.CompleteAllTracks(IncrementalTriangulatorOptions()), elements.size() - 2);
}

TEST(IncrementalTriangulator, RetriangulatesUnderReconstructedPairsOnce) {
  SyntheticDatasetOptions options;
  options.num_images = 4;
  const SyntheticDataset data = SynthesizeDataset(options);
  Reconstruction reconstruction = RegisteredAtTruth(data);
  IncrementalTriangulator triangulator(&data.correspondence_graph, &reconstruction);
  IncrementalTriangulatorOptions tri_options;
  auto forget_image4 = [&] {
    for (point2D_t idx = 0; idx < reconstruction.ImageAt(4).NumPoints2D(); ++idx) {
      if (reconstruction.ImageAt(4).Point2DAt(idx).HasPoint3D())
        reconstruction.DeleteObservation(4, idx);
    }
  };
  // Images 1-3 triangulated; image 4's keypoints missed (as after an early, poor pose).
  for (image_t id : {1, 2, 3}) triangulator.TriangulateImage(tri_options, id);
  forget_image4();
  const size_t before = reconstruction.ComputeNumObservations();
  const size_t added = triangulator.Retriangulate(tri_options);
  // Image 4's pairs are revisited: its keypoints join their partners' points.
  EXPECT_GT(reconstruction.ImageAt(4).NumPoints3D(), 0.7 * data.truth.ImageAt(4).NumPoints3D());
  EXPECT_EQ(reconstruction.ComputeNumObservations(), before + added);
  size_t num_wrong = 0;
  EXPECT_LT(MeanPointError(reconstruction, data, &num_wrong), 0.01);
  EXPECT_EQ(num_wrong, 0u);
  // A pair is revisited only while under-reconstructed, and at most once (re_max_trials):
  // with image 4 forgotten again and again, retriangulation runs dry within its 3 pairs.
  size_t calls = 1;
  do {
    forget_image4();
    calls += 1;
  } while (triangulator.Retriangulate(tri_options) > 0 && calls < 10);
  EXPECT_LE(calls, 4u);
}

TEST(IncrementalTriangulator, RejectsPointsWithTooSmallAngle) {
  SyntheticDatasetOptions options;
  options.arc_step = 0.001;  // nearly coincident cameras
  options.center_jitter = 0;
  options.num_images = 3;
  const SyntheticDataset data = SynthesizeDataset(options);
  Reconstruction reconstruction = RegisteredAtTruth(data);
  IncrementalTriangulator triangulator(&data.correspondence_graph, &reconstruction);
  for (image_t id : reconstruction.RegImageIds())
    triangulator.TriangulateImage(IncrementalTriangulatorOptions(), id);
  EXPECT_EQ(reconstruction.NumPoints3D(), 0u);
}

}  // namespace
}  // namespace edgesfm

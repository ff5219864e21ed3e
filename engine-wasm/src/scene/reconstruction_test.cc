#include "scene/reconstruction.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

// Three registered pinhole images on a line looking down +z at points near z = 5; each
// image has one keypoint per point, at its exact projection.
class ReconstructionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reconstruction.AddCamera(Camera::CreateFromModelId(1, CameraModelId::kPinhole, 500, 640, 480));
    points = {{0, 0, 5}, {0.5, 0.2, 5}, {-0.5, -0.3, 6}, {0.2, 0.4, 4}};
    for (image_t image_id = 1; image_id <= 3; ++image_id) {
      Image image;
      image.image_id = image_id;
      image.camera_id = 1;
      image.name = "image" + std::to_string(image_id);
      image.cam_from_world.translation = Eigen::Vector3d(-0.5 * image_id, 0, 0);
      std::vector<Eigen::Vector2d> xys;
      for (const Eigen::Vector3d& point : points) {
        Eigen::Vector2d xy;
        reconstruction.CameraAt(1).ImgFromCam(image.cam_from_world * point, &xy);
        xys.push_back(xy);
      }
      image.SetPoints2D(xys);
      reconstruction.AddImage(image);
      reconstruction.RegisterImage(image_id);
    }
    for (point2D_t idx = 0; idx < points.size(); ++idx) {
      Track track;
      for (image_t image_id = 1; image_id <= 3; ++image_id) track.AddElement(image_id, idx);
      point_ids.push_back(reconstruction.AddPoint3D(points[idx], track));
    }
  }

  Reconstruction reconstruction;
  std::vector<Eigen::Vector3d> points;
  std::vector<point3D_t> point_ids;
};

TEST_F(ReconstructionTest, KeepsTracksAndKeypointsInSync) {
  EXPECT_EQ(reconstruction.NumRegImages(), 3u);
  EXPECT_EQ(reconstruction.NumPoints3D(), 4u);
  EXPECT_EQ(reconstruction.ComputeNumObservations(), 12u);
  EXPECT_DOUBLE_EQ(reconstruction.ComputeMeanTrackLength(), 3);
  EXPECT_DOUBLE_EQ(reconstruction.ComputeMeanObservationsPerRegImage(), 4);
  EXPECT_EQ(reconstruction.ImageAt(2).NumPoints3D(), 4u);
  EXPECT_EQ(reconstruction.ImageAt(2).Point2DAt(1).point3D_id, point_ids[1]);

  reconstruction.DeleteObservation(2, 1);
  EXPECT_EQ(reconstruction.Point3DAt(point_ids[1]).track.Length(), 2u);
  EXPECT_FALSE(reconstruction.ImageAt(2).Point2DAt(1).HasPoint3D());
  // Below two observations the point goes.
  reconstruction.DeleteObservation(3, 1);
  EXPECT_FALSE(reconstruction.ExistsPoint3D(point_ids[1]));
  EXPECT_FALSE(reconstruction.ImageAt(1).Point2DAt(1).HasPoint3D());
  // Re-observing through AddObservation.
  Track track;
  track.AddElement(1, 1);
  track.AddElement(2, 1);
  const point3D_t id = reconstruction.AddPoint3D(points[1], track);
  reconstruction.AddObservation(id, TrackElement(3, 1));
  EXPECT_EQ(reconstruction.Point3DAt(id).track.Length(), 3u);
  EXPECT_THROW(reconstruction.AddObservation(id, TrackElement(3, 1)), std::logic_error);
}

TEST_F(ReconstructionTest, MergeAndDeRegister) {
  reconstruction.DeleteObservation(3, 0);  // point 0: images 1, 2
  reconstruction.DeleteObservation(1, 3);  // point 3: images 2, 3
  reconstruction.DeleteObservation(2, 3);
  EXPECT_FALSE(reconstruction.ExistsPoint3D(point_ids[3]));
  Track track;
  track.AddElement(3, 3);
  track.AddElement(1, 3);
  const point3D_t other = reconstruction.AddPoint3D(points[3], track);
  const point3D_t merged = reconstruction.MergePoints3D(point_ids[0], other);
  EXPECT_EQ(reconstruction.Point3DAt(merged).track.Length(), 4u);
  EXPECT_EQ(reconstruction.ImageAt(3).Point2DAt(3).point3D_id, merged);
  EXPECT_LT((reconstruction.Point3DAt(merged).xyz - 0.5 * (points[0] + points[3])).norm(), 1e-12);

  reconstruction.DeRegisterImage(2);
  EXPECT_EQ(reconstruction.NumRegImages(), 2u);
  EXPECT_EQ(reconstruction.ImageAt(2).NumPoints3D(), 0u);
  EXPECT_EQ(reconstruction.Point3DAt(point_ids[2]).track.Length(), 2u);
}

TEST_F(ReconstructionTest, ErrorsAndFilters) {
  reconstruction.UpdatePoint3DErrors();
  EXPECT_NEAR(reconstruction.ComputeMeanReprojectionError(), 0, 1e-9);
  // Move a point: its observations now reproject far off and are filtered.
  reconstruction.Point3DAt(point_ids[2]).xyz += Eigen::Vector3d(0.3, 0, 0);
  EXPECT_EQ(reconstruction.FilterAllPoints3D(4.0, 0.0), 3u);
  EXPECT_FALSE(reconstruction.ExistsPoint3D(point_ids[2]));
  // A huge minimum triangulation angle removes everything left.
  EXPECT_EQ(reconstruction.FilterAllPoints3D(4.0, 60.0), 9u);
  EXPECT_EQ(reconstruction.NumPoints3D(), 0u);
  // Images without 3D points are filtered out.
  EXPECT_EQ(reconstruction.FilterImages(0.1, 10, 1).size(), 3u);
  EXPECT_EQ(reconstruction.NumRegImages(), 0u);
}

TEST_F(ReconstructionTest, NegativeDepthObservationsAreRemoved) {
  reconstruction.ImageAt(1).cam_from_world.rotation =
      Eigen::Quaterniond(Eigen::AngleAxisd(M_PI, Eigen::Vector3d::UnitY()));
  // Each point loses its image-1 observation and keeps its other two.
  EXPECT_EQ(reconstruction.FilterObservationsWithNegativeDepth(), 4u);
  EXPECT_EQ(reconstruction.ImageAt(1).NumPoints3D(), 0u);
}

TEST_F(ReconstructionTest, TransformKeepsReprojections) {
  reconstruction.Transform(
      Sim3d(2.0, Eigen::Quaterniond(Eigen::AngleAxisd(0.3, Eigen::Vector3d::UnitX())),
            Eigen::Vector3d(1, 2, 3)));
  reconstruction.UpdatePoint3DErrors();
  EXPECT_NEAR(reconstruction.ComputeMeanReprojectionError(), 0, 1e-9);
  const auto [min_xyz, max_xyz] = reconstruction.ComputeBoundingBox();
  EXPECT_TRUE((max_xyz.array() >= min_xyz.array()).all());
}

TEST_F(ReconstructionTest, SetUpCopiesCorrespondenceCounts) {
  CorrespondenceGraph graph;
  for (image_t image_id = 1; image_id <= 3; ++image_id) graph.AddImage(image_id, 4);
  graph.AddCorrespondences(1, 2, {{0, 0}, {1, 1}});
  graph.AddCorrespondences(1, 3, {{0, 0}});
  graph.Finalize();
  reconstruction.SetUp(graph);
  EXPECT_EQ(reconstruction.ImageAt(1).num_observations, 2u);
  EXPECT_EQ(reconstruction.ImageAt(1).num_correspondences, 3u);
}

}  // namespace
}  // namespace edgesfm

// An image: its keypoints (points2D), the camera it was taken with, its pose
// (cam_from_world) and which keypoints have become 3D points (COLMAP's Image).
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "geometry/rigid3.h"
#include "scene/types.h"

namespace edgesfm {

struct Point2D {
  Eigen::Vector2d xy = Eigen::Vector2d::Zero();
  point3D_t point3D_id = kInvalidPoint3DId;
  bool HasPoint3D() const { return point3D_id != kInvalidPoint3DId; }
};

class Image {
 public:
  image_t image_id = kInvalidImageId;
  std::string name;
  camera_t camera_id = kInvalidCameraId;
  Rigid3d cam_from_world;
  // Set by Reconstruction::RegisterImage / DeRegisterImage.
  bool registered = false;

  // Replaces the keypoints (none of them observes a 3D point afterwards).
  void SetPoints2D(const std::vector<Eigen::Vector2d>& xys);
  void SetPoints2D(const std::vector<Point2D>& points2D);
  size_t NumPoints2D() const { return points2D_.size(); }
  const Point2D& Point2DAt(point2D_t idx) const { return points2D_[idx]; }
  const std::vector<Point2D>& Points2D() const { return points2D_; }

  // Number of keypoints that observe a 3D point.
  size_t NumPoints3D() const { return num_points3D_; }
  // Links a keypoint to a 3D point / unlinks it; keeps NumPoints3D() current.
  void SetPoint3DForPoint2D(point2D_t point2D_idx, point3D_t point3D_id);
  void ResetPoint3DForPoint2D(point2D_t point2D_idx);
  bool HasPoint3D(point3D_t point3D_id) const;

  // Observations of this image in the correspondence graph (keypoints with at least one
  // correspondence), filled by Reconstruction::SetUp; the mapper's next-view scores use it.
  size_t num_observations = 0;
  // Total number of correspondences of this image's keypoints.
  size_t num_correspondences = 0;

  Eigen::Vector3d ProjectionCenter() const { return edgesfm::ProjectionCenter(cam_from_world); }
  Eigen::Vector3d ViewingDirection() const { return edgesfm::ViewingDirection(cam_from_world); }

 private:
  std::vector<Point2D> points2D_;
  size_t num_points3D_ = 0;
};

}  // namespace edgesfm

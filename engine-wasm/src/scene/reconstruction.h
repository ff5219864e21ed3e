// A reconstruction: cameras, images with poses, 3D points with tracks, and the set of
// registered images (COLMAP's Reconstruction, data model only; the incremental mapper in
// sfm/ drives it). Invariants kept by every method:
// - a track element (image_id, point2D_idx) of point p <=> image.Point2DAt(idx).point3D_id == p;
// - a 3D point created or kept by these methods has a track of at least one element
//   (DeleteObservation removes points whose track would fall below two).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "geometry/sim3.h"
#include "scene/camera.h"
#include "scene/correspondence_graph.h"
#include "scene/image.h"
#include "scene/point3d.h"
#include "scene/types.h"

namespace edgesfm {

class Reconstruction {
 public:
  // ---- Counts and access ----
  size_t NumCameras() const { return cameras_.size(); }
  size_t NumImages() const { return images_.size(); }
  size_t NumRegImages() const { return reg_image_ids_.size(); }
  size_t NumPoints3D() const { return points3D_.size(); }

  const std::unordered_map<camera_t, Camera>& Cameras() const { return cameras_; }
  const std::unordered_map<image_t, Image>& Images() const { return images_; }
  const std::unordered_map<point3D_t, Point3D>& Points3D() const { return points3D_; }
  // In registration order.
  const std::vector<image_t>& RegImageIds() const { return reg_image_ids_; }
  std::unordered_set<point3D_t> Point3DIds() const;

  bool ExistsCamera(camera_t camera_id) const { return cameras_.count(camera_id) > 0; }
  bool ExistsImage(image_t image_id) const { return images_.count(image_id) > 0; }
  bool ExistsPoint3D(point3D_t point3D_id) const { return points3D_.count(point3D_id) > 0; }
  bool IsImageRegistered(image_t image_id) const;

  // Throw std::out_of_range for unknown ids.
  const Camera& CameraAt(camera_t camera_id) const { return cameras_.at(camera_id); }
  Camera& CameraAt(camera_t camera_id) { return cameras_.at(camera_id); }
  const Image& ImageAt(image_t image_id) const { return images_.at(image_id); }
  Image& ImageAt(image_t image_id) { return images_.at(image_id); }
  const Point3D& Point3DAt(point3D_t point3D_id) const { return points3D_.at(point3D_id); }
  Point3D& Point3DAt(point3D_t point3D_id) { return points3D_.at(point3D_id); }

  // ---- Building ----
  void AddCamera(Camera camera);
  // The image's camera must exist; the image starts unregistered without 3D points.
  void AddImage(Image image);
  // Per-image correspondence statistics from the graph (Image::num_observations and
  // num_correspondences).
  void SetUp(const CorrespondenceGraph& correspondence_graph);

  // Creates a 3D point observed by `track` (each keypoint must not already observe a
  // point); returns its id (ids increase, never reused).
  point3D_t AddPoint3D(
      const Eigen::Vector3d& xyz, Track track,
      const Eigen::Matrix<uint8_t, 3, 1>& color = Eigen::Matrix<uint8_t, 3, 1>::Zero());
  // The same under a given, unused id (a restored checkpoint keeps its ids); later ids
  // continue above it.
  void AddPoint3DWithId(
      point3D_t point3D_id, const Eigen::Vector3d& xyz, Track track,
      const Eigen::Matrix<uint8_t, 3, 1>& color = Eigen::Matrix<uint8_t, 3, 1>::Zero());
  // The largest id ever given to a point (ids are never reused, even after deletion);
  // raising it restores a checkpoint's numbering.
  point3D_t MaxPoint3DId() const { return max_point3D_id_; }
  void RaiseMaxPoint3DId(point3D_t point3D_id) {
    max_point3D_id_ = std::max(max_point3D_id_, point3D_id);
  }
  // Adds one observation to an existing point.
  void AddObservation(point3D_t point3D_id, const TrackElement& element);
  // Merges two points into a new one at the track-length-weighted mean position; returns
  // the new id (both old ids disappear).
  point3D_t MergePoints3D(point3D_t point3D_id1, point3D_t point3D_id2);
  void DeletePoint3D(point3D_t point3D_id);
  // Removes the observation; deletes the point when fewer than two observations remain.
  void DeleteObservation(image_t image_id, point2D_t point2D_idx);

  void RegisterImage(image_t image_id);
  // Unregisters and removes all its observations (points may disappear).
  void DeRegisterImage(image_t image_id);

  // ---- Statistics ----
  size_t ComputeNumObservations() const;
  double ComputeMeanTrackLength() const;
  double ComputeMeanObservationsPerRegImage() const;
  // Mean over points of their stored error (points without one are skipped); see
  // UpdatePoint3DErrors.
  double ComputeMeanReprojectionError() const;
  // Recomputes every point's mean reprojection error in pixels from the current poses,
  // cameras and positions.
  void UpdatePoint3DErrors();
  // Reprojection error in pixels of an observation, or a negative value if the point
  // cannot be imaged (behind the camera).
  double ReprojectionError(point3D_t point3D_id, const TrackElement& element) const;

  // ---- Filtering (COLMAP's outlier rules) ----
  // Among `point3D_ids`, removes observations with reprojection error above
  // `max_reproj_error` pixels or behind their camera, then deletes points whose maximum
  // triangulation angle over their track is below `min_tri_angle_deg`. Returns the
  // number of observations removed (a deleted point counts all its observations).
  size_t FilterPoints3D(double max_reproj_error, double min_tri_angle_deg,
                        const std::unordered_set<point3D_t>& point3D_ids);
  size_t FilterAllPoints3D(double max_reproj_error, double min_tri_angle_deg);
  // Removes observations whose point is behind the camera.
  size_t FilterObservationsWithNegativeDepth();
  // Unregisters images whose camera has bogus parameters (Camera::HasBogusParams) or
  // that observe no 3D point; returns their ids.
  std::vector<image_t> FilterImages(double min_focal_length_ratio, double max_focal_length_ratio,
                                    double max_extra_param);

  // ---- Geometry ----
  // Applies new_from_old to points and poses.
  void Transform(const Sim3d& new_from_old);
  // Registered image pairs' projection centres etc. are left to callers; this gives the
  // bounding box of the points between the given quantiles per axis (robust extent).
  std::pair<Eigen::Vector3d, Eigen::Vector3d> ComputeBoundingBox(double min_quantile = 0,
                                                                 double max_quantile = 1) const;

 private:
  std::unordered_map<camera_t, Camera> cameras_;
  std::unordered_map<image_t, Image> images_;
  std::unordered_map<point3D_t, Point3D> points3D_;
  std::vector<image_t> reg_image_ids_;
  point3D_t max_point3D_id_ = 0;

  // DeleteObservation, returning how many observations disappeared (1, or the whole
  // track when the point goes).
  size_t RemoveObservationCounting(point3D_t point3D_id, const TrackElement& element);
  // The maximum triangulation angle (radians) between any two observing cameras.
  double MaxTriangulationAngle(const Point3D& point3D) const;
};

}  // namespace edgesfm

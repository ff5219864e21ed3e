#include "scene/reconstruction.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "geometry/triangulation.h"

namespace edgesfm {

std::unordered_set<point3D_t> Reconstruction::Point3DIds() const {
  std::unordered_set<point3D_t> ids;
  ids.reserve(points3D_.size());
  for (const auto& entry : points3D_) ids.insert(entry.first);
  return ids;
}

bool Reconstruction::IsImageRegistered(image_t image_id) const {
  const auto it = images_.find(image_id);
  return it != images_.end() && it->second.registered;
}

void Reconstruction::AddCamera(Camera camera) {
  if (!camera.VerifyParams()) throw std::invalid_argument("Reconstruction: camera params");
  const camera_t camera_id = camera.camera_id;
  if (!cameras_.emplace(camera_id, std::move(camera)).second) {
    throw std::invalid_argument("Reconstruction: duplicate camera id");
  }
}

void Reconstruction::AddImage(Image image) {
  if (!ExistsCamera(image.camera_id)) throw std::invalid_argument("Reconstruction: no camera");
  image.registered = false;
  image.SetPoints2D(std::vector<Point2D>(image.Points2D()));
  const image_t image_id = image.image_id;
  if (!images_.emplace(image_id, std::move(image)).second) {
    throw std::invalid_argument("Reconstruction: duplicate image id");
  }
}

void Reconstruction::SetUp(const CorrespondenceGraph& correspondence_graph) {
  for (auto& [image_id, image] : images_) {
    image.num_observations = correspondence_graph.NumObservationsForImage(image_id);
    image.num_correspondences = correspondence_graph.NumCorrespondencesForImage(image_id);
  }
}

point3D_t Reconstruction::AddPoint3D(const Eigen::Vector3d& xyz, Track track,
                                     const Eigen::Matrix<uint8_t, 3, 1>& color) {
  const point3D_t point3D_id = max_point3D_id_ + 1;
  AddPoint3DWithId(point3D_id, xyz, std::move(track), color);
  return point3D_id;
}

void Reconstruction::AddPoint3DWithId(point3D_t point3D_id, const Eigen::Vector3d& xyz, Track track,
                                      const Eigen::Matrix<uint8_t, 3, 1>& color) {
  if (points3D_.count(point3D_id)) throw std::logic_error("Reconstruction: 3D point id in use");
  RaiseMaxPoint3DId(point3D_id);
  for (const TrackElement& element : track.Elements()) {
    Image& image = images_.at(element.image_id);
    if (image.Point2DAt(element.point2D_idx).HasPoint3D()) {
      throw std::logic_error("Reconstruction: keypoint already observes a 3D point");
    }
    image.SetPoint3DForPoint2D(element.point2D_idx, point3D_id);
  }
  Point3D& point3D = points3D_[point3D_id];
  point3D.xyz = xyz;
  point3D.color = color;
  point3D.track = std::move(track);
}

void Reconstruction::AddObservation(point3D_t point3D_id, const TrackElement& element) {
  Image& image = images_.at(element.image_id);
  if (image.Point2DAt(element.point2D_idx).HasPoint3D()) {
    throw std::logic_error("Reconstruction: keypoint already observes a 3D point");
  }
  image.SetPoint3DForPoint2D(element.point2D_idx, point3D_id);
  points3D_.at(point3D_id).track.AddElement(element);
}

point3D_t Reconstruction::MergePoints3D(point3D_t point3D_id1, point3D_t point3D_id2) {
  const Point3D point1 = points3D_.at(point3D_id1);
  const Point3D point2 = points3D_.at(point3D_id2);
  const double weight1 = static_cast<double>(point1.track.Length());
  const double weight2 = static_cast<double>(point2.track.Length());
  const Eigen::Vector3d xyz = (weight1 * point1.xyz + weight2 * point2.xyz) / (weight1 + weight2);
  const Eigen::Matrix<uint8_t, 3, 1> color =
      ((weight1 * point1.color.cast<double>() + weight2 * point2.color.cast<double>()) /
       (weight1 + weight2))
          .array()
          .round()
          .cast<uint8_t>();
  Track track = point1.track;
  track.AddElements(point2.track.Elements());
  DeletePoint3D(point3D_id1);
  DeletePoint3D(point3D_id2);
  return AddPoint3D(xyz, std::move(track), color);
}

void Reconstruction::DeletePoint3D(point3D_t point3D_id) {
  const auto it = points3D_.find(point3D_id);
  if (it == points3D_.end()) return;
  for (const TrackElement& element : it->second.track.Elements()) {
    images_.at(element.image_id).ResetPoint3DForPoint2D(element.point2D_idx);
  }
  points3D_.erase(it);
}

void Reconstruction::DeleteObservation(image_t image_id, point2D_t point2D_idx) {
  Image& image = images_.at(image_id);
  const point3D_t point3D_id = image.Point2DAt(point2D_idx).point3D_id;
  if (point3D_id == kInvalidPoint3DId) return;
  Point3D& point3D = points3D_.at(point3D_id);
  if (point3D.track.Length() <= 2) {
    DeletePoint3D(point3D_id);
    return;
  }
  point3D.track.DeleteElement(image_id, point2D_idx);
  image.ResetPoint3DForPoint2D(point2D_idx);
}

void Reconstruction::RegisterImage(image_t image_id) {
  Image& image = images_.at(image_id);
  if (image.registered) return;
  image.registered = true;
  reg_image_ids_.push_back(image_id);
}

void Reconstruction::DeRegisterImage(image_t image_id) {
  Image& image = images_.at(image_id);
  for (point2D_t idx = 0; idx < image.NumPoints2D(); ++idx) {
    if (image.Point2DAt(idx).HasPoint3D()) DeleteObservation(image_id, idx);
  }
  if (!image.registered) return;
  image.registered = false;
  reg_image_ids_.erase(std::find(reg_image_ids_.begin(), reg_image_ids_.end(), image_id));
}

size_t Reconstruction::ComputeNumObservations() const {
  size_t num_observations = 0;
  for (const auto& entry : points3D_) num_observations += entry.second.track.Length();
  return num_observations;
}

double Reconstruction::ComputeMeanTrackLength() const {
  return points3D_.empty() ? 0.0 : static_cast<double>(ComputeNumObservations()) / points3D_.size();
}

double Reconstruction::ComputeMeanObservationsPerRegImage() const {
  return reg_image_ids_.empty()
             ? 0.0
             : static_cast<double>(ComputeNumObservations()) / reg_image_ids_.size();
}

double Reconstruction::ComputeMeanReprojectionError() const {
  double sum = 0;
  size_t count = 0;
  for (const auto& entry : points3D_) {
    if (!entry.second.HasError()) continue;
    sum += entry.second.error;
    count += 1;
  }
  return count == 0 ? 0.0 : sum / count;
}

double Reconstruction::ReprojectionError(point3D_t point3D_id, const TrackElement& element) const {
  const Image& image = images_.at(element.image_id);
  const Camera& camera = cameras_.at(image.camera_id);
  Eigen::Vector2d projected;
  if (!camera.ImgFromCam(image.cam_from_world * points3D_.at(point3D_id).xyz, &projected)) {
    return -1;
  }
  return (projected - image.Point2DAt(element.point2D_idx).xy).norm();
}

void Reconstruction::UpdatePoint3DErrors() {
  for (auto& [point3D_id, point3D] : points3D_) {
    double sum = 0;
    size_t count = 0;
    for (const TrackElement& element : point3D.track.Elements()) {
      const double error = ReprojectionError(point3D_id, element);
      if (error < 0) continue;
      sum += error;
      count += 1;
    }
    point3D.error = count == 0 ? -1 : sum / count;
  }
}

double Reconstruction::MaxTriangulationAngle(const Point3D& point3D) const {
  std::vector<Eigen::Vector3d> centers;
  centers.reserve(point3D.track.Length());
  for (const TrackElement& element : point3D.track.Elements()) {
    centers.push_back(images_.at(element.image_id).ProjectionCenter());
  }
  double max_angle = 0;
  for (size_t i = 0; i < centers.size(); ++i) {
    for (size_t j = i + 1; j < centers.size(); ++j) {
      max_angle =
          std::max(max_angle, CalculateTriangulationAngle(centers[i], centers[j], point3D.xyz));
    }
  }
  return max_angle;
}

size_t Reconstruction::RemoveObservationCounting(point3D_t point3D_id,
                                                 const TrackElement& element) {
  // Deleting an observation of a two-view point deletes the point with both.
  const size_t before = points3D_.at(point3D_id).track.Length();
  DeleteObservation(element.image_id, element.point2D_idx);
  return ExistsPoint3D(point3D_id) ? before - points3D_.at(point3D_id).track.Length() : before;
}

size_t Reconstruction::FilterPoints3D(double max_reproj_error, double min_tri_angle_deg,
                                      const std::unordered_set<point3D_t>& point3D_ids) {
  size_t num_filtered = 0;
  const double min_tri_angle = min_tri_angle_deg * M_PI / 180;
  for (const point3D_t point3D_id : point3D_ids) {
    if (!ExistsPoint3D(point3D_id)) continue;
    // Observations with a large error (or behind the camera) go first...
    const std::vector<TrackElement> elements = points3D_.at(point3D_id).track.Elements();
    for (const TrackElement& element : elements) {
      if (!ExistsPoint3D(point3D_id)) break;
      const double error = ReprojectionError(point3D_id, element);
      if (error < 0 || error > max_reproj_error) {
        num_filtered += RemoveObservationCounting(point3D_id, element);
      }
    }
    // ...then points whose remaining views barely triangulate them.
    if (!ExistsPoint3D(point3D_id)) continue;
    const Point3D& point3D = points3D_.at(point3D_id);
    if (MaxTriangulationAngle(point3D) < min_tri_angle) {
      num_filtered += point3D.track.Length();
      DeletePoint3D(point3D_id);
    }
  }
  return num_filtered;
}

size_t Reconstruction::FilterAllPoints3D(double max_reproj_error, double min_tri_angle_deg) {
  return FilterPoints3D(max_reproj_error, min_tri_angle_deg, Point3DIds());
}

size_t Reconstruction::FilterObservationsWithNegativeDepth() {
  size_t num_filtered = 0;
  for (const point3D_t point3D_id : Point3DIds()) {
    if (!ExistsPoint3D(point3D_id)) continue;
    const std::vector<TrackElement> elements = points3D_.at(point3D_id).track.Elements();
    for (const TrackElement& element : elements) {
      if (!ExistsPoint3D(point3D_id)) break;
      const Image& image = images_.at(element.image_id);
      const Eigen::Vector3d ray =
          cameras_.at(image.camera_id).CamFromImg(image.Point2DAt(element.point2D_idx).xy);
      if (!HasPointPositiveDepth(image.cam_from_world, ray, points3D_.at(point3D_id).xyz)) {
        num_filtered += RemoveObservationCounting(point3D_id, element);
      }
    }
  }
  return num_filtered;
}

std::vector<image_t> Reconstruction::FilterImages(double min_focal_length_ratio,
                                                  double max_focal_length_ratio,
                                                  double max_extra_param) {
  std::vector<image_t> filtered;
  for (const image_t image_id : std::vector<image_t>(reg_image_ids_)) {
    const Image& image = images_.at(image_id);
    if (image.NumPoints3D() == 0 ||
        cameras_.at(image.camera_id)
            .HasBogusParams(min_focal_length_ratio, max_focal_length_ratio, max_extra_param)) {
      filtered.push_back(image_id);
      DeRegisterImage(image_id);
    }
  }
  return filtered;
}

void Reconstruction::Transform(const Sim3d& new_from_old) {
  for (auto& entry : points3D_) entry.second.xyz = new_from_old * entry.second.xyz;
  for (auto& entry : images_) {
    entry.second.cam_from_world = TransformCameraPose(new_from_old, entry.second.cam_from_world);
  }
}

std::pair<Eigen::Vector3d, Eigen::Vector3d> Reconstruction::ComputeBoundingBox(
    double min_quantile, double max_quantile) const {
  if (points3D_.empty()) return {Eigen::Vector3d::Zero(), Eigen::Vector3d::Zero()};
  std::vector<double> coords[3];
  for (const auto& entry : points3D_) {
    for (int axis = 0; axis < 3; ++axis) coords[axis].push_back(entry.second.xyz[axis]);
  }
  Eigen::Vector3d min_xyz, max_xyz;
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<double>& c = coords[axis];
    std::sort(c.begin(), c.end());
    const auto at = [&](double q) {
      return c[static_cast<size_t>(std::round(q * (c.size() - 1)))];
    };
    min_xyz[axis] = at(min_quantile);
    max_xyz[axis] = at(max_quantile);
  }
  return {min_xyz, max_xyz};
}

}  // namespace edgesfm

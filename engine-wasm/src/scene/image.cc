#include "scene/image.h"

namespace edgesfm {

void Image::SetPoints2D(const std::vector<Eigen::Vector2d>& xys) {
  points2D_.assign(xys.size(), Point2D());
  for (size_t i = 0; i < xys.size(); ++i) points2D_[i].xy = xys[i];
  num_points3D_ = 0;
}

void Image::SetPoints2D(const std::vector<Point2D>& points2D) {
  points2D_ = points2D;
  num_points3D_ = 0;
  for (Point2D& point2D : points2D_) point2D.point3D_id = kInvalidPoint3DId;
}

void Image::SetPoint3DForPoint2D(point2D_t point2D_idx, point3D_t point3D_id) {
  Point2D& point2D = points2D_.at(point2D_idx);
  if (!point2D.HasPoint3D()) num_points3D_ += 1;
  point2D.point3D_id = point3D_id;
}

void Image::ResetPoint3DForPoint2D(point2D_t point2D_idx) {
  Point2D& point2D = points2D_.at(point2D_idx);
  if (point2D.HasPoint3D()) {
    point2D.point3D_id = kInvalidPoint3DId;
    num_points3D_ -= 1;
  }
}

bool Image::HasPoint3D(point3D_t point3D_id) const {
  for (const Point2D& point2D : points2D_) {
    if (point2D.point3D_id == point3D_id) return true;
  }
  return false;
}

}  // namespace edgesfm

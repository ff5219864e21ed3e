#include "estimators/triangulation.h"

#include <cmath>
#include <limits>

#include "geometry/triangulation.h"

namespace edgesfm {

void TriangulationEstimator::Estimate(const std::vector<X_t>& rays,
                                      const std::vector<Y_t>& cams_from_world,
                                      std::vector<M_t>* models) const {
  models->clear();
  Eigen::Vector3d xyz;
  if (!TriangulateMultiViewPoint(cams_from_world, rays, &xyz)) return;
  double max_angle = 0;
  for (size_t i = 0; i < rays.size(); ++i) {
    if (!HasPointPositiveDepth(cams_from_world[i], rays[i], xyz)) return;
    for (size_t j = i + 1; j < rays.size(); ++j) {
      max_angle = std::max(max_angle,
                           CalculateTriangulationAngle(ProjectionCenter(cams_from_world[i]),
                                                       ProjectionCenter(cams_from_world[j]), xyz));
    }
  }
  if (max_angle < min_tri_angle_) return;
  models->push_back(xyz);
}

void TriangulationEstimator::Residuals(const std::vector<X_t>& rays,
                                       const std::vector<Y_t>& cams_from_world, const M_t& xyz,
                                       std::vector<double>* residuals) const {
  residuals->resize(rays.size());
  for (size_t i = 0; i < rays.size(); ++i) {
    const Eigen::Vector3d in_cam = cams_from_world[i] * xyz;
    const Eigen::Vector3d ray = rays[i].normalized();
    (*residuals)[i] = in_cam.dot(ray) <= 0 ? std::numeric_limits<double>::max()
                                           : (in_cam.normalized() - ray).squaredNorm();
  }
}

bool EstimateTriangulation(const TriangulationOptions& options,
                           const std::vector<Eigen::Vector3d>& rays,
                           const std::vector<Rigid3d>& cams_from_world,
                           std::vector<char>* inlier_mask, Eigen::Vector3d* xyz) {
  const TriangulationEstimator estimator(options.min_tri_angle_deg * M_PI / 180);
  const LoRansac<TriangulationEstimator> ransac(options.ransac, estimator, estimator);
  const auto report = ransac.Estimate(rays, cams_from_world);
  if (!report.success) return false;
  *inlier_mask = report.inlier_mask;
  *xyz = report.model;
  return true;
}

}  // namespace edgesfm

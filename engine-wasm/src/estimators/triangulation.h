// Robust triangulation of one track: LO-RANSAC over its observations (COLMAP's
// EstimateTriangulation), each minimal sample of two views triangulated by the
// multi-view least-squares method (geometry/triangulation.h) and accepted only if it lies
// in front of every sampled camera and its triangulation angle reaches the minimum
// (Hartley & Zisserman, "Multiple View Geometry", 2nd ed., sec. 12.2 for the linear
// triangulation; Schonberger & Frahm, "Structure-from-Motion Revisited", CVPR 2016,
// sec. 4.5 for the sampling scheme). The residual is the squared chord between each
// observation's unit ray and the direction to the point (~ squared angle), so the
// threshold is an angle (Camera::CamFromImgThreshold).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "estimators/loransac.h"
#include "geometry/rigid3.h"

namespace edgesfm {

class TriangulationEstimator {
 public:
  using X_t = Eigen::Vector3d;  // viewing ray in the camera
  using Y_t = Rigid3d;          // cam_from_world of that camera
  using M_t = Eigen::Vector3d;  // the point in the world
  static constexpr size_t kMinNumSamples = 2;

  explicit TriangulationEstimator(double min_tri_angle_rad = 0)
      : min_tri_angle_(min_tri_angle_rad) {}

  void Estimate(const std::vector<X_t>& rays, const std::vector<Y_t>& cams_from_world,
                std::vector<M_t>* models) const;
  void Residuals(const std::vector<X_t>& rays, const std::vector<Y_t>& cams_from_world,
                 const M_t& xyz, std::vector<double>* residuals) const;

 private:
  double min_tri_angle_;
};

struct TriangulationOptions {
  double min_tri_angle_deg = 1.5;
  // ransac.max_error is an angle in radians.
  RansacOptions ransac;
};

// Returns false when no point passes; `inlier_mask` marks the observations it explains.
bool EstimateTriangulation(const TriangulationOptions& options,
                           const std::vector<Eigen::Vector3d>& rays,
                           const std::vector<Rigid3d>& cams_from_world,
                           std::vector<char>* inlier_mask, Eigen::Vector3d* xyz);

}  // namespace edgesfm

// Homography x2 ~ H x1 from four or more point correspondences in pixels: the
// normalised direct linear transform, Hartley & Zisserman, "Multiple View Geometry",
// 2nd ed., algorithm 4.2. Residuals are squared transfer errors |x2 - H x1|^2 in image 2
// (as COLMAP's HomographyMatrixEstimator).
#pragma once

#include <Eigen/Core>
#include <vector>

namespace edgesfm {

struct HomographyMatrixEstimator {
  using X_t = Eigen::Vector2d;
  using Y_t = Eigen::Vector2d;
  using M_t = Eigen::Matrix3d;
  static constexpr size_t kMinNumSamples = 4;
  static void Estimate(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                       std::vector<M_t>* models);
  static void Residuals(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                        const M_t& H, std::vector<double>* residuals);
};

}  // namespace edgesfm

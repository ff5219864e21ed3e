// Fundamental matrix from point correspondences in pixels, x2^T F x1 = 0.
// - 7-point: Hartley & Zisserman, "Multiple View Geometry", 2nd ed., sec. 11.1.2: the
//   2D null space F1 + lambda F2 with det F = 0, up to three solutions.
// - 8-point (and more, least squares): Hartley, "In defense of the eight-point
//   algorithm", PAMI 1997: Hartley-normalised DLT, rank 2 enforced by SVD.
// Residuals are Sampson errors (H&Z eq. 11.9), squared pixels.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace edgesfm {

struct FundamentalMatrixSevenPointEstimator {
  using X_t = Eigen::Vector2d;
  using Y_t = Eigen::Vector2d;
  using M_t = Eigen::Matrix3d;
  static constexpr size_t kMinNumSamples = 7;
  static void Estimate(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                       std::vector<M_t>* models);
  static void Residuals(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                        const M_t& F, std::vector<double>* residuals);
};

struct FundamentalMatrixEightPointEstimator {
  using X_t = Eigen::Vector2d;
  using Y_t = Eigen::Vector2d;
  using M_t = Eigen::Matrix3d;
  static constexpr size_t kMinNumSamples = 8;
  static void Estimate(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                       std::vector<M_t>* models);
  static void Residuals(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                        const M_t& F, std::vector<double>* residuals) {
    FundamentalMatrixSevenPointEstimator::Residuals(points1, points2, F, residuals);
  }
};

// Hartley normalisation: translates the centroid to the origin and scales the mean
// distance to sqrt(2). Returns the 3x3 transform and writes the normalised points.
Eigen::Matrix3d CenterAndNormalizeImagePoints(const std::vector<Eigen::Vector2d>& points,
                                              std::vector<Eigen::Vector2d>* normalized);
// The same into caller-provided room for `num_points` (no allocation in RANSAC loops).
Eigen::Matrix3d CenterAndNormalizeImagePoints(const Eigen::Vector2d* points, size_t num_points,
                                              Eigen::Vector2d* normalized);

// Squared Sampson error of each correspondence for x2^T M x1 = 0 (M = F, or E on the
// normalised image plane).
void ComputeSquaredSampsonError(const std::vector<Eigen::Vector2d>& points1,
                                const std::vector<Eigen::Vector2d>& points2,
                                const Eigen::Matrix3d& M, std::vector<double>* residuals);

}  // namespace edgesfm

// Essential matrix from five calibrated correspondences: Nister, "An efficient solution
// to the five-point relative pose problem", PAMI 2004, in the Groebner-basis form of
// Stewenius, Engels & Nister, "Recent developments on direct relative orientation",
// ISPRS J. 2006: E = x X + y Y + z Z + W over the 4D null space of the epipolar
// constraints; det E = 0 and 2 E E^T E - tr(E E^T) E = 0 give 10 cubics in (x, y, z);
// elimination gives a 10x10 action matrix whose eigenvectors are the (up to 10)
// solutions.
//
// Observations are viewing rays (Camera::CamFromImg), so every camera model works. The
// residual of a pair of pinhole rays (both on the z = 1 plane) is COLMAP's Sampson error in
// normalized image coordinates; of any other pair (spherical cameras) the Sampson error on
// the unit sphere (the squared angle, to first order, between each ray and the epipolar
// plane of its partner). Thresholds are Camera::CamFromImgThreshold(pixels) either way.
#pragma once

#include <Eigen/Core>
#include <vector>

namespace edgesfm {

struct EssentialMatrixFivePointEstimator {
  using X_t = Eigen::Vector3d;  // ray in camera 1
  using Y_t = Eigen::Vector3d;  // ray in camera 2
  using M_t = Eigen::Matrix3d;  // x2^T E x1 = 0
  static constexpr size_t kMinNumSamples = 5;
  // Five rays give up to 10 solutions; more than five are fitted in the least-squares
  // sense on the null space (the smallest four singular vectors), which LO-RANSAC uses.
  static void Estimate(const std::vector<X_t>& rays1, const std::vector<Y_t>& rays2,
                       std::vector<M_t>* models);
  static void Residuals(const std::vector<X_t>& rays1, const std::vector<Y_t>& rays2, const M_t& E,
                        std::vector<double>* residuals);
};

// Squared Sampson error on the unit sphere for x2^T E x1 = 0 (see above).
double SphericalSampsonError(const Eigen::Vector3d& ray1, const Eigen::Vector3d& ray2,
                             const Eigen::Matrix3d& E);

}  // namespace edgesfm

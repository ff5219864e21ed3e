// Absolute camera pose from 2D-3D correspondences.
// - P3P: Persson & Nordberg, "Lambda Twist: An Accurate Fast Robust Perspective Three
//   Point (P3P) Solver", ECCV 2018: the two distance-constraint conics are intersected
//   through a degenerate member of their pencil (one cubic), giving up to four poses.
// - EPnP: Lepetit, Moreno-Noguer & Fua, "EPnP: An Accurate O(n) Solution to the PnP
//   Problem", IJCV 2009: points as weighted sums of four control points whose camera
//   coordinates lie in the null space of a 2n x 12 system; betas by the three
//   linearisations of the paper, refined by Gauss-Newton; the lowest-error one wins.
//   Needs rays with positive z (perspective observations).
//
// Observations are unit viewing rays (Camera::CamFromImg, normalized); the residual is the
// squared chord between the ray and the unit direction to the transformed point (~ squared
// angle), or the maximum for points behind the camera, so thresholds are angles as elsewhere.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "geometry/rigid3.h"

namespace edgesfm {

struct P3PEstimator {
  using X_t = Eigen::Vector3d;  // viewing ray in the camera
  using Y_t = Eigen::Vector3d;  // point in the world
  using M_t = Rigid3d;          // cam_from_world
  static constexpr size_t kMinNumSamples = 3;
  static void Estimate(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                       std::vector<M_t>* models);
  static void Residuals(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                        const M_t& cam_from_world, std::vector<double>* residuals);
};

struct EPnPEstimator {
  using X_t = Eigen::Vector3d;
  using Y_t = Eigen::Vector3d;
  using M_t = Rigid3d;
  static constexpr size_t kMinNumSamples = 4;
  static void Estimate(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                       std::vector<M_t>* models);
  static void Residuals(const std::vector<X_t>& rays, const std::vector<Y_t>& points3D,
                        const M_t& cam_from_world, std::vector<double>* residuals) {
    P3PEstimator::Residuals(rays, points3D, cam_from_world, residuals);
  }
};

// Rigid transform b_from_a minimising sum |b_i - (R a_i + t)|^2 (Horn/Umeyama without
// scale). Needs three non-collinear points.
bool EstimateRigidTransform(const std::vector<Eigen::Vector3d>& a,
                            const std::vector<Eigen::Vector3d>& b, Rigid3d* b_from_a);

}  // namespace edgesfm

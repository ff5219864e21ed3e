// The two pose problems of incremental mapping, wrapped for the mapper (COLMAP's
// EstimateInitialTwoViewGeometry and EstimateAbsolutePose + RefineAbsolutePose):
// - the relative pose of the initial pair: five-point essential matrix (Nister 2004,
//   estimators/essential_matrix.h) in LO-RANSAC, decomposed into the pose whose
//   triangulated inliers lie in front of both cameras and refined on them
//   (geometry/essential_matrix.h);
// - the absolute pose of a new image from 2D-3D correspondences: P3P (Lambda Twist) in
//   LO-RANSAC with EPnP as the local estimator (estimators/absolute_pose.h),
//   optionally scanning focal lengths when the camera is still uncalibrated (COLMAP's
//   estimate_focal_length), then refined by bundle adjustment on the pose (and the
//   camera's intrinsics when they are free) with a robust loss.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "geometry/rigid3.h"
#include "scene/camera.h"

namespace edgesfm {

struct RelativePoseResult {
  Rigid3d cam2_from_cam1;
  std::vector<char> inlier_mask;
  size_t num_inliers = 0;
};

// Keypoints in pixels; `max_error_px` is the RANSAC threshold. False if no pose with
// positive-depth inliers is found.
bool EstimateRelativePose(const Camera& camera1, const Camera& camera2,
                          const std::vector<Eigen::Vector2d>& points1,
                          const std::vector<Eigen::Vector2d>& points2, double max_error_px,
                          uint64_t seed, RelativePoseResult* result);

struct AbsolutePoseOptions {
  double max_error_px = 12.0;
  double min_inlier_ratio = 0.25;
  // COLMAP's: a high confidence and at least 100 trials, as stopping P3P RANSAC early
  // can give a bad registration.
  int min_num_trials = 100;
  int max_num_trials = 10000;
  double confidence = 0.99999;
  // Scan focal lengths in [min, max] x the current one (the camera is uncalibrated).
  bool estimate_focal_length = false;
  int num_focal_length_samples = 30;
  double min_focal_length_ratio = 0.2;
  double max_focal_length_ratio = 5.0;
  uint64_t seed = 0;
};

struct AbsolutePoseResult {
  Rigid3d cam_from_world;
  // The focal length that won the scan (or the camera's when not estimated).
  double focal_length = 0;
  std::vector<char> inlier_mask;
  size_t num_inliers = 0;
  // RANSAC trials of the winning focal length.
  size_t num_trials = 0;
};

bool EstimateAbsolutePose(const AbsolutePoseOptions& options, const Camera& camera,
                          const std::vector<Eigen::Vector2d>& points2D,
                          const std::vector<Eigen::Vector3d>& points3D, AbsolutePoseResult* result);

// Refines the pose (and, when asked, the camera's focal length and extra parameters)
// on the inlier correspondences with a Cauchy loss of scale 1 px; points are held.
bool RefineAbsolutePose(const std::vector<Eigen::Vector2d>& points2D,
                        const std::vector<Eigen::Vector3d>& points3D, bool refine_focal_length,
                        bool refine_extra_params, Rigid3d* cam_from_world, Camera* camera);

}  // namespace edgesfm

#include "sfm/registration_geometry.h"

#include <algorithm>
#include <cmath>

#include "estimators/absolute_pose.h"
#include "estimators/essential_matrix.h"
#include "estimators/loransac.h"
#include "geometry/essential_matrix.h"
#include "optim/bundle_adjustment.h"

namespace edgesfm {

bool EstimateRelativePose(const Camera& camera1, const Camera& camera2,
                          const std::vector<Eigen::Vector2d>& points1,
                          const std::vector<Eigen::Vector2d>& points2, double max_error_px,
                          uint64_t seed, RelativePoseResult* result) {
  // Pinhole rays stay on the z = 1 plane: the residual is then COLMAP's Sampson error in
  // normalized image coordinates (spherical cameras give unit rays, an angle on the sphere).
  std::vector<Eigen::Vector3d> rays1, rays2;
  for (size_t i = 0; i < points1.size(); ++i) {
    rays1.push_back(camera1.CamFromImg(points1[i]));
    rays2.push_back(camera2.CamFromImg(points2[i]));
  }
  RansacOptions ransac;
  // Average the two cameras' thresholds.
  ransac.max_error =
      0.5 * (camera1.CamFromImgThreshold(max_error_px) + camera2.CamFromImgThreshold(max_error_px));
  ransac.random_seed = seed;
  ransac.min_inlier_ratio = 0.25;
  const LoRansac<EssentialMatrixFivePointEstimator> estimator(ransac);
  const auto report = estimator.Estimate(rays1, rays2);
  if (!report.success) return false;

  // The decomposition with the inliers in front of both cameras, refined on them.
  std::vector<Eigen::Vector3d> inlier_rays1, inlier_rays2, points3D;
  for (size_t i = 0; i < rays1.size(); ++i) {
    if (!report.inlier_mask[i]) continue;
    inlier_rays1.push_back(rays1[i]);
    inlier_rays2.push_back(rays2[i]);
  }
  if (!PoseFromEssentialMatrix(report.model, inlier_rays1, inlier_rays2, &result->cam2_from_cam1,
                               &points3D)) {
    return false;
  }
  RefineRelativePose(inlier_rays1, inlier_rays2, &result->cam2_from_cam1);
  result->inlier_mask = report.inlier_mask;
  result->num_inliers = report.support.num_inliers;
  return true;
}

bool EstimateAbsolutePose(const AbsolutePoseOptions& options, const Camera& camera,
                          const std::vector<Eigen::Vector2d>& points2D,
                          const std::vector<Eigen::Vector3d>& points3D,
                          AbsolutePoseResult* result) {
  const double focal = camera.MeanFocalLength();
  std::vector<double> focal_lengths = {focal};
  if (options.estimate_focal_length && options.num_focal_length_samples > 1 && focal > 0) {
    // Log-spaced scan, as COLMAP's estimate_focal_length.
    focal_lengths.clear();
    const double lo = std::log(options.min_focal_length_ratio),
                 hi = std::log(options.max_focal_length_ratio);
    for (int i = 0; i < options.num_focal_length_samples; ++i) {
      focal_lengths.push_back(
          focal * std::exp(lo + (hi - lo) * i / (options.num_focal_length_samples - 1)));
    }
  }
  bool found = false;
  Camera scaled = camera;
  std::vector<Eigen::Vector3d> rays(points2D.size());
  for (size_t s = 0; s < focal_lengths.size(); ++s) {
    if (focal > 0) scaled.SetFocalLength(focal_lengths[s]);
    for (size_t i = 0; i < points2D.size(); ++i)
      rays[i] = scaled.CamFromImg(points2D[i]).normalized();
    RansacOptions ransac;
    // Chord on the unit sphere ~ angle: the pixel threshold through the camera.
    ransac.max_error = scaled.CamFromImgThreshold(options.max_error_px);
    ransac.min_inlier_ratio = options.min_inlier_ratio;
    ransac.random_seed = options.seed + s;
    ransac.min_num_trials = options.min_num_trials;
    ransac.max_num_trials = options.max_num_trials;
    ransac.confidence = options.confidence;
    // P3P samples, EPnP on the inliers (COLMAP's pairing).
    const LoRansac<P3PEstimator, EPnPEstimator> estimator(ransac);
    const auto report = estimator.Estimate(rays, points3D);
    if (!report.success || (found && report.support.num_inliers <= result->num_inliers)) continue;
    found = true;
    result->cam_from_world = report.model;
    result->focal_length = focal_lengths[s];
    result->inlier_mask = report.inlier_mask;
    result->num_inliers = report.support.num_inliers;
    result->num_trials = report.num_trials;
  }
  return found;
}

bool RefineAbsolutePose(const std::vector<Eigen::Vector2d>& points2D,
                        const std::vector<Eigen::Vector3d>& points3D, bool refine_focal_length,
                        bool refine_extra_params, Rigid3d* cam_from_world, Camera* camera) {
  std::vector<Eigen::Vector3d> points = points3D;
  BundleAdjustmentProblem problem;
  problem.cameras.push_back(
      {camera->model_id, camera->params.data(), static_cast<double>(camera->width),
       static_cast<double>(camera->height), !(refine_focal_length || refine_extra_params)});
  BundleAdjustmentProblem::Pose pose;
  pose.rotation = &cam_from_world->rotation;
  pose.translation = &cam_from_world->translation;
  problem.poses.push_back(pose);
  for (size_t i = 0; i < points.size(); ++i) {
    problem.points.push_back({&points[i], true});
    problem.observations.push_back({0, 0, static_cast<int>(i), points2D[i]});
  }
  BundleAdjustmentOptions options;
  options.loss_kernel = LossKernel::kCauchy;
  options.loss_threshold = 1.0;
  options.refine_focal_length = refine_focal_length;
  options.refine_extra_params = refine_extra_params;
  options.refine_principal_point = false;
  options.max_num_iterations = 100;
  const BundleAdjustmentSummary summary = SolveBundleAdjustment(options, &problem);
  return std::isfinite(summary.final_cost);
}

}  // namespace edgesfm

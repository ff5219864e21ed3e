// Two-view geometry of an image pair from its raw matches: which model explains them
// (essential, fundamental, homography), which matches are inliers, and the relative pose.
// The classification is COLMAP's (EstimateCalibratedTwoViewGeometry,
// EstimateUncalibratedTwoViewGeometry, EstimateMultipleTwoViewGeometries,
// EstimateTwoViewGeometryPose, DetectWatermark), with the types of spec 2.14:
//   calibrated       E explains (nearly) as many matches as F: known intrinsics agree
//   uncalibrated     F explains the matches, E does not (or intrinsics unknown)
//   planar / panoramic / planar_or_panoramic
//                    H explains most of the epipolar inliers: a plane, or a pure
//                    rotation (resolved by the pose: t = 0 is panoramic)
//   watermark        the inliers sit in the image border and move by a pure translation
//   degenerate       too few inliers for any model (or below min_inlier_ratio)
//   multiple         several independent models (only with multiple_models)
//   undefined        not estimated
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "estimators/loransac.h"
#include "geometry/rigid3.h"
#include "scene/camera.h"
#include "scene/types.h"

namespace edgesfm {

// Numbered like COLMAP's TwoViewGeometry::ConfigurationType.
enum class TwoViewGeometryType : int {
  kUndefined = 0,
  kDegenerate = 1,
  kCalibrated = 2,
  kUncalibrated = 3,
  kPlanar = 4,
  kPanoramic = 5,
  kPlanarOrPanoramic = 6,
  kWatermark = 7,
  kMultiple = 8,
};

// The spec's name ("calibrated", "planar_or_panoramic", ...).
std::string TwoViewGeometryTypeName(TwoViewGeometryType type);

struct TwoViewGeometryOptions {
  // Fewer inliers than this make the pair degenerate.
  int min_num_inliers = 15;
  // VerifySpec.min_inlier_ratio: the a-priori inlier ratio that bounds RANSAC's trials,
  // and the least fraction of the matches a model must explain (else degenerate).
  double min_inlier_ratio = 0.25;
  // E must explain this fraction of F's inliers for `calibrated`.
  double min_E_F_inlier_ratio = 0.95;
  // H explaining more than this fraction of E's (or F's) inliers means planar/panoramic.
  double max_H_inlier_ratio = 0.8;
  // Watermark: border width as a fraction of the image diagonal, and the fraction of
  // inliers a pure translation must explain there.
  bool detect_watermark = true;
  double watermark_border_size = 0.1;
  double watermark_min_inlier_ratio = 0.7;
  // Estimate several models in turn on the remaining matches (type `multiple` if > 1).
  bool multiple_models = false;
  int max_num_models = 5;
  bool multiple_ignore_watermark = true;
  // Recover cam2_from_cam1 (and refine it on the inliers for calibrated pairs).
  bool compute_relative_pose = true;
  // max_error is in pixels (converted to an angle for E); COLMAP's defaults.
  RansacOptions ransac = DefaultRansacOptions();

  static RansacOptions DefaultRansacOptions() {
    RansacOptions options;
    options.max_error = 4.0;
    options.confidence = 0.999;
    options.min_num_trials = 100;
    options.max_num_trials = 10000;
    return options;
  }
};

struct TwoViewGeometry {
  TwoViewGeometryType type = TwoViewGeometryType::kUndefined;
  FeatureMatches inlier_matches;
  // Models estimated on the way (x2^T E x1 = 0 on rays, x2^T F x1 = 0 and x2 ~ H x1 on
  // pixels); the spec's output populates only the one matching `type`.
  bool has_E = false, has_F = false, has_H = false;
  Eigen::Matrix3d E = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d F = Eigen::Matrix3d::Zero();
  Eigen::Matrix3d H = Eigen::Matrix3d::Zero();
  // Relative pose (translation has unit norm, or zero for panoramic).
  bool has_pose = false;
  Rigid3d cam2_from_cam1;
  // Median triangulation angle (radians) of the inliers under that pose.
  double tri_angle = 0;
};

// `camera1/2` give the image sizes, and the intrinsics when has_prior_focal_length is
// true (then the calibrated path runs; otherwise only F and H are estimated). Keypoints
// in pixels; `matches` index them.
TwoViewGeometry EstimateTwoViewGeometry(const Camera& camera1,
                                        const std::vector<Eigen::Vector2d>& points1,
                                        const Camera& camera2,
                                        const std::vector<Eigen::Vector2d>& points2,
                                        const FeatureMatches& matches,
                                        const TwoViewGeometryOptions& options);

// Sets cam2_from_cam1 and tri_angle from the inliers of an estimated geometry, and
// resolves planar_or_panoramic. Returns false when the type has no pose.
bool EstimateTwoViewGeometryPose(const Camera& camera1, const std::vector<Eigen::Vector2d>& points1,
                                 const Camera& camera2, const std::vector<Eigen::Vector2d>& points2,
                                 TwoViewGeometry* geometry);

// True when the inliers in the image borders of both images are mostly explained by a
// pure 2D translation (a watermark or timestamp rather than scene content).
bool DetectWatermark(const Camera& camera1, const std::vector<Eigen::Vector2d>& points1,
                     const Camera& camera2, const std::vector<Eigen::Vector2d>& points2,
                     size_t num_inliers, const std::vector<char>& inlier_mask,
                     const TwoViewGeometryOptions& options);

}  // namespace edgesfm

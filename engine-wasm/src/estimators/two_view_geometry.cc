#include "estimators/two_view_geometry.h"

#include <algorithm>
#include <set>

#include "estimators/essential_matrix.h"
#include "estimators/fundamental_matrix.h"
#include "estimators/homography_matrix.h"
#include "geometry/essential_matrix.h"
#include "geometry/homography_matrix.h"
#include "geometry/triangulation.h"

namespace edgesfm {
namespace {

// A 2D translation x2 = x1 + t from one correspondence: the watermark model.
struct TranslationEstimator {
  using X_t = Eigen::Vector2d;
  using Y_t = Eigen::Vector2d;
  using M_t = Eigen::Vector2d;
  static constexpr size_t kMinNumSamples = 1;
  static void Estimate(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                       std::vector<M_t>* models) {
    Eigen::Vector2d mean = Eigen::Vector2d::Zero();
    for (size_t i = 0; i < points1.size(); ++i) mean += points2[i] - points1[i];
    models->assign(1, mean / static_cast<double>(points1.size()));
  }
  static void Residuals(const std::vector<X_t>& points1, const std::vector<Y_t>& points2,
                        const M_t& t, std::vector<double>* residuals) {
    residuals->resize(points1.size());
    for (size_t i = 0; i < points1.size(); ++i) {
      (*residuals)[i] = (points2[i] - points1[i] - t).squaredNorm();
    }
  }
};

FeatureMatches ExtractInlierMatches(const FeatureMatches& matches,
                                    const std::vector<char>& inlier_mask) {
  FeatureMatches inliers;
  for (size_t i = 0; i < matches.size(); ++i) {
    if (inlier_mask[i]) inliers.push_back(matches[i]);
  }
  return inliers;
}

FeatureMatches RemoveMatches(const FeatureMatches& matches, const FeatureMatches& removed) {
  const std::set<std::pair<point2D_t, point2D_t>> removed_set(removed.begin(), removed.end());
  FeatureMatches remaining;
  for (const auto& match : matches) {
    if (removed_set.count(match) == 0) remaining.push_back(match);
  }
  return remaining;
}

struct MatchedPoints {
  std::vector<Eigen::Vector2d> pixels1, pixels2;
  std::vector<Eigen::Vector3d> rays1, rays2;
};

MatchedPoints GatherMatchedPoints(const Camera& camera1,
                                  const std::vector<Eigen::Vector2d>& points1,
                                  const Camera& camera2,
                                  const std::vector<Eigen::Vector2d>& points2,
                                  const FeatureMatches& matches, bool with_rays) {
  MatchedPoints matched;
  for (const auto& [idx1, idx2] : matches) {
    matched.pixels1.push_back(points1[idx1]);
    matched.pixels2.push_back(points2[idx2]);
    if (with_rays) {
      matched.rays1.push_back(camera1.CamFromImg(points1[idx1]));
      matched.rays2.push_back(camera2.CamFromImg(points2[idx2]));
    }
  }
  return matched;
}

bool IsValidMatch(const std::pair<point2D_t, point2D_t>& match, size_t n1, size_t n2) {
  return match.first < n1 && match.second < n2;
}

// One model (no `multiple` handling): COLMAP's calibrated / uncalibrated / spherical paths.
TwoViewGeometry EstimateSingleTwoViewGeometry(const Camera& camera1,
                                              const std::vector<Eigen::Vector2d>& points1,
                                              const Camera& camera2,
                                              const std::vector<Eigen::Vector2d>& points2,
                                              const FeatureMatches& matches,
                                              const TwoViewGeometryOptions& options) {
  TwoViewGeometry geometry;
  const size_t min_num_inliers = static_cast<size_t>(std::max(options.min_num_inliers, 0));
  if (matches.size() < std::max<size_t>(min_num_inliers, 1)) {
    geometry.type = TwoViewGeometryType::kDegenerate;
    return geometry;
  }
  const bool calibrated = camera1.has_prior_focal_length && camera2.has_prior_focal_length &&
                          camera1.VerifyParams() && camera2.VerifyParams();
  const bool spherical = calibrated && (camera1.model_id == CameraModelId::kSpherical ||
                                        camera2.model_id == CameraModelId::kSpherical);
  const MatchedPoints matched =
      GatherMatchedPoints(camera1, points1, camera2, points2, matches, calibrated);

  RansacOptions ransac = options.ransac;
  if (options.min_inlier_ratio > 0) ransac.min_inlier_ratio = options.min_inlier_ratio;

  // E on rays with the pixel threshold turned into an angle (averaged over the cameras).
  typename LoRansac<EssentialMatrixFivePointEstimator>::Report E_report;
  if (calibrated) {
    RansacOptions E_ransac = ransac;
    E_ransac.max_error = (camera1.CamFromImgThreshold(ransac.max_error) +
                          camera2.CamFromImgThreshold(ransac.max_error)) /
                         2;
    E_report = LoRansac<EssentialMatrixFivePointEstimator>(E_ransac).Estimate(matched.rays1,
                                                                              matched.rays2);
    geometry.has_E = E_report.success;
    geometry.E = E_report.model;
  }
  // F and H assume a pinhole image plane: meaningless for a panorama.
  typename LoRansac<FundamentalMatrixSevenPointEstimator,
                    FundamentalMatrixEightPointEstimator>::Report F_report;
  typename LoRansac<HomographyMatrixEstimator>::Report H_report;
  if (!spherical) {
    F_report =
        LoRansac<FundamentalMatrixSevenPointEstimator, FundamentalMatrixEightPointEstimator>(ransac)
            .Estimate(matched.pixels1, matched.pixels2);
    geometry.has_F = F_report.success;
    geometry.F = F_report.model;
    H_report =
        LoRansac<HomographyMatrixEstimator>(ransac).Estimate(matched.pixels1, matched.pixels2);
    geometry.has_H = H_report.success;
    geometry.H = H_report.model;
  }
  const size_t num_E = E_report.success ? E_report.support.num_inliers : 0;
  const size_t num_F = F_report.success ? F_report.support.num_inliers : 0;
  const size_t num_H = H_report.success ? H_report.support.num_inliers : 0;

  const std::vector<char>* best_mask = nullptr;
  size_t num_inliers = 0;
  if (spherical) {
    if (num_E >= min_num_inliers && num_E > 0) {
      geometry.type = TwoViewGeometryType::kCalibrated;
      best_mask = &E_report.inlier_mask;
      num_inliers = num_E;
    }
  } else if (calibrated && num_E > 0 && num_E >= min_num_inliers &&
             static_cast<double>(num_E) / std::max<size_t>(num_F, 1) >
                 options.min_E_F_inlier_ratio) {
    // Calibrated: keep whichever epipolar model explains more matches.
    best_mask = num_E >= num_F ? &E_report.inlier_mask : &F_report.inlier_mask;
    num_inliers = std::max(num_E, num_F);
    if (static_cast<double>(num_H) / num_E > options.max_H_inlier_ratio) {
      geometry.type = TwoViewGeometryType::kPlanarOrPanoramic;
      if (num_H > num_inliers) {
        best_mask = &H_report.inlier_mask;
        num_inliers = num_H;
      }
    } else {
      geometry.type = TwoViewGeometryType::kCalibrated;
    }
  } else if (num_F > 0 && num_F >= min_num_inliers) {
    best_mask = &F_report.inlier_mask;
    num_inliers = num_F;
    if (static_cast<double>(num_H) / num_F > options.max_H_inlier_ratio) {
      geometry.type = TwoViewGeometryType::kPlanarOrPanoramic;
      if (num_H > num_inliers) {
        best_mask = &H_report.inlier_mask;
        num_inliers = num_H;
      }
    } else {
      geometry.type = TwoViewGeometryType::kUncalibrated;
    }
  } else if (num_H > 0 && num_H >= min_num_inliers) {
    best_mask = &H_report.inlier_mask;
    num_inliers = num_H;
    geometry.type = TwoViewGeometryType::kPlanarOrPanoramic;
  }
  if (best_mask == nullptr ||
      static_cast<double>(num_inliers) / matches.size() < options.min_inlier_ratio) {
    geometry.type = TwoViewGeometryType::kDegenerate;
    geometry.inlier_matches.clear();
    return geometry;
  }
  geometry.inlier_matches = ExtractInlierMatches(matches, *best_mask);
  if (options.detect_watermark &&
      DetectWatermark(camera1, matched.pixels1, camera2, matched.pixels2, num_inliers, *best_mask,
                      options)) {
    geometry.type = TwoViewGeometryType::kWatermark;
  }
  if (options.compute_relative_pose) {
    EstimateTwoViewGeometryPose(camera1, points1, camera2, points2, &geometry);
  }
  return geometry;
}

}  // namespace

std::string TwoViewGeometryTypeName(TwoViewGeometryType type) {
  switch (type) {
    case TwoViewGeometryType::kUndefined:
      return "undefined";
    case TwoViewGeometryType::kDegenerate:
      return "degenerate";
    case TwoViewGeometryType::kCalibrated:
      return "calibrated";
    case TwoViewGeometryType::kUncalibrated:
      return "uncalibrated";
    case TwoViewGeometryType::kPlanar:
      return "planar";
    case TwoViewGeometryType::kPanoramic:
      return "panoramic";
    case TwoViewGeometryType::kPlanarOrPanoramic:
      return "planar_or_panoramic";
    case TwoViewGeometryType::kWatermark:
      return "watermark";
    case TwoViewGeometryType::kMultiple:
      return "multiple";
  }
  return "undefined";
}

bool DetectWatermark(const Camera& camera1, const std::vector<Eigen::Vector2d>& points1,
                     const Camera& camera2, const std::vector<Eigen::Vector2d>& points2,
                     size_t num_inliers, const std::vector<char>& inlier_mask,
                     const TwoViewGeometryOptions& options) {
  if (num_inliers == 0) return false;
  auto in_border = [&](const Camera& camera, const Eigen::Vector2d& p) {
    const double border = options.watermark_border_size * std::hypot(camera.width, camera.height);
    return p.x() < border || p.x() > camera.width - border || p.y() < border ||
           p.y() > camera.height - border;
  };
  std::vector<Eigen::Vector2d> border1, border2;
  for (size_t i = 0; i < inlier_mask.size(); ++i) {
    if (inlier_mask[i] && in_border(camera1, points1[i]) && in_border(camera2, points2[i])) {
      border1.push_back(points1[i]);
      border2.push_back(points2[i]);
    }
  }
  if (border1.empty()) return false;
  RansacOptions ransac = options.ransac;
  ransac.min_num_trials = 0;
  const auto report = LoRansac<TranslationEstimator>(ransac).Estimate(border1, border2);
  const double inlier_ratio =
      static_cast<double>(report.success ? report.support.num_inliers : 0) / num_inliers;
  return inlier_ratio >= options.watermark_min_inlier_ratio;
}

bool EstimateTwoViewGeometryPose(const Camera& camera1, const std::vector<Eigen::Vector2d>& points1,
                                 const Camera& camera2, const std::vector<Eigen::Vector2d>& points2,
                                 TwoViewGeometry* geometry) {
  geometry->has_pose = false;
  const TwoViewGeometryType type = geometry->type;
  const bool epipolar =
      type == TwoViewGeometryType::kCalibrated || type == TwoViewGeometryType::kUncalibrated;
  const bool homography = type == TwoViewGeometryType::kPlanar ||
                          type == TwoViewGeometryType::kPanoramic ||
                          type == TwoViewGeometryType::kPlanarOrPanoramic;
  if ((!epipolar && !homography) || geometry->inlier_matches.empty()) return false;
  // A pose needs intrinsics, guessed ones at least.
  if (!camera1.VerifyParams() || !camera2.VerifyParams()) return false;
  const MatchedPoints inliers =
      GatherMatchedPoints(camera1, points1, camera2, points2, geometry->inlier_matches, true);
  std::vector<Eigen::Vector3d> points3D;
  Rigid3d cam2_from_cam1;
  if (type == TwoViewGeometryType::kCalibrated) {
    if (!geometry->has_E || !PoseFromEssentialMatrix(geometry->E, inliers.rays1, inliers.rays2,
                                                     &cam2_from_cam1, &points3D)) {
      return false;
    }
    // The RANSAC model comes from a minimal or linear fit; polish it on all inliers.
    RefineRelativePose(inliers.rays1, inliers.rays2, &cam2_from_cam1);
    PoseFromEssentialMatrix(EssentialMatrixFromPose(cam2_from_cam1), inliers.rays1, inliers.rays2,
                            &cam2_from_cam1, &points3D);
  } else if (type == TwoViewGeometryType::kUncalibrated) {
    if (!geometry->has_F) return false;
    const Eigen::Matrix3d E = EssentialFromFundamentalMatrix(
        camera2.CalibrationMatrix(), geometry->F, camera1.CalibrationMatrix());
    if (!PoseFromEssentialMatrix(E, inliers.rays1, inliers.rays2, &cam2_from_cam1, &points3D)) {
      return false;
    }
  } else {
    if (!geometry->has_H) return false;
    Eigen::Vector3d normal;
    if (!PoseFromHomographyMatrix(geometry->H, camera1.CalibrationMatrix(),
                                  camera2.CalibrationMatrix(), inliers.rays1, inliers.rays2,
                                  &cam2_from_cam1, &normal, &points3D)) {
      return false;
    }
    if (type == TwoViewGeometryType::kPlanarOrPanoramic) {
      geometry->type = cam2_from_cam1.translation.squaredNorm() < 1e-12
                           ? TwoViewGeometryType::kPanoramic
                           : TwoViewGeometryType::kPlanar;
    }
    if (cam2_from_cam1.translation.squaredNorm() > 0) {
      cam2_from_cam1.translation.normalize();
    }
  }
  geometry->cam2_from_cam1 = cam2_from_cam1;
  geometry->has_pose = true;
  geometry->tri_angle = 0;
  if (!points3D.empty()) {
    const Eigen::Vector3d center2 = ProjectionCenter(cam2_from_cam1);
    std::vector<double> angles;
    angles.reserve(points3D.size());
    for (const Eigen::Vector3d& x : points3D) {
      angles.push_back(CalculateTriangulationAngle(Eigen::Vector3d::Zero(), center2, x));
    }
    std::nth_element(angles.begin(), angles.begin() + angles.size() / 2, angles.end());
    geometry->tri_angle = angles[angles.size() / 2];
  }
  return true;
}

TwoViewGeometry EstimateTwoViewGeometry(const Camera& camera1,
                                        const std::vector<Eigen::Vector2d>& points1,
                                        const Camera& camera2,
                                        const std::vector<Eigen::Vector2d>& points2,
                                        const FeatureMatches& input_matches,
                                        const TwoViewGeometryOptions& options) {
  // Matches that index past the keypoints are dropped rather than read out of bounds.
  FeatureMatches matches;
  matches.reserve(input_matches.size());
  for (const auto& match : input_matches) {
    if (IsValidMatch(match, points1.size(), points2.size())) matches.push_back(match);
  }
  if (!options.multiple_models) {
    return EstimateSingleTwoViewGeometry(camera1, points1, camera2, points2, matches, options);
  }
  // COLMAP's EstimateMultipleTwoViewGeometries: peel off one model at a time.
  std::vector<TwoViewGeometry> geometries;
  FeatureMatches remaining = matches;
  TwoViewGeometryOptions single = options;
  single.multiple_models = false;
  // Later models are judged against the remaining matches, not the full set.
  for (int model = 0; model < options.max_num_models; ++model) {
    TwoViewGeometry geometry =
        EstimateSingleTwoViewGeometry(camera1, points1, camera2, points2, remaining, single);
    if (geometry.type == TwoViewGeometryType::kDegenerate) break;
    remaining = RemoveMatches(remaining, geometry.inlier_matches);
    if (!(options.multiple_ignore_watermark && geometry.type == TwoViewGeometryType::kWatermark)) {
      geometries.push_back(std::move(geometry));
    }
    if (remaining.empty()) break;
  }
  if (geometries.empty()) {
    TwoViewGeometry degenerate;
    degenerate.type = TwoViewGeometryType::kDegenerate;
    return degenerate;
  }
  if (geometries.size() == 1) return geometries[0];
  TwoViewGeometry multiple;
  multiple.type = TwoViewGeometryType::kMultiple;
  for (const TwoViewGeometry& geometry : geometries) {
    multiple.inlier_matches.insert(multiple.inlier_matches.end(), geometry.inlier_matches.begin(),
                                   geometry.inlier_matches.end());
  }
  return multiple;
}

}  // namespace edgesfm

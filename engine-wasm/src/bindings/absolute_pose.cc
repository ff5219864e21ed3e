// Absolute pose of one image from 2D-3D correspondences, for the `relocalize` stage (spec
// 4.13 localize, 4.15 one-shot): P3P in LO-RANSAC with EPnP as the local estimator, a focal
// length scan when the camera has no prior focal length, then refinement of the pose (and,
// when asked, the focal length and extra parameters) on the inliers with a Cauchy loss, as the
// incremental mapper registers an image (sfm/registration_geometry.h).
//
//   handle = edgesfm_absolute_pose(
//       points2D, points3D, num_points,   // float64 x y per point (pixels), X Y Z per point
//       model, params, num_params, width, height, has_prior_focal_length,
//       options, num_options)             // float64, order of OptionIndex below; a prefix
//                                         // may be given, the rest take their defaults
//   edgesfm_absolute_pose_result_success(handle)      -> 1 when a pose with at least
//       min_num_inliers inliers was found and refined
//   edgesfm_absolute_pose_result_pose(handle)         -> float64[7]: cam_from_world as
//       qw qx qy qz tx ty tz
//   edgesfm_absolute_pose_result_params(handle)       -> float64[num_params]: the camera
//       after the scan and refinement
//   edgesfm_absolute_pose_result_num_inliers(handle)
//   edgesfm_absolute_pose_result_inlier_mask(handle)  -> int32[num_points], 1 for an inlier
//       of the refined pose (reprojection error within max_error_px, in front of the camera)
//   edgesfm_absolute_pose_result_stats(handle)        -> float64[3]: RANSAC inliers, RANSAC
//       trials, mean reprojection error of the inliers (px)
//   edgesfm_absolute_pose_result_free(handle)
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "bindings/input_checks.h"
#include "sfm/registration_geometry.h"

// The opaque result handle (owned by the caller until edgesfm_absolute_pose_result_free).
struct AbsolutePoseHandle {
  bool success = false;
  std::array<double, 7> pose{1, 0, 0, 0, 0, 0, 0};
  std::vector<double> params;
  std::vector<int32_t> inlier_mask;
  int num_inliers = 0;
  std::array<double, 3> stats{};
};

namespace {

using edgesfm::AbsolutePoseOptions;
using edgesfm::Camera;
using edgesfm::Rigid3d;

// The options array's layout (TypeScript: ts/absolute-pose.ts ABSOLUTE_POSE_OPTION_ORDER).
enum OptionIndex {
  kMaxError = 0,  // pixels
  kMinInlierRatio,
  kMinNumTrials,
  kMaxNumTrials,
  kConfidence,
  kSeed,
  kMinNumInliers,
  kRefineFocalLength,  // 0 / 1
  kRefineExtraParams,  // 0 / 1
  kNumOptions,
};

struct Options {
  AbsolutePoseOptions pose;
  int min_num_inliers = 12;
  bool refine_focal_length = true;
  bool refine_extra_params = true;
};

Options ReadOptions(const double* values, int count) {
  auto value = [&](int index, double fallback) {
    return values != nullptr && index < count ? values[index] : fallback;
  };
  Options o;
  o.pose.max_error_px = value(kMaxError, o.pose.max_error_px);
  o.pose.min_inlier_ratio = value(kMinInlierRatio, o.pose.min_inlier_ratio);
  o.pose.min_num_trials = static_cast<int>(value(kMinNumTrials, o.pose.min_num_trials));
  o.pose.max_num_trials = static_cast<int>(value(kMaxNumTrials, o.pose.max_num_trials));
  o.pose.confidence = value(kConfidence, o.pose.confidence);
  o.pose.seed = static_cast<uint64_t>(value(kSeed, 0));
  o.min_num_inliers = static_cast<int>(value(kMinNumInliers, o.min_num_inliers));
  o.refine_focal_length = value(kRefineFocalLength, 1) != 0;
  o.refine_extra_params = value(kRefineExtraParams, 1) != 0;
  const auto& p = o.pose;
  edgesfm::bindings::Require(std::isfinite(p.max_error_px) && p.max_error_px > 0,
                             "absolute pose: max_error must be positive");
  edgesfm::bindings::Require(p.min_inlier_ratio >= 0 && p.min_inlier_ratio <= 1,
                             "absolute pose: min_inlier_ratio must be in [0, 1]");
  edgesfm::bindings::Require(p.confidence > 0 && p.confidence < 1,
                             "absolute pose: confidence must be in (0, 1)");
  edgesfm::bindings::Require(p.min_num_trials >= 0 && p.min_num_trials <= p.max_num_trials,
                             "absolute pose: need 0 <= min_num_trials <= max_num_trials");
  edgesfm::bindings::Require(o.min_num_inliers >= 4,
                             "absolute pose: min_num_inliers must be at least 4");
  return o;
}

// Marks the correspondences the pose reprojects within `max_error_px` (in front of the camera);
// answers their count and mean error.
std::pair<int, double> Inliers(const Camera& camera, const Rigid3d& cam_from_world,
                               const std::vector<Eigen::Vector2d>& points2D,
                               const std::vector<Eigen::Vector3d>& points3D, double max_error_px,
                               std::vector<int32_t>* mask) {
  int count = 0;
  double sum = 0;
  mask->assign(points2D.size(), 0);
  for (size_t i = 0; i < points2D.size(); ++i) {
    const Eigen::Vector3d in_cam = cam_from_world * points3D[i];
    Eigen::Vector2d xy;
    if (in_cam.z() <= 0 || !camera.ImgFromCam(in_cam, &xy)) continue;
    const double error = (xy - points2D[i]).norm();
    if (!(error <= max_error_px)) continue;
    (*mask)[i] = 1;
    ++count;
    sum += error;
  }
  return {count, count > 0 ? sum / count : 0.0};
}

}  // namespace

// Null when the input breaks a rule (non-finite points, an invalid camera or options):
// edgesfm_last_error says which. Too few correspondences or no pose: success 0.
EDGESFM_EXPORT AbsolutePoseHandle* edgesfm_absolute_pose(const double* points2D,
                                                         const double* points3D, int num_points,
                                                         int model, const double* params,
                                                         int num_params, int width, int height,
                                                         int has_prior_focal_length,
                                                         const double* options, int num_options) {
  return edgesfm::bindings::Guarded<AbsolutePoseHandle*>(nullptr, [&] {
    edgesfm::bindings::Require(num_points >= 0, "absolute pose: negative point count");
    edgesfm::bindings::RequireFinite(points2D, 2 * static_cast<size_t>(num_points),
                                     "absolute pose: 2D points");
    edgesfm::bindings::RequireFinite(points3D, 3 * static_cast<size_t>(num_points),
                                     "absolute pose: 3D points");
    edgesfm::bindings::RequireCamera(model, params, num_params, width, height,
                                     "absolute pose: camera");
    const Options o = ReadOptions(options, num_options);
    auto result = std::make_unique<AbsolutePoseHandle>();
    Camera camera;
    camera.camera_id = 0;
    camera.model_id = static_cast<edgesfm::CameraModelId>(model);
    camera.width = width;
    camera.height = height;
    camera.params.assign(params, params + num_params);
    camera.has_prior_focal_length = has_prior_focal_length != 0;
    result->params = camera.params;
    result->inlier_mask.assign(num_points, 0);
    if (num_points < o.min_num_inliers) return result.release();

    std::vector<Eigen::Vector2d> xy(num_points);
    std::vector<Eigen::Vector3d> xyz(num_points);
    for (int i = 0; i < num_points; ++i) {
      xy[i] = {points2D[2 * i], points2D[2 * i + 1]};
      xyz[i] = {points3D[3 * i], points3D[3 * i + 1], points3D[3 * i + 2]};
    }
    AbsolutePoseOptions pose_options = o.pose;
    pose_options.estimate_focal_length = !camera.has_prior_focal_length;
    edgesfm::AbsolutePoseResult pose;
    if (!edgesfm::EstimateAbsolutePose(pose_options, camera, xy, xyz, &pose))
      return result.release();
    result->stats[0] = static_cast<double>(pose.num_inliers);
    result->stats[1] = static_cast<double>(pose.num_trials);
    if (pose.num_inliers < static_cast<size_t>(o.min_num_inliers)) return result.release();
    if (pose_options.estimate_focal_length) camera.SetFocalLength(pose.focal_length);
    std::vector<Eigen::Vector2d> inlier2D;
    std::vector<Eigen::Vector3d> inlier3D;
    for (int i = 0; i < num_points; ++i) {
      if (!pose.inlier_mask[i]) continue;
      inlier2D.push_back(xy[i]);
      inlier3D.push_back(xyz[i]);
    }
    Rigid3d cam_from_world = pose.cam_from_world;
    if (!edgesfm::RefineAbsolutePose(inlier2D, inlier3D, o.refine_focal_length,
                                     o.refine_extra_params, &cam_from_world, &camera)) {
      return result.release();
    }
    const auto [count, mean_error] =
        Inliers(camera, cam_from_world, xy, xyz, o.pose.max_error_px, &result->inlier_mask);
    result->num_inliers = count;
    result->stats[2] = mean_error;
    result->params = camera.params;
    const auto& q = cam_from_world.rotation;
    const auto& t = cam_from_world.translation;
    result->pose = {q.w(), q.x(), q.y(), q.z(), t.x(), t.y(), t.z()};
    result->success = count >= o.min_num_inliers;
    return result.release();
  });
}

EDGESFM_EXPORT int edgesfm_absolute_pose_result_success(const AbsolutePoseHandle* h) {
  return h->success ? 1 : 0;
}
EDGESFM_EXPORT const double* edgesfm_absolute_pose_result_pose(const AbsolutePoseHandle* h) {
  return h->pose.data();
}
EDGESFM_EXPORT const double* edgesfm_absolute_pose_result_params(const AbsolutePoseHandle* h) {
  return h->params.data();
}
EDGESFM_EXPORT int edgesfm_absolute_pose_result_num_inliers(const AbsolutePoseHandle* h) {
  return h->num_inliers;
}
EDGESFM_EXPORT const int32_t* edgesfm_absolute_pose_result_inlier_mask(
    const AbsolutePoseHandle* h) {
  return h->inlier_mask.data();
}
EDGESFM_EXPORT const double* edgesfm_absolute_pose_result_stats(const AbsolutePoseHandle* h) {
  return h->stats.data();
}
EDGESFM_EXPORT void edgesfm_absolute_pose_result_free(AbsolutePoseHandle* h) { delete h; }

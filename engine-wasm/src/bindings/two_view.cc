// Two-view verification for the `verify` stage (spec 4.6) and two_view_geometries.json
// (spec 2.14): keypoints of both images, their cameras (or unknown intrinsics) and the
// raw matches in; type, inlier matches, E/F/H and the relative pose out.
//
//   handle = edgesfm_two_view_verify(
//       keypoints1, num_keypoints1,   // float64 x0 y0 x1 y1 ... (pixels, COLMAP convention)
//       keypoints2, num_keypoints2,
//       model1, params1, num_params1, width1, height1,   // model id < 0: unknown intrinsics
//       model2, params2, num_params2, width2, height2,
//       matches, num_matches,         // int32 i0 j0 i1 j1 ... (keypoint indices)
//       options, num_options)         // float64, order of kOptionNames below; a prefix
//                                     // may be given, the rest take their defaults
//   edgesfm_two_view_result_type(handle)            -> COLMAP's numbering (0 undefined,
//       1 degenerate, 2 calibrated, 3 uncalibrated, 4 planar, 5 panoramic,
//       6 planar_or_panoramic, 7 watermark, 8 multiple)
//   edgesfm_two_view_result_num_inliers(handle)
//   edgesfm_two_view_result_inlier_matches(handle)  -> int32[2 * num_inliers]
//   edgesfm_two_view_result_matrix(handle, which)   -> float64[9] row-major or 0 when not
//       estimated; which: 0 E, 1 F, 2 H
//   edgesfm_two_view_result_has_pose(handle)
//   edgesfm_two_view_result_pose(handle)            -> float64[8]: cam2_from_cam1 as
//       qw qx qy qz tx ty tz (unit t, or 0 for panoramic), then the median
//       triangulation angle in radians
//   edgesfm_two_view_result_free(handle)
#include <array>
#include <memory>
#include <vector>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "bindings/input_checks.h"
#include "estimators/two_view_geometry.h"

// The opaque result handle (owned by the caller until edgesfm_two_view_result_free).
struct TwoViewResult {
  edgesfm::TwoViewGeometry geometry;
  std::vector<int32_t> inlier_matches;
  std::array<std::array<double, 9>, 3> matrices{};
  std::array<double, 8> pose{};
};

namespace {

using edgesfm::Camera;
using edgesfm::CameraModelId;
using edgesfm::TwoViewGeometry;
using edgesfm::TwoViewGeometryOptions;

// The options array's layout (TypeScript: ts/two-view.ts TWO_VIEW_OPTION_ORDER).
enum OptionIndex {
  kMaxError = 0,    // pixels
  kMinInlierRatio,  // VerifySpec.min_inlier_ratio
  kConfidence,
  kMinNumTrials,
  kMaxNumTrials,
  kSeed,
  kMinNumInliers,
  kMultipleModels,  // 0 / 1
  kMaxNumModels,
  kDetectWatermark,      // 0 / 1
  kComputeRelativePose,  // 0 / 1
  kNumOptions,
};

Camera MakeCamera(int model_id, const double* params, int num_params, int width, int height) {
  Camera camera;
  camera.camera_id = 0;
  camera.width = width;
  camera.height = height;
  camera.model_id = static_cast<CameraModelId>(model_id);
  if (model_id >= 0 && params != nullptr && num_params >= 0) {
    camera.params.assign(params, params + num_params);
  }
  // Given intrinsics are trusted as known (the calibrated path); unknown ones are not.
  camera.has_prior_focal_length = model_id >= 0 && camera.VerifyParams();
  return camera;
}

bool ReadOptions(const double* values, int count, TwoViewGeometryOptions* options) {
  auto value = [&](int index, double fallback) {
    return values != nullptr && index < count ? values[index] : fallback;
  };
  options->ransac.max_error = value(kMaxError, options->ransac.max_error);
  options->min_inlier_ratio = value(kMinInlierRatio, options->min_inlier_ratio);
  options->ransac.confidence = value(kConfidence, options->ransac.confidence);
  options->ransac.min_num_trials =
      static_cast<int>(value(kMinNumTrials, options->ransac.min_num_trials));
  options->ransac.max_num_trials =
      static_cast<int>(value(kMaxNumTrials, options->ransac.max_num_trials));
  options->ransac.random_seed = static_cast<uint64_t>(value(kSeed, 0));
  options->min_num_inliers = static_cast<int>(value(kMinNumInliers, options->min_num_inliers));
  options->multiple_models = value(kMultipleModels, options->multiple_models) != 0;
  options->max_num_models = static_cast<int>(value(kMaxNumModels, options->max_num_models));
  options->detect_watermark = value(kDetectWatermark, options->detect_watermark) != 0;
  options->compute_relative_pose = value(kComputeRelativePose, options->compute_relative_pose) != 0;
  // Invalid options would make the estimators throw: they answer type undefined instead.
  const auto& r = options->ransac;
  return r.max_error > 0 && options->min_inlier_ratio >= 0 && options->min_inlier_ratio <= 1 &&
         r.confidence >= 0 && r.confidence <= 1 && r.min_num_trials >= 0 &&
         r.min_num_trials <= r.max_num_trials && options->min_num_inliers >= 0 &&
         options->max_num_models >= 1;
}

void StoreRowMajor(const Eigen::Matrix3d& m, std::array<double, 9>* out) {
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) (*out)[3 * i + j] = m(i, j);
  }
}

}  // namespace

// Null when the input breaks a rule (non-finite keypoints, a camera given with a zero focal
// length, a match index past its keypoints): edgesfm_last_error says which.
EDGESFM_EXPORT TwoViewResult* edgesfm_two_view_verify(
    const double* keypoints1, int num_keypoints1, const double* keypoints2, int num_keypoints2,
    int model1, const double* params1, int num_params1, int width1, int height1, int model2,
    const double* params2, int num_params2, int width2, int height2, const int32_t* matches,
    int num_matches, const double* options, int num_options) {
  return edgesfm::bindings::Guarded<TwoViewResult*>(nullptr, [&] {
    auto result = std::make_unique<TwoViewResult>();
    TwoViewGeometryOptions verify_options;
    if (!ReadOptions(options, num_options, &verify_options) || num_keypoints1 < 0 ||
        num_keypoints2 < 0 || num_matches < 0 || width1 <= 0 || height1 <= 0 || width2 <= 0 ||
        height2 <= 0) {
      return result.release();  // type undefined
    }
    edgesfm::bindings::RequireFinite(keypoints1, 2 * static_cast<size_t>(num_keypoints1),
                                     "two-view: image 1's keypoints");
    edgesfm::bindings::RequireFinite(keypoints2, 2 * static_cast<size_t>(num_keypoints2),
                                     "two-view: image 2's keypoints");
    // Given intrinsics are trusted as known (the calibrated path), so they must make sense.
    if (model1 >= 0)
      edgesfm::bindings::RequireCamera(model1, params1, num_params1, width1, height1,
                                       "two-view: camera 1");
    if (model2 >= 0)
      edgesfm::bindings::RequireCamera(model2, params2, num_params2, width2, height2,
                                       "two-view: camera 2");
    edgesfm::bindings::RequireIndexPairs(matches, num_matches, num_keypoints1, num_keypoints2,
                                         "two-view: matches");
    const Camera camera1 = MakeCamera(model1, params1, num_params1, width1, height1);
    const Camera camera2 = MakeCamera(model2, params2, num_params2, width2, height2);
    std::vector<Eigen::Vector2d> points1(num_keypoints1), points2(num_keypoints2);
    for (int i = 0; i < num_keypoints1; ++i)
      points1[i] = {keypoints1[2 * i], keypoints1[2 * i + 1]};
    for (int i = 0; i < num_keypoints2; ++i)
      points2[i] = {keypoints2[2 * i], keypoints2[2 * i + 1]};
    edgesfm::FeatureMatches feature_matches;
    feature_matches.reserve(num_matches);
    for (int i = 0; i < num_matches; ++i)
      feature_matches.emplace_back(matches[2 * i], matches[2 * i + 1]);
    result->geometry = edgesfm::EstimateTwoViewGeometry(camera1, points1, camera2, points2,
                                                        feature_matches, verify_options);
    const TwoViewGeometry& geometry = result->geometry;
    for (const auto& [idx1, idx2] : geometry.inlier_matches) {
      result->inlier_matches.push_back(static_cast<int32_t>(idx1));
      result->inlier_matches.push_back(static_cast<int32_t>(idx2));
    }
    StoreRowMajor(geometry.E, &result->matrices[0]);
    StoreRowMajor(geometry.F, &result->matrices[1]);
    StoreRowMajor(geometry.H, &result->matrices[2]);
    const auto& q = geometry.cam2_from_cam1.rotation;
    const auto& t = geometry.cam2_from_cam1.translation;
    result->pose = {q.w(), q.x(), q.y(), q.z(), t.x(), t.y(), t.z(), geometry.tri_angle};
    return result.release();
  });
}

EDGESFM_EXPORT int edgesfm_two_view_result_type(const TwoViewResult* result) {
  return static_cast<int>(result->geometry.type);
}

EDGESFM_EXPORT int edgesfm_two_view_result_num_inliers(const TwoViewResult* result) {
  return static_cast<int>(result->geometry.inlier_matches.size());
}

EDGESFM_EXPORT const int32_t* edgesfm_two_view_result_inlier_matches(const TwoViewResult* result) {
  return result->inlier_matches.data();
}

EDGESFM_EXPORT const double* edgesfm_two_view_result_matrix(const TwoViewResult* result,
                                                            int which) {
  const TwoViewGeometry& g = result->geometry;
  const bool present[3] = {g.has_E, g.has_F, g.has_H};
  if (which < 0 || which > 2 || !present[which]) return nullptr;
  return result->matrices[which].data();
}

EDGESFM_EXPORT int edgesfm_two_view_result_has_pose(const TwoViewResult* result) {
  return result->geometry.has_pose ? 1 : 0;
}

EDGESFM_EXPORT const double* edgesfm_two_view_result_pose(const TwoViewResult* result) {
  return result->pose.data();
}

EDGESFM_EXPORT void edgesfm_two_view_result_free(TwoViewResult* result) { delete result; }

// Flat C API of the feature module: SIFT extraction and descriptor matching
// (feature/sift.h, feature/sift_matcher.h). Results are opaque handles with
// accessors and a *_free, per the binding convention (bindings/export.h).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "bindings/input_checks.h"
#include "feature/sift.h"
#include "feature/sift_matcher.h"

namespace {

// Reused across calls so a runner extracting many images keeps its buffers.
edgesfm::SiftExtractor& SharedExtractor() {
  static edgesfm::SiftExtractor extractor;
  return extractor;
}

// options (float64[10]): max_image_size, max_num_features, first_octave,
// num_octaves, octave_resolution, peak_threshold, edge_threshold,
// max_num_orientations, upright (0/1), normalization (0 = L2, 1 = L1_ROOT).
edgesfm::SiftExtractionOptions ParseOptions(const double* o) {
  edgesfm::SiftExtractionOptions options;
  if (o == nullptr) return options;
  options.max_image_size = static_cast<int>(o[0]);
  options.max_num_features = static_cast<int>(o[1]);
  options.first_octave = static_cast<int>(o[2]);
  options.num_octaves = static_cast<int>(o[3]);
  options.octave_resolution = static_cast<int>(o[4]);
  options.peak_threshold = o[5];
  options.edge_threshold = o[6];
  options.max_num_orientations = static_cast<int>(o[7]);
  options.upright = o[8] != 0;
  options.normalization = static_cast<int>(o[9]) == 0 ? edgesfm::SiftNormalization::kL2
                                                      : edgesfm::SiftNormalization::kL1Root;
  return options;
}

struct SiftResult {
  bool ok = false;
  std::vector<float> keypoints;  // x, y, scale, orientation per keypoint
  std::vector<uint8_t> descriptors;
};

SiftResult* Pack(bool ok, const edgesfm::SiftFeatures& features) {
  auto result = std::make_unique<SiftResult>();
  result->ok = ok;
  if (!ok) return result.release();
  result->keypoints.reserve(features.keypoints.size() * 4);
  for (const auto& kp : features.keypoints) {
    result->keypoints.insert(result->keypoints.end(), {kp.x, kp.y, kp.scale, kp.orientation});
  }
  result->descriptors = features.descriptors;
  return result.release();
}

}  // namespace

// Intensities in [0, 1], width x height row-major. Null on failure (edgesfm_last_error).
EDGESFM_EXPORT SiftResult* edgesfm_feature_sift_extract_f32(const float* image, int width,
                                                            int height, const double* options) {
  return edgesfm::bindings::Guarded<SiftResult*>(nullptr, [&] {
    edgesfm::bindings::Require(image != nullptr && width > 0 && height > 0,
                               "SIFT: the image is empty");
    edgesfm::bindings::RequireFinite(image, static_cast<size_t>(width) * height,
                                     "SIFT: the image's intensities");
    edgesfm::SiftFeatures features;
    const bool ok =
        SharedExtractor().Extract(image, width, height, ParseOptions(options), &features);
    return Pack(ok, features);
  });
}

// 8-bit gray, width x height row-major. Null on failure (edgesfm_last_error).
EDGESFM_EXPORT SiftResult* edgesfm_feature_sift_extract_u8(const uint8_t* image, int width,
                                                           int height, const double* options) {
  return edgesfm::bindings::Guarded<SiftResult*>(nullptr, [&] {
    edgesfm::bindings::Require(image != nullptr && width > 0 && height > 0,
                               "SIFT: the image is empty");
    edgesfm::SiftFeatures features;
    const bool ok =
        SharedExtractor().ExtractGray8(image, width, height, ParseOptions(options), &features);
    return Pack(ok, features);
  });
}

EDGESFM_EXPORT int edgesfm_feature_sift_result_ok(const SiftResult* r) { return r->ok ? 1 : 0; }
EDGESFM_EXPORT int edgesfm_feature_sift_result_count(const SiftResult* r) {
  return static_cast<int>(r->keypoints.size() / 4);
}
EDGESFM_EXPORT const float* edgesfm_feature_sift_result_keypoints(const SiftResult* r) {
  return r->keypoints.data();
}
EDGESFM_EXPORT const uint8_t* edgesfm_feature_sift_result_descriptors(const SiftResult* r) {
  return r->descriptors.data();
}
EDGESFM_EXPORT void edgesfm_feature_sift_result_free(SiftResult* r) { delete r; }

namespace {
struct MatchResult {
  std::vector<uint32_t> pairs;  // i0 j0 i1 j1 ...
};
}  // namespace

// Null on failure (edgesfm_last_error).
EDGESFM_EXPORT MatchResult* edgesfm_feature_match(const uint8_t* descriptors1, int num1,
                                                  const uint8_t* descriptors2, int num2,
                                                  double max_ratio, double max_distance,
                                                  int cross_check) {
  return edgesfm::bindings::Guarded<MatchResult*>(nullptr, [&] {
    edgesfm::bindings::Require(num1 >= 0 && num2 >= 0, "matching: negative descriptor count");
    edgesfm::bindings::Require(std::isfinite(max_ratio) && std::isfinite(max_distance),
                               "matching: max_ratio and max_distance must be finite");
    edgesfm::SiftMatchingOptions options;
    options.max_ratio = max_ratio;
    options.max_distance = max_distance;
    options.cross_check = cross_check != 0;
    auto result = std::make_unique<MatchResult>();
    const auto matches = edgesfm::MatchSiftDescriptors(
        descriptors1, static_cast<size_t>(num1), descriptors2, static_cast<size_t>(num2), options);
    result->pairs.reserve(matches.size() * 2);
    for (const auto& m : matches) result->pairs.insert(result->pairs.end(), {m.index1, m.index2});
    return result.release();
  });
}

EDGESFM_EXPORT int edgesfm_feature_match_result_count(const MatchResult* r) {
  return static_cast<int>(r->pairs.size() / 2);
}
EDGESFM_EXPORT const uint32_t* edgesfm_feature_match_result_pairs(const MatchResult* r) {
  return r->pairs.data();
}
EDGESFM_EXPORT void edgesfm_feature_match_result_free(MatchResult* r) { delete r; }

// SIFT feature extraction: Lowe, "Distinctive Image Features from
// Scale-Invariant Keypoints", IJCV 2004, in the form of VLFeat's vl/sift.c as
// COLMAP 3.8 configures and post-processes it (first octave -1, 4 octaves,
// 3 levels, RootSIFT by default: Arandjelovic & Zisserman, CVPR 2012).
// SIFT.md is the exact specification, shared with the WGSL implementation.
#pragma once

#include <cstdint>
#include <vector>

#include "feature/gaussian_blur.h"
#include "feature/sift_detector.h"
#include "feature/sift_options.h"

namespace edgesfm {

// COLMAP's keypoint convention: the top-left pixel's centre is (0.5, 0.5);
// scale is the Gaussian sigma in image pixels; orientation in radians [0, 2 pi]
// measured from +x towards +y (y pointing down).
struct SiftKeypoint {
  float x = 0;
  float y = 0;
  float scale = 0;
  float orientation = 0;
};

struct SiftFeatures {
  std::vector<SiftKeypoint> keypoints;
  std::vector<uint8_t> descriptors;  // 128 bytes per keypoint, same order
};

// Reusable extractor: keeps its float buffers between images so a runner that
// extracts many images allocates only when an image is larger than any before.
// Not thread-safe; deterministic.
class SiftExtractor {
 public:
  SiftExtractor() = default;

  // `intensity` is width x height row-major, in [0, 1] (gray / 255).
  // Returns false on invalid options or an empty image.
  bool Extract(const float* intensity, int width, int height, const SiftExtractionOptions& options,
               SiftFeatures* features);
  // 8-bit gray: resized in 8 bits (as COLMAP does) when above max_image_size,
  // then divided by 255.
  bool ExtractGray8(const uint8_t* gray, int width, int height,
                    const SiftExtractionOptions& options, SiftFeatures* features);

 private:
  struct LevelGroup {  // keypoints of consecutive detections sharing a DoG level
    size_t num_detections = 0;
    size_t first_feature = 0;
    size_t num_features = 0;
  };

  void ProcessOctave(int octave, int width, int height, const SiftExtractionOptions& options);

  std::vector<float> base_;       // level -1 of the current octave
  std::vector<float> next_base_;  // level S-1 subsampled, for the next octave
  std::vector<float> gauss_[3];   // ring of Gaussian levels s, s+1, s+2
  std::vector<float> dog_[3];     // ring of DoG levels s-1, s, s+1
  std::vector<float> grad_;       // gradients of level s
  std::vector<float> upsample_scratch_;
  GaussianBlurScratch blur_scratch_;
  std::vector<SiftDetection> detections_;

  // Per-extraction accumulation (before the feature budget).
  std::vector<SiftKeypoint> all_keypoints_;
  std::vector<uint8_t> all_descriptors_;
  std::vector<LevelGroup> groups_;
  int previous_level_ = -1000;
};

bool ValidateSiftOptions(const SiftExtractionOptions& options);

}  // namespace edgesfm

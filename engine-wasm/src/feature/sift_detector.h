// Scale-space extrema of the difference of Gaussians and their sub-pixel,
// sub-scale refinement (Lowe 2004, sec. 3-4; VLFeat vl_sift_detect).
// SIFT.md section 3 is the exact rule.
#pragma once

#include <vector>

#include "feature/sift_options.h"

namespace edgesfm {

// A refined extremum in the frame of its octave.
struct SiftDetection {
  float x = 0;  // octave pixels (pixel centres at integers)
  float y = 0;
  float sigma = 0;  // octave pixels: sigma0 * 2^(refined_level / S)
  int level = 0;    // integer DoG level where it was found (VLFeat `is`)
};

// The three DoG images D_{s-1}, D_s, D_{s+1} of one octave (width x height).
struct DogLevels {
  const float* below;
  const float* centre;
  const float* above;
  int width;
  int height;
};

// Appends the accepted extrema of level `level` to `detections`, in raster
// order of the candidates.
void DetectDogExtrema(const DogLevels& dog, int level, const SiftExtractionOptions& options,
                      std::vector<SiftDetection>* detections);

}  // namespace edgesfm

// Brute-force nearest-neighbour matching of SIFT descriptors with COLMAP's
// SiftMatchingOptions semantics (colmap/src/feature/sift.cc,
// FindBestMatchesBruteForce): integer dot products of the uint8 descriptors,
// distance = acos(dot / 512^2) (descriptors are unit vectors scaled by 512),
// Lowe's ratio test (Lowe 2004, sec. 7.1), an absolute distance bound and
// optional mutual (cross) check. SIFT.md section 8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "feature/sift_options.h"

namespace edgesfm {

struct DescriptorMatch {
  uint32_t index1;
  uint32_t index2;
};

// descriptors1: num1 x 128, descriptors2: num2 x 128, row-major uint8.
// Matches in ascending index1.
std::vector<DescriptorMatch> MatchSiftDescriptors(const uint8_t* descriptors1, size_t num1,
                                                  const uint8_t* descriptors2, size_t num2,
                                                  const SiftMatchingOptions& options);

}  // namespace edgesfm

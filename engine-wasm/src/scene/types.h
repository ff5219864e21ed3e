// Identifier types of the scene, as COLMAP's (src/colmap/util/types.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace edgesfm {

using camera_t = uint32_t;
using image_t = uint32_t;
// Index of a keypoint (point2D) within its image.
using point2D_t = uint32_t;
using point3D_t = uint64_t;
// Unordered pair of images, see ImagePairToPairId.
using image_pair_t = uint64_t;

constexpr camera_t kInvalidCameraId = std::numeric_limits<camera_t>::max();
constexpr image_t kInvalidImageId = std::numeric_limits<image_t>::max();
constexpr point2D_t kInvalidPoint2DIdx = std::numeric_limits<point2D_t>::max();
constexpr point3D_t kInvalidPoint3DId = std::numeric_limits<point3D_t>::max();

// Matches between two images: (keypoint index in image 1, keypoint index in image 2).
using FeatureMatches = std::vector<std::pair<point2D_t, point2D_t>>;

// Image ids stay below this so that a pair of them packs into one 64-bit id.
constexpr uint64_t kMaxNumImages = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());

// The id of the unordered pair {image_id1, image_id2}: (min * kMaxNumImages + max).
inline image_pair_t ImagePairToPairId(image_t image_id1, image_t image_id2) {
  if (image_id1 > image_id2) std::swap(image_id1, image_id2);
  return kMaxNumImages * image_id1 + image_id2;
}

// The pair (smaller id first) of a pair id.
inline std::pair<image_t, image_t> PairIdToImagePair(image_pair_t pair_id) {
  return {static_cast<image_t>(pair_id / kMaxNumImages),
          static_cast<image_t>(pair_id % kMaxNumImages)};
}

// True when the pair id stores the images in the opposite order of (image_id1, image_id2),
// i.e. matches given for (image_id1, image_id2) must be swapped.
inline bool SwapImagePair(image_t image_id1, image_t image_id2) { return image_id1 > image_id2; }

}  // namespace edgesfm

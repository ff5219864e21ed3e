// The correspondence graph: for every keypoint of every image, the keypoints of other
// images it was (geometrically verified) matched to; for every image pair, the number of
// correspondences. The mapper walks it to build tracks (COLMAP's CorrespondenceGraph).
//
// Use: AddImage for every image, AddCorrespondences for every verified pair, then
// Finalize once before querying.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "scene/types.h"

namespace edgesfm {

class CorrespondenceGraph {
 public:
  struct Correspondence {
    image_t image_id = kInvalidImageId;
    point2D_t point2D_idx = kInvalidPoint2DIdx;
    Correspondence() = default;
    Correspondence(image_t image_id, point2D_t point2D_idx)
        : image_id(image_id), point2D_idx(point2D_idx) {}
    bool operator==(const Correspondence& other) const {
      return image_id == other.image_id && point2D_idx == other.point2D_idx;
    }
  };

  // Keypoint index pairs (idx in image 1, idx in image 2).
  using Matches = FeatureMatches;

  struct ImagePair {
    size_t num_correspondences = 0;
  };

  size_t NumImages() const { return images_.size(); }
  size_t NumImagePairs() const { return image_pairs_.size(); }
  bool ExistsImage(image_t image_id) const { return images_.count(image_id) > 0; }

  void AddImage(image_t image_id, size_t num_points2D);

  // Adds the verified matches of a pair. Matches whose keypoint index is out of range,
  // and repeats of a correspondence already present, are skipped (COLMAP does the same
  // for duplicate matches). Both images must have been added.
  void AddCorrespondences(image_t image_id1, image_t image_id2, const Matches& matches);

  // Drops images without any correspondence and releases spare capacity.
  void Finalize();

  // Keypoints of the image with at least one correspondence.
  size_t NumObservationsForImage(image_t image_id) const;
  // Sum over the image's keypoints of their number of correspondences.
  size_t NumCorrespondencesForImage(image_t image_id) const;
  size_t NumCorrespondencesBetweenImages(image_t image_id1, image_t image_id2) const;
  const std::unordered_map<image_pair_t, ImagePair>& ImagePairs() const { return image_pairs_; }
  // Number of correspondences per image pair (pair id -> count).
  std::unordered_map<image_pair_t, size_t> NumCorrespondencesBetweenAllImages() const;

  const std::vector<Correspondence>& FindCorrespondences(image_t image_id,
                                                         point2D_t point2D_idx) const;
  bool HasCorrespondences(image_t image_id, point2D_t point2D_idx) const;

  // Breadth-first walk from (image_id, point2D_idx) up to `transitivity` hops: every
  // keypoint reached, the start excluded, each once.
  void FindTransitiveCorrespondences(image_t image_id, point2D_t point2D_idx, size_t transitivity,
                                     std::vector<Correspondence>* found) const;

  // The matches between two images, in the order (image_id1, image_id2).
  Matches FindCorrespondencesBetweenImages(image_t image_id1, image_t image_id2) const;

  // A keypoint seen in exactly one other image, whose partner is seen only by it: such a
  // two-view track is weak evidence (COLMAP uses it to down-weight).
  bool IsTwoViewObservation(image_t image_id, point2D_t point2D_idx) const;

 private:
  struct ImageEntry {
    size_t num_observations = 0;
    size_t num_correspondences = 0;
    // corrs[point2D_idx]: the keypoint's correspondences.
    std::vector<std::vector<Correspondence>> corrs;
  };

  std::unordered_map<image_t, ImageEntry> images_;
  std::unordered_map<image_pair_t, ImagePair> image_pairs_;
};

}  // namespace edgesfm

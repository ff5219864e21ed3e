// A track: the observations (image, keypoint) of one 3D point (COLMAP's Track).
#pragma once

#include <vector>

#include "scene/types.h"

namespace edgesfm {

struct TrackElement {
  image_t image_id = kInvalidImageId;
  point2D_t point2D_idx = kInvalidPoint2DIdx;

  TrackElement() = default;
  TrackElement(image_t image_id, point2D_t point2D_idx)
      : image_id(image_id), point2D_idx(point2D_idx) {}
  bool operator==(const TrackElement& other) const {
    return image_id == other.image_id && point2D_idx == other.point2D_idx;
  }
};

class Track {
 public:
  size_t Length() const { return elements_.size(); }
  const std::vector<TrackElement>& Elements() const { return elements_; }
  const TrackElement& Element(size_t idx) const { return elements_[idx]; }

  void AddElement(image_t image_id, point2D_t point2D_idx) {
    elements_.emplace_back(image_id, point2D_idx);
  }
  void AddElement(const TrackElement& element) { elements_.push_back(element); }
  void AddElements(const std::vector<TrackElement>& elements) {
    elements_.insert(elements_.end(), elements.begin(), elements.end());
  }
  void DeleteElement(size_t idx) { elements_.erase(elements_.begin() + idx); }
  // Removes every element equal to (image_id, point2D_idx).
  void DeleteElement(image_t image_id, point2D_t point2D_idx);
  void Reserve(size_t num_elements) { elements_.reserve(num_elements); }

 private:
  std::vector<TrackElement> elements_;
};

inline void Track::DeleteElement(image_t image_id, point2D_t point2D_idx) {
  const TrackElement target(image_id, point2D_idx);
  std::vector<TrackElement> kept;
  kept.reserve(elements_.size());
  for (const TrackElement& element : elements_) {
    if (!(element == target)) kept.push_back(element);
  }
  elements_.swap(kept);
}

}  // namespace edgesfm

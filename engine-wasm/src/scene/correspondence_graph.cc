#include "scene/correspondence_graph.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

namespace edgesfm {
namespace {

const std::vector<CorrespondenceGraph::Correspondence> kNoCorrespondences;

}  // namespace

void CorrespondenceGraph::AddImage(image_t image_id, size_t num_points2D) {
  ImageEntry& entry = images_[image_id];
  entry.corrs.resize(num_points2D);
}

void CorrespondenceGraph::AddCorrespondences(image_t image_id1, image_t image_id2,
                                             const Matches& matches) {
  if (image_id1 == image_id2) return;  // a self-pair carries no geometry
  auto it1 = images_.find(image_id1);
  auto it2 = images_.find(image_id2);
  if (it1 == images_.end() || it2 == images_.end()) {
    throw std::invalid_argument("CorrespondenceGraph: AddImage before AddCorrespondences");
  }
  ImageEntry& image1 = it1->second;
  ImageEntry& image2 = it2->second;
  ImagePair& pair = image_pairs_[ImagePairToPairId(image_id1, image_id2)];
  for (const auto& [idx1, idx2] : matches) {
    if (idx1 >= image1.corrs.size() || idx2 >= image2.corrs.size()) continue;
    std::vector<Correspondence>& corrs1 = image1.corrs[idx1];
    std::vector<Correspondence>& corrs2 = image2.corrs[idx2];
    const Correspondence to2(image_id2, idx2);
    if (std::find(corrs1.begin(), corrs1.end(), to2) != corrs1.end()) continue;
    if (corrs1.empty()) image1.num_observations += 1;
    if (corrs2.empty()) image2.num_observations += 1;
    corrs1.push_back(to2);
    corrs2.emplace_back(image_id1, idx1);
    image1.num_correspondences += 1;
    image2.num_correspondences += 1;
    pair.num_correspondences += 1;
  }
}

void CorrespondenceGraph::Finalize() {
  for (auto it = images_.begin(); it != images_.end();) {
    if (it->second.num_observations == 0) {
      it = images_.erase(it);
      continue;
    }
    for (auto& corrs : it->second.corrs) corrs.shrink_to_fit();
    ++it;
  }
  for (auto it = image_pairs_.begin(); it != image_pairs_.end();) {
    it = it->second.num_correspondences == 0 ? image_pairs_.erase(it) : std::next(it);
  }
}

size_t CorrespondenceGraph::NumObservationsForImage(image_t image_id) const {
  const auto it = images_.find(image_id);
  return it == images_.end() ? 0 : it->second.num_observations;
}

size_t CorrespondenceGraph::NumCorrespondencesForImage(image_t image_id) const {
  const auto it = images_.find(image_id);
  return it == images_.end() ? 0 : it->second.num_correspondences;
}

size_t CorrespondenceGraph::NumCorrespondencesBetweenImages(image_t image_id1,
                                                            image_t image_id2) const {
  const auto it = image_pairs_.find(ImagePairToPairId(image_id1, image_id2));
  return it == image_pairs_.end() ? 0 : it->second.num_correspondences;
}

std::unordered_map<image_pair_t, size_t> CorrespondenceGraph::NumCorrespondencesBetweenAllImages()
    const {
  std::unordered_map<image_pair_t, size_t> counts;
  counts.reserve(image_pairs_.size());
  for (const auto& [pair_id, pair] : image_pairs_) counts[pair_id] = pair.num_correspondences;
  return counts;
}

const std::vector<CorrespondenceGraph::Correspondence>& CorrespondenceGraph::FindCorrespondences(
    image_t image_id, point2D_t point2D_idx) const {
  const auto it = images_.find(image_id);
  if (it == images_.end() || point2D_idx >= it->second.corrs.size()) {
    return kNoCorrespondences;
  }
  return it->second.corrs[point2D_idx];
}

bool CorrespondenceGraph::HasCorrespondences(image_t image_id, point2D_t point2D_idx) const {
  return !FindCorrespondences(image_id, point2D_idx).empty();
}

void CorrespondenceGraph::FindTransitiveCorrespondences(image_t image_id, point2D_t point2D_idx,
                                                        size_t transitivity,
                                                        std::vector<Correspondence>* found) const {
  found->clear();
  if (transitivity == 0) return;
  const Correspondence start(image_id, point2D_idx);
  auto key = [](const Correspondence& c) {
    return (static_cast<uint64_t>(c.image_id) << 32) | c.point2D_idx;
  };
  std::unordered_set<uint64_t> visited = {key(start)};
  std::vector<Correspondence> frontier = {start};
  for (size_t hop = 0; hop < transitivity && !frontier.empty(); ++hop) {
    std::vector<Correspondence> next;
    for (const Correspondence& from : frontier) {
      for (const Correspondence& to : FindCorrespondences(from.image_id, from.point2D_idx)) {
        if (visited.insert(key(to)).second) {
          next.push_back(to);
          found->push_back(to);
        }
      }
    }
    frontier.swap(next);
  }
}

CorrespondenceGraph::Matches CorrespondenceGraph::FindCorrespondencesBetweenImages(
    image_t image_id1, image_t image_id2) const {
  Matches matches;
  const auto it = images_.find(image_id1);
  if (it == images_.end()) return matches;
  matches.reserve(NumCorrespondencesBetweenImages(image_id1, image_id2));
  const auto& corrs = it->second.corrs;
  for (point2D_t idx1 = 0; idx1 < corrs.size(); ++idx1) {
    for (const Correspondence& corr : corrs[idx1]) {
      if (corr.image_id == image_id2) matches.emplace_back(idx1, corr.point2D_idx);
    }
  }
  return matches;
}

bool CorrespondenceGraph::IsTwoViewObservation(image_t image_id, point2D_t point2D_idx) const {
  const std::vector<Correspondence>& corrs = FindCorrespondences(image_id, point2D_idx);
  if (corrs.size() != 1) return false;
  return FindCorrespondences(corrs[0].image_id, corrs[0].point2D_idx).size() == 1;
}

}  // namespace edgesfm

// Incremental triangulation for the mapper, after COLMAP's IncrementalTriangulator
// (Schönberger & Frahm, "Structure-from-Motion Revisited", CVPR 2016, sec. 4.5):
// - TriangulateImage: each keypoint of a newly registered image either continues an
//   existing track of a corresponding keypoint or, with its corresponding keypoints in
//   other registered images, creates a new point by robust multi-view triangulation
//   (RANSAC over view pairs, refined on the inliers).
// - CompleteTracks: adds to points the keypoints that correspond to their track (up to
//   `complete_max_transitivity` hops) and reproject well.
// - MergeTracks: merges two points whose keypoints correspond when the merged point
//   reprojects well in every observation.
// - Retriangulate: revisits image pairs whose correspondences are mostly not
//   triangulated (early, less accurate poses lost them): a keypoint joins its partner's
//   point under a looser error, two free keypoints make a point under the normal one
//   (a looser creation threshold makes the model drift, as COLMAP notes).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scene/correspondence_graph.h"
#include "scene/reconstruction.h"

namespace edgesfm {

struct IncrementalTriangulatorOptions {
  // Hops through the correspondence graph when looking for a keypoint's partners.
  int max_transitivity = 1;
  // Reprojection error (pixels) for a view to join a new or an existing point.
  double create_max_error = 4.0;
  double continue_max_error = 4.0;
  double merge_max_error = 4.0;
  double complete_max_error = 4.0;
  int complete_max_transitivity = 5;
  // Retriangulation: pairs with fewer than this fraction of their correspondences
  // triangulated, each revisited at most re_max_trials times per model; the looser
  // error for continuing a point.
  double re_min_ratio = 0.2;
  int re_max_trials = 1;
  double re_max_error = 8.0;
  // Minimum triangulation angle of a new point (degrees).
  double min_angle_deg = 1.5;
  // Skip creating points from a keypoint matched in exactly one other image whose
  // partner is matched only to it (weak two-view tracks), as COLMAP.
  bool ignore_two_view_tracks = true;
};

class IncrementalTriangulator {
 public:
  IncrementalTriangulator(const CorrespondenceGraph* correspondence_graph,
                          Reconstruction* reconstruction)
      : graph_(correspondence_graph), reconstruction_(reconstruction) {}

  // Each returns the number of observations added.
  size_t TriangulateImage(const IncrementalTriangulatorOptions& options, image_t image_id);
  size_t CompleteImage(const IncrementalTriangulatorOptions& options, image_t image_id);
  size_t CompleteTracks(const IncrementalTriangulatorOptions& options,
                        const std::unordered_set<point3D_t>& point3D_ids);
  size_t CompleteAllTracks(const IncrementalTriangulatorOptions& options);
  // Returns the number of merges.
  size_t MergeTracks(const IncrementalTriangulatorOptions& options,
                     const std::unordered_set<point3D_t>& point3D_ids);
  size_t MergeAllTracks(const IncrementalTriangulatorOptions& options);
  size_t Retriangulate(const IncrementalTriangulatorOptions& options);

  // Retriangulation visits per image pair (kept by mapping checkpoints).
  const std::unordered_map<image_pair_t, int>& ReNumTrials() const { return re_num_trials_; }
  void SetReNumTrials(std::unordered_map<image_pair_t, int> trials) {
    re_num_trials_ = std::move(trials);
  }

  // Points created or changed since the last Clear (the mapper filters them after
  // local bundle adjustment).
  const std::unordered_set<point3D_t>& ModifiedPoints3D() const { return modified_point3D_ids_; }
  void ClearModifiedPoints3D() { modified_point3D_ids_.clear(); }

 private:
  struct View {
    image_t image_id;
    point2D_t point2D_idx;
  };
  // Pixel error of `xyz` seen as keypoint (image_id, idx); +inf if not imageable.
  double ReprojectionError(const Eigen::Vector3d& xyz, image_t image_id,
                           point2D_t point2D_idx) const;
  // Robust triangulation of `views` (first view is the new image's keypoint); fills the
  // inlier views. False if no point with >= 2 inliers and enough angle exists.
  bool TriangulateViews(const IncrementalTriangulatorOptions& options, double max_error,
                        const std::vector<View>& views, Eigen::Vector3d* xyz,
                        std::vector<View>* inliers) const;
  // Registered partners of a keypoint.
  void FindRegisteredCorrespondences(image_t image_id, point2D_t point2D_idx, int transitivity,
                                     std::vector<View>* views) const;
  bool TryMerge(const IncrementalTriangulatorOptions& options, point3D_t a, point3D_t b,
                point3D_t* merged);

  const CorrespondenceGraph* graph_;
  Reconstruction* reconstruction_;
  std::unordered_set<point3D_t> modified_point3D_ids_;
  std::unordered_map<image_pair_t, int> re_num_trials_;
};

}  // namespace edgesfm

// Which part of a reconstruction a bundle adjustment refines, and the adjustment of a
// Reconstruction in place (COLMAP's BundleAdjustmentConfig + BundleAdjuster; the solver
// is optim/bundle_adjustment.h, Triggs et al. 2000).
//
// Residuals: every observation of the config's images, plus, for each explicitly
// variable point, its observations in images outside the config (their poses held), as
// COLMAP's local bundle adjustment does.
#pragma once

#include <unordered_map>
#include <unordered_set>

#include "optim/bundle_adjustment.h"
#include "scene/reconstruction.h"

namespace edgesfm {

struct BundleAdjustmentConfig {
  std::unordered_set<image_t> image_ids;
  std::unordered_set<image_t> constant_pose_ids;
  // Images whose translation entry (0, 1 or 2) is held: the scale of the gauge.
  std::unordered_map<image_t, int> constant_translation_entry;
  std::unordered_set<camera_t> constant_camera_ids;
  // Points to refine also through their observations in images outside the config.
  std::unordered_set<point3D_t> variable_point_ids;
  std::unordered_set<point3D_t> constant_point_ids;

  // Holds the first pose and the scale-sensitive translation entry of the second
  // (optim: ScaleGaugeTranslationIndex): fixes the similarity gauge.
  void FixGauge(const Reconstruction& reconstruction, image_t first, image_t second);
};

// spec 2.12 BundleAdjustmentSpec `mode`: standard or two_stage (robust pass, outliers
// above `max_reprojection_error` removed from the reconstruction, final pass).
struct ReconstructionBundleAdjustmentOptions {
  BundleAdjustmentOptions solver;
  bool two_stage = false;
  double max_reprojection_error = 4.0;
  // Spec 2.12 `spherical` pipeline (`panorama: true`): above 0, every SPHERICAL image is
  // adjusted as the cubemap rig of scene/cubemap.h with faces of this many pixels: each
  // observation is a pixel of the face its ray falls on (where a face-based extractor found it),
  // its residual is measured there, and the six faces keep their fixed relative poses, so the
  // panorama's pose (the rig's) is what moves.
  int cubemap_rig_face_size = 0;
};

// Adjusts the reconstruction in place. Observations dropped by two_stage are deleted
// from the reconstruction (points left with fewer than two observations disappear).
BundleAdjustmentSummary AdjustReconstruction(const ReconstructionBundleAdjustmentOptions& options,
                                             const BundleAdjustmentConfig& config,
                                             Reconstruction* reconstruction);

}  // namespace edgesfm

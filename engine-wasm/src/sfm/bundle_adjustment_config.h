// Which part of a reconstruction a bundle adjustment refines, and the adjustment of a
// Reconstruction in place (COLMAP's BundleAdjustmentConfig + BundleAdjuster; the solver
// is optim/bundle_adjustment.h, Triggs et al. 2000).
//
// Residuals: every observation of the config's images, plus, for each explicitly
// variable point, its observations in images outside the config (their poses held), as
// COLMAP's local bundle adjustment does.
#pragma once

#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "optim/bundle_adjustment.h"
#include "scene/reconstruction.h"

namespace edgesfm {

// What an image's pose is known to be (spec 2.13 PosePrior, or a GPS position in a local ENU
// frame), in the frame the model is to come out in: the centre and cam_from_world rotation,
// whitened by `sqrt_information` (optim: PoseSqrtInformation of the 6x6 covariance, rotation
// first; a huge rotation variance leaves the orientation free).
struct ImagePosePrior {
  Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();
  Eigen::Vector3d centre = Eigen::Vector3d::Zero();
  Eigen::Matrix<double, 6, 6> sqrt_information = Eigen::Matrix<double, 6, 6>::Identity();
};
using ImagePosePriors = std::unordered_map<image_t, ImagePosePrior>;

// COLMAP 3.10's pose-prior mapper: moves the model onto the priors by the similarity that
// best fits its registered images' centres to theirs (Umeyama). False, model untouched, with
// fewer than 3 such images or collinear centres (the similarity is then not determined).
bool AlignToPosePriors(const ImagePosePriors& priors, Reconstruction* reconstruction);

struct BundleAdjustmentConfig {
  std::unordered_set<image_t> image_ids;
  std::unordered_set<image_t> constant_pose_ids;
  // Images whose translation entry (0, 1 or 2) is held: the scale of the gauge.
  std::unordered_map<image_t, int> constant_translation_entry;
  std::unordered_set<camera_t> constant_camera_ids;
  // Points to refine also through their observations in images outside the config.
  std::unordered_set<point3D_t> variable_point_ids;
  std::unordered_set<point3D_t> constant_point_ids;
  // Constrain the config's images by the options' pose priors (soft constraints, which then fix
  // the gauge instead of FixGauge).
  bool use_pose_priors = false;

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
  // Pose priors by image: used by the adjustments whose config says `use_pose_priors` (the
  // mapper's global adjustment, once the model is aligned to them).
  std::shared_ptr<const ImagePosePriors> pose_priors;
  // Above 0: the focal lengths of per-image cameras (one image each) without a focal-length prior
  // are pulled towards the median of their group's among the registered images, by the residual
  // (log f - log median) / focal_group_sigma. A group is one model and size in either orientation
  // (focal lengths in pixels), or, for a camera whose size group is too small, one model and
  // aspect ratio (focal lengths as ratios of the larger side: photos found online, resized).
  // Such photos most often come from one device, and a free focal length per photo trades off
  // against depth: on a street walked along (opensfm-lund, truth 728 px for all), global
  // adjustments slid them into a gradient from 637 to 1001 px and the model broke. Weak: a
  // deviation of sigma costs as much as one observation 1 px off, and a photo whose points say
  // otherwise (a zoom, another device of the same aspect ratio) keeps its own (see
  // focal_group_loss_scale). The median moves with the group within an adjustment: held, it
  // dragged the group towards where it started (COLMAP's guess without EXIF, 1.2 x the larger
  // side).
  double focal_group_sigma = 0.05;
  // The group prior is robust: Cauchy at this many sigma (0: quadratic). A photo of another
  // device or zoom in the group (a size or aspect ratio says nothing of the lens) is let go once
  // its points put it a few sigma from the median; held quadratically it dragged the whole group
  // down the focal-depth valley (opensfm-lund with half of its photos cropped: every focal length
  // 30% short, 7-12 deg off). At 1 sigma the valley let single photos slide away again.
  double focal_group_loss_scale = 2;
  // Groups need this many registered per-image cameras for their median to be used.
  int focal_group_min_size = 3;
  // Above 0: a per-image camera with a focal-length prior (EXIF) is pulled towards that focal
  // length (prior_focal_lengths, by camera) by (log f - log prior) / prior_focal_sigma. COLMAP
  // refines it freely; on a street walked along (opensfm-lund, its true focal length given as
  // EXIF) global adjustments slid single photos' focal lengths along the same valley (one to
  // 7e8 px) and the model broke in two. Weak as focal_group_sigma is: a photo whose points say
  // otherwise (cropped, or a wrong EXIF) keeps its own.
  double prior_focal_sigma = 0.05;
  // The EXIF prior is robust too: Cauchy at this many sigma (0: quadratic). A cropped photo keeps
  // its original's EXIF, which then says too short a focal length: held quadratically it bent
  // opensfm-lund (half of it cropped, bench/internet.ts --zoomed --exif-uncropped) by 1.4-5.7 deg.
  double prior_focal_loss_scale = 2;
  std::shared_ptr<const std::unordered_map<camera_t, double>> prior_focal_lengths;
  // Cameras of one image each are held at their parameters (the global mapper's first
  // adjustment, from rough positions).
  bool hold_per_image_cameras = false;
};

// The groups of ReconstructionBundleAdjustmentOptions::focal_group_sigma: each camera that is one
// image's and has no focal-length prior is a member of its size group where that has at least
// focal_group_min_size registered such cameras, else of its aspect group where that has; empty
// when the sigma is 0. Bundle adjustment pulls each member towards its group's median, which
// moves with the group (BundleAdjustmentProblem::FocalPrior).
struct FocalGroups {
  struct Member {
    int group = -1;
    // Log of what its focal length is compared as a ratio of: 0 (pixels) in a size group, the
    // larger side's log in an aspect group.
    double log_scale = 0;
  };
  std::unordered_map<camera_t, Member> members;
  // Per group: log (focal / scale) of its registered cameras, by camera (members of another
  // group included: a photo in its size group still counts in its aspect group).
  std::vector<std::map<camera_t, double>> registered;
  // The log focal length its group's median over the registered cameras gives a member.
  double LogMedianFocal(camera_t camera_id) const;
};
FocalGroups FocalGroupsOf(const ReconstructionBundleAdjustmentOptions& options,
                          const Reconstruction& reconstruction);

// ReconstructionBundleAdjustmentOptions::prior_focal_lengths from the cameras a mapper starts
// from: the focal length of each camera with a focal-length prior.
std::shared_ptr<const std::unordered_map<camera_t, double>> PriorFocalLengths(
    const Reconstruction& input);

// Adjusts the reconstruction in place. Observations dropped by two_stage are deleted
// from the reconstruction (points left with fewer than two observations disappear).
BundleAdjustmentSummary AdjustReconstruction(const ReconstructionBundleAdjustmentOptions& options,
                                             const BundleAdjustmentConfig& config,
                                             Reconstruction* reconstruction);

}  // namespace edgesfm

// The incremental mapper: one reconstruction grown image by image, after COLMAP's
// IncrementalMapper (Schönberger & Frahm, "Structure-from-Motion Revisited", CVPR
// 2016): initial pair selection and two-view initialisation (sec. 4.2), next-best-view
// selection by the number and spread of visible 3D points (sec. 4.2, the visibility
// pyramid), registration by absolute pose (P3P in LO-RANSAC + refinement),
// triangulation (sfm/incremental_triangulator.h), local bundle adjustment around each
// new image and global bundle adjustment (sec. 4.5), and outlier filtering by
// reprojection error and triangulation angle.
//
// The mapper works on a Reconstruction holding every camera and image (with
// keypoints); `num_registrations` counts, per image, registrations in other models so
// that later models start from images no model has used (multiple models).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sfm/bundle_adjustment_config.h"
#include "sfm/incremental_triangulator.h"

namespace edgesfm {

struct IncrementalMapperOptions {
  // Initial pair (COLMAP's defaults).
  int init_min_num_inliers = 100;
  double init_max_error = 4.0;
  double init_max_forward_motion = 0.95;
  // Pairs whose baseline is less along the viewing direction are refused (the passes that
  // lift the forward-motion limit take only the pairs it turned away).
  double init_min_forward_motion = 0;
  double init_min_tri_angle = 16.0;  // degrees
  int init_max_reg_trials = 2;
  // Registration.
  double abs_pose_max_error = 12.0;
  int abs_pose_min_num_inliers = 30;
  // Moving forward along a street, an image may see fewer than abs_pose_min_num_inliers of
  // the model's points (far points ahead are too flat to triangulate) while matching its
  // registered predecessor hundreds of times. A pose with at least half the inliers is then
  // accepted if the epipolar geometry it makes with its best-matched registered image (at
  // least this many matches) explains this fraction of their matches within this error
  // (pixels, Sampson, as two-view verification): hundreds of matches vouch for the pose
  // across their epipolar lines, the PnP inliers along them. (COLMAP has no such rule and
  // splits or stops opensfm-lund at photo 16 on most seeds.)
  int abs_pose_epipolar_min_num_matches = 100;
  double abs_pose_min_epipolar_support = 0.8;
  double abs_pose_epipolar_max_error = 4.0;
  double abs_pose_min_inlier_ratio = 0.25;
  bool abs_pose_refine_focal_length = true;
  bool abs_pose_refine_extra_params = true;
  int max_reg_trials = 3;
  // Local bundle adjustment: the new image and this many - 1 best-connected images.
  int local_ba_num_images = 6;
  // Filtering.
  double filter_max_reproj_error = 4.0;
  double filter_min_tri_angle = 1.5;  // degrees
  double min_focal_length_ratio = 0.1;
  double max_focal_length_ratio = 10.0;
  double max_extra_param = 1.0;
  // Base of every random seed (spec: `seed`); seeds are derived per image and trial so
  // that a resumed run repeats the same choices.
  uint64_t seed = 0;
};

// The relative pose of a candidate initial pair and the measures the initialisation
// rules test. It depends only on the input (the cameras' initial parameters, the
// matches and the seed), so a pipeline computes it once per pair and shares it between
// relaxation passes and models.
struct InitialPairGeometry {
  bool valid = false;
  Rigid3d cam2_from_cam1;
  // Matches that fit the essential matrix, and of those the ones triangulated in front
  // of both cameras with their triangulation angles (radians).
  size_t num_inliers = 0;
  std::vector<std::pair<size_t, Eigen::Vector3d>> points;  // (match index, xyz)
  std::vector<double> angles;
  // |z| of the unit baseline in the first camera: 1 for motion along the viewing direction.
  double forward_motion = 1;
  double median_tri_angle = 0;  // radians
};
using InitialPairCache = std::map<std::pair<image_t, image_t>, InitialPairGeometry>;

class IncrementalMapper {
 public:
  // `database` holds every camera's initial parameters (COLMAP's database cache): a camera
  // registration starts again from them. `init_pair_cache` (optional) keeps initial-pair
  // geometries across mappers.
  IncrementalMapper(const CorrespondenceGraph* correspondence_graph, const Reconstruction* database,
                    Reconstruction* reconstruction,
                    const std::unordered_map<image_t, int>* num_registrations,
                    InitialPairCache* init_pair_cache = nullptr);

  // Best untried pair of images no model has registered; false if none is left.
  bool FindInitialImagePair(const IncrementalMapperOptions& options, image_t* image_id1,
                            image_t* image_id2);
  // Estimates the pair's relative pose, registers both, triangulates their matches.
  bool RegisterInitialImagePair(const IncrementalMapperOptions& options, image_t image_id1,
                                image_t image_id2);
  // Unregistered images ranked for registration (best first).
  std::vector<image_t> FindNextImages(const IncrementalMapperOptions& options);
  bool RegisterNextImage(const IncrementalMapperOptions& options, image_t image_id);

  size_t TriangulateImage(const IncrementalTriangulatorOptions& options, image_t image_id);
  size_t Retriangulate(const IncrementalTriangulatorOptions& options);
  size_t CompleteAndMergeTracks(const IncrementalTriangulatorOptions& options);

  // Local BA around `image_id`, then track completion/merging and filtering of the
  // points it touched. Returns the number of observations filtered.
  size_t AdjustLocalBundle(const IncrementalMapperOptions& options,
                           const ReconstructionBundleAdjustmentOptions& ba_options,
                           const IncrementalTriangulatorOptions& tri_options, image_t image_id);
  // BA over every registered image with the gauge held by the first two.
  bool AdjustGlobalBundle(const IncrementalMapperOptions& options,
                          const ReconstructionBundleAdjustmentOptions& ba_options);
  size_t FilterPoints(const IncrementalMapperOptions& options);
  size_t FilterImages(const IncrementalMapperOptions& options);

  // Images that failed to register this many times are not tried again.
  const std::unordered_map<image_t, int>& NumRegTrials() const { return num_reg_trials_; }
  // Restores the per-model bookkeeping (checkpoint resume).
  void SetState(std::unordered_map<image_t, int> num_reg_trials,
                std::unordered_map<image_t, int> init_num_reg_trials,
                std::set<std::pair<image_t, image_t>> tried_init_pairs);
  // Gives every image its registration trials again (re-registration after a global
  // refinement has moved the model).
  void ClearRegTrials() { num_reg_trials_.clear(); }
  const std::unordered_map<image_t, int>& InitNumRegTrials() const { return init_num_reg_trials_; }
  const std::unordered_map<image_pair_t, int>& ReNumTrials() const {
    return triangulator_.ReNumTrials();
  }
  void SetReNumTrials(std::unordered_map<image_pair_t, int> trials) {
    triangulator_.SetReNumTrials(std::move(trials));
  }
  const std::set<std::pair<image_t, image_t>>& TriedInitPairs() const { return tried_init_pairs_; }

  // The registered image with the most matches to `image_id`, and their number.
  std::pair<image_t, size_t> BestMatchedRegisteredImage(image_t image_id) const;
  // The fraction of the matches between `image_id`, at `cam_from_world` with `camera`, and
  // the registered `partner_id` that the two poses' essential matrix explains within
  // `max_error_px` (Sampson).
  double EpipolarSupport(image_t image_id, const Rigid3d& cam_from_world, const Camera& camera,
                         image_t partner_id, double max_error_px) const;

 private:
  bool IsUsedElsewhere(image_t image_id) const;
  // Adjusts as `config` says, guarding the intrinsics as COLMAP's bounds do
  // (min/max_focal_length_ratio, max_extra_param): a camera the adjustment makes bogus is put
  // back and held, and the adjustment repeated from where it started.
  BundleAdjustmentSummary AdjustGuardingIntrinsics(
      const IncrementalMapperOptions& options,
      const ReconstructionBundleAdjustmentOptions& ba_options, BundleAdjustmentConfig config);
  // The pair's geometry, from the cache or estimated (and cached).
  const InitialPairGeometry& InitialGeometry(const IncrementalMapperOptions& options,
                                             image_t image_id1, image_t image_id2);
  // The images sharing most 3D points with `image_id` (at most local_ba_num_images - 1).
  std::vector<image_t> FindLocalBundle(const IncrementalMapperOptions& options,
                                       image_t image_id) const;
  // Number of images registered per camera (intrinsics are refined at registration only
  // for cameras no registered image uses yet).
  size_t NumRegImagesForCamera(camera_t camera_id) const;

  const CorrespondenceGraph* graph_;
  const Reconstruction* database_;
  Reconstruction* reconstruction_;
  const std::unordered_map<image_t, int>* num_registrations_;
  InitialPairCache own_init_pair_cache_;
  InitialPairCache* init_pair_cache_;
  IncrementalTriangulator triangulator_;
  std::unordered_map<image_t, int> num_reg_trials_;
  std::unordered_map<image_t, int> init_num_reg_trials_;
  std::set<std::pair<image_t, image_t>> tried_init_pairs_;
};

}  // namespace edgesfm

// The global mapper of spec 2.12 (PipelineSpec `global`), after GLOMAP (Pan et al., "Global
// Structure-from-Motion Revisited", ECCV 2024) and COLMAP's global_mapper: given the images'
// rotations from rotation averaging over the filtered view graph (browser-runtime
// stages/view-graph.ts), every image of the largest connected part of the graph is placed at
// once, and the model refined as a whole instead of grown image by image:
// 1. PositionImages: tracks from the correspondence graph (keypoints joined by their matches,
//    tracks that see one image twice dropped), at most `max_tracks_per_image` longest tracks
//    per image; camera centres and points by global positioning (sfm/global_positioning.h);
//    observations further than `max_angle_error_deg` from their positioned direction dropped,
//    and images left with fewer than `min_num_inlier_observations` of them not registered.
// 2. RefineGlobalModel: the positioned points as the model's first points, a robust bundle
//    adjustment (Cauchy, intrinsics held) and filtering by reprojection error, then
//    triangulation of every image (sfm/incremental_triangulator.h) and the incremental
//    mapper's iterative global refinement (retriangulation, bundle adjustment, track
//    completion and merging, filtering) twice, the second from the poses the first refined
//    and with the images whose matches contradict their pose registered again
//    (ReRegisterContradictedImages).
#pragma once

#include <Eigen/Geometry>
#include <unordered_map>

#include "sfm/global_positioning.h"
#include "sfm/incremental_mapper.h"

namespace edgesfm {

struct GlobalMapperOptions {
  GlobalPositioningOptions positioning;
  // Image pairs with fewer correspondences do not connect images.
  int min_num_matches = 15;
  int min_track_length = 2;
  int max_tracks_per_image = 300;
  double max_angle_error_deg = 2.0;
  int min_num_inlier_observations = 10;
  IncrementalMapperOptions mapper;
  IncrementalTriangulatorOptions triangulation;
  ReconstructionBundleAdjustmentOptions ba;
  int ba_max_num_iterations = 50;
  int ba_max_refinements = 5;
  double ba_max_refinement_change = 0.0005;
};

struct GlobalPositioningSummary {
  size_t num_images_with_rotation = 0;
  size_t num_images_in_component = 0;
  size_t num_images_positioned = 0;
  size_t num_tracks = 0;
  size_t num_observations = 0;
  size_t num_inlier_observations = 0;
};

// The model with the positioned images registered (cam_from_world from the given rotation and
// the positioned centre) and the positioned points that kept two or more inlier observations.
// `input` holds every camera and image (keypoints), nothing registered; `rotations` the
// cam_from_world rotations of the images rotation averaging reached.
Reconstruction PositionImages(const GlobalMapperOptions& options, const Reconstruction& input,
                              const CorrespondenceGraph& graph,
                              const std::unordered_map<image_t, Eigen::Quaterniond>& rotations,
                              GlobalPositioningSummary* summary);

// Step 2 above, in place; `input` as for PositionImages (each camera's initial parameters).
void RefineGlobalModel(const GlobalMapperOptions& options, const Reconstruction& input,
                       const CorrespondenceGraph& graph, Reconstruction* model);

// Images whose pose the refinement settled where their matches contradict it: the median
// epipolar support over the registered partners they share abs_pose_epipolar_min_num_matches
// or more matches with is below the mapper's abs_pose_min_epipolar_support (the check of a
// registration with few inliers). Global positioning can place an image that sees the scene
// head-on (along a street) at the wrong depth, and bundle adjustment then holds it there, its
// focal length trading off with the depth (opensfm-lund with EXIF: 01.jpg 23-87% of the scene
// away, at 587 px for 728, its pose explaining 50-74% of its matches with each of its two or
// three partners, where the other images' medians are 0.79 or more). Each is taken out and
// registered again from the model's points, as the incremental mapper registers an image, and
// triangulated; where that fails it goes back where it was. RefineGlobalModel calls it after
// its first round. Answers the number registered again.
size_t ReRegisterContradictedImages(const GlobalMapperOptions& options,
                                    const CorrespondenceGraph& graph, IncrementalMapper* mapper,
                                    Reconstruction* model);

}  // namespace edgesfm

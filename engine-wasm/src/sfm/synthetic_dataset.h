// Synthetic scenes with known truth for testing the mapper and its parts (COLMAP's
// SynthesizeDataset): cameras on an arc around a cloud of points, or walking down a
// street between two facades and looking along it; keypoints by projection (with pixel
// noise and distractor keypoints), and the correspondence graph of true matches plus
// injected outlier matches.
#pragma once

#include <cstdint>

#include "scene/correspondence_graph.h"
#include "scene/reconstruction.h"

namespace edgesfm {

enum class SyntheticTrajectory {
  // Cameras on an arc around a cloud of points in [-1, 1]^3, looking at its centre.
  kArc,
  // Cameras stepping `street_step` along +z, looking along it (within a few degrees),
  // between facades of points at x = +-`street_half_width`: every baseline lies along
  // the viewing direction.
  kStreet,
};

struct SyntheticDatasetOptions {
  SyntheticTrajectory trajectory = SyntheticTrajectory::kArc;
  int num_cameras = 1;  // images use camera (i % num_cameras) + 1
  int num_images = 8;
  int num_points3D = 300;
  int width = 800;
  int height = 600;
  double focal_length = 700;
  double radial_distortion = 0.02;  // SIMPLE_RADIAL k
  double point2D_noise_px = 0.3;
  // Fraction of keypoints per image that are distractors (no 3D point).
  double distractor_ratio = 0.2;
  // Outlier matches added per image pair, as a fraction of its true matches.
  double outlier_match_ratio = 0.0;
  // Angle between consecutive cameras on the arc (radians); distance to the centre.
  double arc_step = 0.12;
  double camera_distance = 6;
  // Random vertical offset of the camera centres (up to +-this).
  double center_jitter = 0.3;
  double street_step = 0.5;
  double street_half_width = 3;
  uint32_t seed = 1;
};

struct SyntheticDataset {
  // Ground truth: every image registered, points with full tracks; keypoint indices
  // match `images`.
  Reconstruction truth;
  // The mapper's input: cameras and images with keypoints, nothing registered.
  Reconstruction input;
  CorrespondenceGraph correspondence_graph;
};

SyntheticDataset SynthesizeDataset(const SyntheticDatasetOptions& options);

}  // namespace edgesfm

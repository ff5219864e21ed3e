// Global positioning of cameras and points from known rotations (GLOMAP: Pan, Baráth,
// Pollefeys and Schönberger, "Global Structure-from-Motion Revisited", ECCV 2024, sec. 3.3):
// with every camera's rotation fixed, each observation of a track gives the direction from
// the camera centre c to the point X in the world frame, v = R^T * ray. Cameras and points
// are placed jointly, from a random start, by minimising a robust (Huber) cost over all
// observations with the engine's own Levenberg-Marquardt: the points are eliminated by the
// Schur complement and the camera centres solved in a reduced system
// (optim/reduced_camera_system.h), so the cost grows with the observations, not with
// the images squared.
//
// Two formulations of an observation's residual (spec 2.12 `formulation`):
// - explicit scale (GLOMAP's BATA residual, Zhuang et al. CVPR 2018): r = v - d (X - c) with a
//   per-observation scale d >= 1e-5 solved alongside (eliminated per observation before the
//   points are); the scale lets far and near points weigh alike and the cost is bounded
//   (|r| -> |v| = 1 as d -> 0), which makes the random start converge;
// - eliminated scale: r = (X - c) / |X - c| - v, the chord between the unit directions (the
//   scale taken out by normalisation; scale-invariant, no extra unknowns).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace edgesfm {

enum class PositioningFormulation { kExplicitScale, kEliminatedScale };

struct GlobalPositioningOptions {
  PositioningFormulation formulation = PositioningFormulation::kExplicitScale;
  int max_num_iterations = 100;
  // Huber threshold on the residual's norm (GLOMAP: 0.1).
  double loss_threshold = 0.1;
  // Stop when an accepted step lowers the cost by less than this fraction.
  double function_tolerance = 1e-7;
  // Rounds that drop observations further than outlier_angle_deg (degrees) from the solution
  // and solve again from it.
  int num_outlier_rounds = 2;
  double outlier_angle_deg = 5.0;
  // Random start (uniform in [-1, 1]^3) from this seed.
  uint64_t seed = 0;
};

struct PositioningObservation {
  int camera = 0;
  int point = 0;
  // Unit direction from the camera centre towards the point, world frame.
  Eigen::Vector3d direction = Eigen::Vector3d::UnitZ();
};

struct GlobalPositioningProblem {
  int num_cameras = 0;
  int num_points = 0;
  // At most one observation per (camera, point).
  std::vector<PositioningObservation> observations;
};

struct GlobalPositioningResult {
  std::vector<Eigen::Vector3d> centres;
  std::vector<Eigen::Vector3d> points;
  // Per observation: kept by the rejection rounds.
  std::vector<bool> inlier;
  double initial_cost = 0;
  double final_cost = 0;
  int num_iterations = 0;
};

// Camera centres and points, up to a similarity (the first camera's centre is held where it
// starts; the scale is free). Cameras or points on no observation stay at their start.
GlobalPositioningResult SolveGlobalPositioning(const GlobalPositioningOptions& options,
                                               const GlobalPositioningProblem& problem);

// Angle (degrees) between an observation's direction and the one from `centre` to `point`.
double PositioningAngleErrorDeg(const Eigen::Vector3d& centre, const Eigen::Vector3d& point,
                                const Eigen::Vector3d& direction);

}  // namespace edgesfm

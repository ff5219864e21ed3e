// Relative pose from an essential matrix and back. Decomposition into the four
// (R, t) candidates follows Hartley & Zisserman, "Multiple View Geometry", 2nd ed.,
// result 9.19; the right one is chosen by cheirality (most triangulated points in front
// of both cameras). Refinement minimises the spherical Sampson errors over the 5-DOF pose
// by Gauss-Newton / Levenberg-Marquardt (as COLMAP's RefineRelativePose, without Ceres).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "geometry/rigid3.h"

namespace edgesfm {

// The two rotations and the unit translation (up to sign) of E = [t]_x R.
void DecomposeEssentialMatrix(const Eigen::Matrix3d& E, Eigen::Matrix3d* R1, Eigen::Matrix3d* R2,
                              Eigen::Vector3d* t);

// E = [t]_x R of a relative pose (not normalised).
Eigen::Matrix3d EssentialMatrixFromPose(const Rigid3d& cam2_from_cam1);

// Picks the decomposition of E with the most points in front of both cameras;
// `points3D` receives those points (in camera 1's frame). Rays as in
// EssentialMatrixFivePointEstimator. Returns false if no point passes.
bool PoseFromEssentialMatrix(const Eigen::Matrix3d& E, const std::vector<Eigen::Vector3d>& rays1,
                             const std::vector<Eigen::Vector3d>& rays2, Rigid3d* cam2_from_cam1,
                             std::vector<Eigen::Vector3d>* points3D);

// Refines a relative pose (rotation and unit translation) on inlier rays by minimising
// the spherical Sampson errors under a Cauchy loss (robust to the outliers a RANSAC
// threshold lets through). Returns false if the problem is degenerate.
bool RefineRelativePose(const std::vector<Eigen::Vector3d>& rays1,
                        const std::vector<Eigen::Vector3d>& rays2, Rigid3d* cam2_from_cam1,
                        int max_num_iterations = 50);

// E from F and the calibration matrices: E = K2^T F K1; and back.
Eigen::Matrix3d EssentialFromFundamentalMatrix(const Eigen::Matrix3d& K2, const Eigen::Matrix3d& F,
                                               const Eigen::Matrix3d& K1);
Eigen::Matrix3d FundamentalFromEssentialMatrix(const Eigen::Matrix3d& K2, const Eigen::Matrix3d& E,
                                               const Eigen::Matrix3d& K1);

}  // namespace edgesfm

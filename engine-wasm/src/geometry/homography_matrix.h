// Relative pose from a homography between calibrated views: the analytical
// decomposition of Malis & Vargas, "Deeper understanding of the homography
// decomposition for vision-based control", INRIA RR-6303, 2007 (as COLMAP), giving up to
// four (R, t, n) with H_normalised = R + t n^T (plane n^T x = 1 in camera 1); the right
// one is chosen by cheirality. A pure rotation gives t = 0 (the panoramic case).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "geometry/rigid3.h"

namespace edgesfm {

// `H` maps pixels of image 1 to pixels of image 2; K1, K2 the calibration matrices.
void DecomposeHomographyMatrix(const Eigen::Matrix3d& H, const Eigen::Matrix3d& K1,
                               const Eigen::Matrix3d& K2, std::vector<Eigen::Matrix3d>* Rs,
                               std::vector<Eigen::Vector3d>* ts,
                               std::vector<Eigen::Vector3d>* normals);

// The decomposition with the most inlier rays triangulating in front of both cameras
// (rays as in estimators/essential_matrix.h). For a pure rotation, t = 0 and `points3D`
// stays empty.
bool PoseFromHomographyMatrix(const Eigen::Matrix3d& H, const Eigen::Matrix3d& K1,
                              const Eigen::Matrix3d& K2, const std::vector<Eigen::Vector3d>& rays1,
                              const std::vector<Eigen::Vector3d>& rays2, Rigid3d* cam2_from_cam1,
                              Eigen::Vector3d* normal, std::vector<Eigen::Vector3d>* points3D);

}  // namespace edgesfm

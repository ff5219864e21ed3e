// Triangulation of a 3D point from calibrated views and the geometric tests that
// accept it. Two-view and multi-view linear (DLT) triangulation follow Hartley &
// Zisserman, "Multiple View Geometry", 2nd ed., sec. 12.2; the multi-view version
// minimises the algebraic error over rays like COLMAP's TriangulateMultiViewPoint; the
// mid-point method is Beardsley, Zisserman & Murray, "Sequential updating of projective
// and affine structure from motion", IJCV 1997.
//
// Observations are viewing rays in each camera's frame (Camera::CamFromImg), so any
// camera model (perspective, fisheye, spherical) triangulates the same way.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "geometry/rigid3.h"

namespace edgesfm {

// DLT from two views; `ray1/2` are viewing rays of the point in each camera. Returns
// false when the system is degenerate (point at infinity).
bool TriangulatePoint(const Rigid3d& cam1_from_world, const Rigid3d& cam2_from_world,
                      const Eigen::Vector3d& ray1, const Eigen::Vector3d& ray2,
                      Eigen::Vector3d* xyz);

// Least-squares over n >= 2 views: minimises sum_i |(I - d_i d_i^T)(X - c_i)|^2 over the
// unit ray directions d_i in world frame through the camera centres c_i (the optimal
// point for the angular-ish error used by COLMAP's TriangulateMultiViewPoint). Returns
// false when the rays are (nearly) parallel.
bool TriangulateMultiViewPoint(const std::vector<Rigid3d>& cams_from_world,
                               const std::vector<Eigen::Vector3d>& rays, Eigen::Vector3d* xyz);

// Mid-point of the shortest segment between the two world rays.
bool TriangulateMidPoint(const Rigid3d& cam1_from_world, const Rigid3d& cam2_from_world,
                         const Eigen::Vector3d& ray1, const Eigen::Vector3d& ray2,
                         Eigen::Vector3d* xyz);

// Angle in radians between the rays from both centres to the point.
double CalculateTriangulationAngle(const Eigen::Vector3d& center1, const Eigen::Vector3d& center2,
                                   const Eigen::Vector3d& point);

// Depth of a world point along the camera's optical axis (z in the camera frame).
double CalculateDepth(const Rigid3d& cam_from_world, const Eigen::Vector3d& point);

// Cheirality for a ray-based observation: the point lies in front of the camera along
// `ray` (positive projection on the ray). For perspective rays (u, v, 1) this is z > 0.
bool HasPointPositiveDepth(const Rigid3d& cam_from_world, const Eigen::Vector3d& ray,
                           const Eigen::Vector3d& point);

}  // namespace edgesfm

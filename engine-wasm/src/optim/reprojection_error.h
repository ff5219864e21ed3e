// The reprojection residual of bundle adjustment (Triggs et al., "Bundle
// Adjustment -- A Modern Synthesis", 2000): the pixel of a camera-frame point
// through a camera model, with its Jacobians with respect to the point and to
// every intrinsic parameter. Derivatives are exact, by forward-mode autodiff
// (optim/jet.h) through the templated models of scene/camera_models.h.
#pragma once

#include <Eigen/Core>

#include "scene/camera_models.h"

namespace edgesfm {

// Projects `point_in_cam` to pixels. Returns false when the model cannot image the
// point (behind a perspective camera). The Jacobians are optional (nullptr skips
// them); `d_params` is resized to 2 x num_params of the model.
bool ProjectWithJacobians(CameraModelId model_id, const double* params, double width, double height,
                          const Eigen::Vector3d& point_in_cam, Eigen::Vector2d* xy,
                          Eigen::Matrix<double, 2, 3>* d_point,
                          Eigen::Matrix<double, 2, Eigen::Dynamic>* d_params);

}  // namespace edgesfm

// Bundle adjustment: Levenberg-Marquardt on reprojection errors with the point
// blocks eliminated by the Schur complement, following Triggs, McLauchlan,
// Hartley and Fitzgibbon, "Bundle Adjustment -- A Modern Synthesis" (2000), and
// COLMAP's BundleAdjuster (Schönberger & Frahm 2016) for the parametrisation and
// options. Robust kernels enter as iteratively reweighted least squares.
//
// The problem is a view: pointers into the caller's storage (a reconstruction), so
// any scene representation can be adjusted in place. Poses are cam_from_world
// (rotation quaternion + translation) updated on the left by an axis-angle step;
// intrinsics are shared by every image that points to the same camera.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <array>
#include <string>
#include <vector>

#include "geometry/rigid3.h"
#include "optim/loss_function.h"
#include "scene/camera_models.h"

namespace edgesfm {

// Spec 2.12 BundleAdjustmentSpec plus the solver's stopping rules.
struct BundleAdjustmentOptions {
  LossKernel loss_kernel = LossKernel::kSquared;
  double loss_threshold = 1.0;  // pixels
  bool refine_focal_length = true;
  bool refine_principal_point = false;
  bool refine_extra_params = true;
  int max_num_iterations = 100;
  // Stop when an accepted step lowers the cost by less than this fraction.
  double function_tolerance = 1e-6;
  // Stop when the largest gradient entry is below this.
  double gradient_tolerance = 1e-10;
  // Stop when the step is below this fraction of the parameters' norm.
  double parameter_tolerance = 1e-8;
  // Reduced camera systems up to max_dense_dim unknowns use dense Cholesky, up to
  // max_direct_dim sparse Cholesky, beyond preconditioned conjugate gradients
  // (optim/reduced_camera_system.h).
  int max_dense_dim = 1500;
  int max_direct_dim = 5400;
};

struct BundleAdjustmentProblem {
  struct Camera {
    CameraModelId model_id = CameraModelId::kInvalid;
    double* params = nullptr;
    double width = 0, height = 0;
    bool constant = false;  // hold all intrinsics; otherwise the refine_* flags decide
  };
  struct Pose {
    Eigen::Quaterniond* rotation = nullptr;  // cam_from_world
    Eigen::Vector3d* translation = nullptr;  // cam_from_world
    bool constant_rotation = false;
    std::array<bool, 3> constant_translation = {false, false, false};
    void SetConstant() {
      constant_rotation = true;
      constant_translation = {true, true, true};
    }
  };
  struct Point {
    Eigen::Vector3d* xyz = nullptr;
    bool constant = false;
  };
  struct Observation {
    int camera = -1;
    int pose = -1;
    int point = -1;
    Eigen::Vector2d xy = Eigen::Vector2d::Zero();
    // A rig (COLMAP's sensor rigs): the pose is the rig's (rig_from_world) and this sensor's
    // fixed sensor_from_rig (an index into `sensors_from_rig`) takes points on to the camera,
    // so the sensors of one rig move as one body. -1: the pose is the camera's own.
    int sensor = -1;
  };

  // A soft constraint on a pose (COLMAP 3.10's PosePriorBundleAdjuster, which constrains the
  // camera centre, extended to the orientation): the residual [e; c - centre], e = Log(R^T R_p)
  // the world-frame axis-angle taking the prior's world_from_cam to the pose's (R, R_p the
  // cam_from_world rotations) and c = -R^T t the pose's centre, whitened by `sqrt_information`
  // (L with L^T L the inverse covariance, rotation first). Zero rows leave that part free: a
  // GPS position constrains no orientation.
  struct PosePrior {
    int pose = -1;
    Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();  // the prior's cam_from_world
    Eigen::Vector3d centre = Eigen::Vector3d::Zero();              // the prior's camera centre
    Eigen::Matrix<double, 6, 6> sqrt_information = Eigen::Matrix<double, 6, 6>::Zero();
  };

  // A soft constraint on a camera's focal lengths: the residual (log f - log_focal) / sigma for
  // each focal length entry of the camera (a relative deviation of sigma costs as much as one
  // pixel of reprojection error). Free focal lengths only; a held camera ignores it.
  // With a group (an index into focal_groups), the target moves with the group instead of
  // log_focal: log_scale plus the median, over the group's priors and fixed members, of
  // log (mean focal length) - log_scale, taken afresh at each evaluation. The group as a whole
  // then moves freely and only its members' spread is charged (the Jacobian treats the median as
  // held).
  // Above 0, loss_scale makes the residual robust (Cauchy, at this many sigma): a camera whose
  // points put it far from the target (a zoomed photo in a group of one device's) is let go.
  struct FocalPrior {
    int camera = -1;
    double log_focal = 0;
    double sigma = 1;
    int group = -1;
    double log_scale = 0;
    double loss_scale = 0;
  };
  // Members of a focal group that are not priors of the problem: log (focal / scale), held.
  struct FocalGroup {
    std::vector<double> fixed_log_ratios;
  };

  std::vector<Camera> cameras;
  std::vector<Pose> poses;
  std::vector<Point> points;
  std::vector<Observation> observations;
  std::vector<PosePrior> pose_priors;
  std::vector<FocalPrior> focal_priors;
  std::vector<FocalGroup> focal_groups;
  // Held constant: rigs with fixed relative poses (a cubemap's six faces, scene/cubemap.h).
  std::vector<Rigid3d> sensors_from_rig;
};

// The whitening L (L^T L = covariance^-1) of a 6x6 pose covariance (rotation, then centre;
// symmetric positive semi-definite): eigenvalues below `min_variance` are raised to it, so a
// zero variance holds that direction firmly instead of dividing by zero.
Eigen::Matrix<double, 6, 6> PoseSqrtInformation(const Eigen::Matrix<double, 6, 6>& covariance,
                                                double min_variance = 1e-12);

// The whitened residual of a pose prior (6: rotation, centre) at the pose's current value.
Eigen::Matrix<double, 6, 1> PosePriorResidual(const BundleAdjustmentProblem& problem,
                                              const BundleAdjustmentProblem::PosePrior& prior);

struct BundleAdjustmentSummary {
  int num_iterations = 0;
  int num_observations = 0;
  int num_variables = 0;
  double initial_cost = 0;  // 0.5 * sum of rho(|r|^2)
  double final_cost = 0;
  bool converged = false;
  std::string termination;
};

// The translation entry of the second pose to hold so that, with the first pose
// held, the similarity gauge (including scale) is fixed: the entry along which the
// baseline, seen from the second camera, is largest. Scaling the scene about the
// first centre moves t1 by -R1 (c1 - c0) per unit of scale, so this entry is the
// one most sensitive to scale (COLMAP always holds entry 0, which can be nearly
// insensitive when cameras look along the baseline).
int ScaleGaugeTranslationIndex(const Eigen::Quaterniond& rotation0,
                               const Eigen::Vector3d& translation0,
                               const Eigen::Quaterniond& rotation1,
                               const Eigen::Vector3d& translation1);

BundleAdjustmentSummary SolveBundleAdjustment(const BundleAdjustmentOptions& options,
                                              BundleAdjustmentProblem* problem);

// Reprojection error in pixels of every observation; +infinity when the point
// cannot be imaged (e.g. it is behind the camera).
std::vector<double> ReprojectionErrors(const BundleAdjustmentProblem& problem);

// Spec 2.12 `two_stage`: a robust pass (the options' kernel, or Cauchy at
// `loss_threshold` if the options say `squared`), then observations with a
// reprojection error above `max_reprojection_error` are dropped from the problem,
// then a final pass with the squared loss. `inliers` (optional) receives, per input
// observation, whether it was kept.
BundleAdjustmentSummary SolveTwoStageBundleAdjustment(const BundleAdjustmentOptions& options,
                                                      double max_reprojection_error,
                                                      BundleAdjustmentProblem* problem,
                                                      std::vector<bool>* inliers);

}  // namespace edgesfm

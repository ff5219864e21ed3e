#include "optim/bundle_adjustment.h"

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "optim/reduced_camera_system.h"
#include "optim/reprojection_error.h"
#include "util/parallel_for.h"

namespace edgesfm {
namespace {

// Squared error charged to an observation whose point cannot be imaged (1000 px), so
// that steps pushing points behind cameras are rejected by the cost test.
constexpr double kUnimageableSquaredError = 1e6;
// Marquardt's scaling of the damping by the Hessian diagonal, clamped as Ceres does.
constexpr double kMinDiagonal = 1e-6;
constexpr double kMaxDiagonal = 1e32;
constexpr double kInitialLambda = 1e-4;
constexpr double kMaxLambda = 1e16;
constexpr int kMaxIntrinsics = 16;
// Chunk sizes of the parallel loops (util/parallel_for.h): fixed, so that the solution does not
// depend on the number of threads.
constexpr size_t kObservationChunk = 1024;
constexpr size_t kPointChunk = 512;
constexpr size_t kBlockChunk = 8;
constexpr size_t kSlotChunk = 1024;
// Eliminating the points sums every point's W V^-1 W^T into the shared blocks of S: chunks of
// points after the first sum into their own copy of S's blocks, added to S in chunk order. At
// most kMaxSchurChunks chunks of at least kMinSchurChunkPoints points, and the copies within
// kSchurPartialBudgetBytes; the chunking follows from the problem alone.
constexpr size_t kMaxSchurChunks = 8;
constexpr size_t kMinSchurChunkPoints = 256;
constexpr size_t kSchurPartialBudgetBytes = size_t{32} << 20;

using JacobianRow2 = Eigen::Matrix<double, 2, Eigen::Dynamic, 0, 2, kMaxIntrinsics>;
// A camera block's coupling with a point (dim(block) x 3), on the stack: the normal equations
// are rebuilt every iteration and the heap would dominate them.
using CouplingBlock = Eigen::Matrix<double, Eigen::Dynamic, 3, 0, kMaxIntrinsics, 3>;

// The products of the normal equations are between small blocks: poses (6 unknowns) and
// intrinsics (1-3 for the usual models). Eigen's kernels for dynamic sizes are several times
// slower than its fixed-size ones there, so the usual sizes take a fixed-size path (same
// arithmetic, same order of summation); other sizes stay dynamic.
template <typename F>
bool WithFixedDim(int dim, F&& f) {
  switch (dim) {
    case 1:
      f(std::integral_constant<int, 1>());
      return true;
    case 2:
      f(std::integral_constant<int, 2>());
      return true;
    case 3:
      f(std::integral_constant<int, 3>());
      return true;
    case 6:
      f(std::integral_constant<int, 6>());
      return true;
    default:
      return false;
  }
}

// Both sizes of a product at once: f(rows, cols) when both are fixed-size ones.
template <typename F>
bool WithFixedDims(int rows, int cols, F&& f) {
  bool fixed = false;
  WithFixedDim(rows, [&](auto r) { fixed = WithFixedDim(cols, [&](auto c) { f(r, c); }); });
  return fixed;
}

template <int R, int C>
using Fixed = Eigen::Matrix<double, R, C>;

// block += w a^T b for Jacobians a (2 x rows) and b (2 x cols).
void AddJacobianProduct(double w, const JacobianRow2& a, const JacobianRow2& b,
                        Eigen::MatrixXd* block) {
  const bool fixed =
      WithFixedDims(static_cast<int>(a.cols()), static_cast<int>(b.cols()), [&](auto r, auto c) {
        constexpr int R = decltype(r)::value, C = decltype(c)::value;
        Eigen::Map<Fixed<R, C>>(block->data()).noalias() +=
            w * Eigen::Map<const Fixed<2, R>>(a.data()).transpose() *
            Eigen::Map<const Fixed<2, C>>(b.data());
      });
  if (!fixed) block->noalias() += w * a.transpose() * b;
}

// w a^T d_point for a Jacobian a (2 x rows).
CouplingBlock JacobianCoupling(double w, const JacobianRow2& a,
                               const Eigen::Matrix<double, 2, 3>& d_point) {
  CouplingBlock out(a.cols(), 3);
  const bool fixed = WithFixedDim(static_cast<int>(a.cols()), [&](auto r) {
    constexpr int R = decltype(r)::value;
    Eigen::Map<Fixed<R, 3>>(out.data()).noalias() =
        w * Eigen::Map<const Fixed<2, R>>(a.data()).transpose() * d_point;
  });
  if (!fixed) out.noalias() = w * a.transpose() * d_point;
  return out;
}

// a m for a coupling a (rows x 3) and a 3 x 3 matrix m.
CouplingBlock CouplingTimes(const CouplingBlock& a, const Eigen::Matrix3d& m) {
  CouplingBlock out(a.rows(), 3);
  const bool fixed = WithFixedDim(static_cast<int>(a.rows()), [&](auto r) {
    constexpr int R = decltype(r)::value;
    Eigen::Map<Fixed<R, 3>>(out.data()).noalias() = Eigen::Map<const Fixed<R, 3>>(a.data()) * m;
  });
  if (!fixed) out.noalias() = a * m;
  return out;
}

// block -= a b^T for couplings a (rows x 3) and b (cols x 3).
void SubtractCouplingProduct(const CouplingBlock& a, const CouplingBlock& b,
                             Eigen::MatrixXd* block) {
  const bool fixed =
      WithFixedDims(static_cast<int>(a.rows()), static_cast<int>(b.rows()), [&](auto r, auto c) {
        constexpr int R = decltype(r)::value, C = decltype(c)::value;
        Eigen::Map<Fixed<R, C>>(block->data()).noalias() -=
            Eigen::Map<const Fixed<R, 3>>(a.data()) *
            Eigen::Map<const Fixed<C, 3>>(b.data()).transpose();
      });
  if (!fixed) block->noalias() -= a * b.transpose();
}

// Which unknowns are free: the "camera" blocks of the reduced system are the
// variable intrinsics (one block per camera) followed by the variable poses.
struct Layout {
  int num_cameras = 0;
  std::vector<std::vector<int>> camera_vars;  // free intrinsic indices per camera
  std::vector<std::vector<int>> pose_vars;    // free entries of (rotation step, translation)
  std::vector<int> block_dims;
  std::vector<bool> point_variable;
  // Observation indices (ascending) of each point, pose and camera.
  std::vector<std::vector<int>> point_observations;
  std::vector<std::vector<int>> pose_observations;
  std::vector<std::vector<int>> camera_observations;
  int CameraBlock(int camera) const { return camera; }
  int PoseBlock(int pose) const { return num_cameras + pose; }
};

Layout BuildLayout(const BundleAdjustmentOptions& options, const BundleAdjustmentProblem& problem) {
  Layout layout;
  layout.num_cameras = static_cast<int>(problem.cameras.size());
  std::vector<bool> camera_used(problem.cameras.size(), false);
  std::vector<bool> pose_used(problem.poses.size(), false);
  layout.point_observations.resize(problem.points.size());
  layout.pose_observations.resize(problem.poses.size());
  layout.camera_observations.resize(problem.cameras.size());
  for (size_t o = 0; o < problem.observations.size(); ++o) {
    const auto& obs = problem.observations[o];
    camera_used[obs.camera] = true;
    pose_used[obs.pose] = true;
    layout.point_observations[obs.point].push_back(static_cast<int>(o));
    layout.pose_observations[obs.pose].push_back(static_cast<int>(o));
    layout.camera_observations[obs.camera].push_back(static_cast<int>(o));
  }
  layout.camera_vars.resize(problem.cameras.size());
  for (size_t c = 0; c < problem.cameras.size(); ++c) {
    const auto& camera = problem.cameras[c];
    if (camera.constant || !camera_used[c]) continue;
    std::vector<int>& vars = layout.camera_vars[c];
    if (options.refine_focal_length) {
      for (int i : CameraModelFocalLengthIdxs(camera.model_id)) vars.push_back(i);
    }
    if (options.refine_principal_point) {
      for (int i : CameraModelPrincipalPointIdxs(camera.model_id)) vars.push_back(i);
    }
    if (options.refine_extra_params) {
      for (int i : CameraModelExtraParamsIdxs(camera.model_id)) vars.push_back(i);
    }
    std::sort(vars.begin(), vars.end());
  }
  layout.pose_vars.resize(problem.poses.size());
  for (size_t p = 0; p < problem.poses.size(); ++p) {
    if (!pose_used[p]) continue;
    const auto& pose = problem.poses[p];
    if (!pose.constant_rotation) layout.pose_vars[p] = {0, 1, 2};
    for (int k = 0; k < 3; ++k) {
      if (!pose.constant_translation[k]) layout.pose_vars[p].push_back(3 + k);
    }
  }
  for (const auto& vars : layout.camera_vars)
    layout.block_dims.push_back(static_cast<int>(vars.size()));
  for (const auto& vars : layout.pose_vars)
    layout.block_dims.push_back(static_cast<int>(vars.size()));
  layout.point_variable.resize(problem.points.size());
  for (size_t p = 0; p < problem.points.size(); ++p) {
    layout.point_variable[p] = !problem.points[p].constant && !layout.point_observations[p].empty();
  }
  return layout;
}

// The residual of one observation and its Jacobians (full, before selecting the
// free columns) at the current parameters.
struct Linearization {
  bool valid = false;
  double weight = 0;  // rho'(|r|^2), the IRLS weight
  Eigen::Vector2d residual;
  Eigen::Matrix<double, 2, 6> d_pose;  // (rotation step, translation)
  JacobianRow2 d_intrinsics;
  Eigen::Matrix<double, 2, 3> d_point;
};

double EvaluateCost(const BundleAdjustmentOptions& options, const BundleAdjustmentProblem& problem,
                    std::vector<Linearization>* linearizations) {
  const bool want_jacobians = linearizations != nullptr;
  std::vector<double> rho(problem.observations.size());
  ParallelFor(problem.observations.size(), kObservationChunk, [&](int, size_t begin, size_t end) {
    Eigen::Matrix<double, 2, 3> d_cam_point;
    Eigen::Matrix<double, 2, Eigen::Dynamic> d_params;
    for (size_t o = begin; o < end; ++o) {
      const auto& obs = problem.observations[o];
      const auto& camera = problem.cameras[obs.camera];
      const auto& pose = problem.poses[obs.pose];
      const Eigen::Matrix3d rotation = pose.rotation->toRotationMatrix();
      const Eigen::Vector3d rotated = rotation * *problem.points[obs.point].xyz;
      const Rigid3d* sensor = obs.sensor >= 0 ? &problem.sensors_from_rig[obs.sensor] : nullptr;
      const Eigen::Vector3d in_cam =
          sensor ? *sensor * (rotated + *pose.translation) : rotated + *pose.translation;
      Eigen::Vector2d projected;
      const bool ok = ProjectWithJacobians(
          camera.model_id, camera.params, camera.width, camera.height, in_cam, &projected,
          want_jacobians ? &d_cam_point : nullptr, want_jacobians ? &d_params : nullptr);
      // Through a rig, the point in the rig frame reaches the camera by the sensor's fixed
      // rotation: the chain rule multiplies every Jacobian below by it.
      if (sensor && want_jacobians && ok)
        d_cam_point = d_cam_point * sensor->rotation.toRotationMatrix();
      double squared_error = kUnimageableSquaredError;
      if (ok) squared_error = (projected - obs.xy).squaredNorm();
      const LossEvaluation loss =
          EvaluateLoss(options.loss_kernel, options.loss_threshold, squared_error);
      rho[o] = loss.rho;
      if (!want_jacobians) continue;
      Linearization& lin = (*linearizations)[o];
      lin.valid = ok;
      if (!ok) continue;
      lin.weight = loss.rho_prime;
      lin.residual = projected - obs.xy;
      // d(R X + t) / d(rotation step) = -[R X]x for R <- exp(step) R.
      Eigen::Matrix3d skew;
      skew << 0, -rotated.z(), rotated.y(), rotated.z(), 0, -rotated.x(), -rotated.y(), rotated.x(),
          0;
      lin.d_pose.leftCols<3>() = -d_cam_point * skew;
      lin.d_pose.rightCols<3>() = d_cam_point;
      lin.d_point = d_cam_point * rotation;
      lin.d_intrinsics = d_params;
    }
  });
  // Summed in observation order, as one thread would.
  double cost = 0;
  for (const double r : rho) cost += 0.5 * r;
  return cost;
}

// A pose prior's whitened residual and its Jacobian over the pose's (rotation step, translation).
struct PriorLinearization {
  Eigen::Matrix<double, 6, 1> residual;
  Eigen::Matrix<double, 6, 6> d_pose;
};

Eigen::Matrix3d Skew(const Eigen::Vector3d& v) {
  Eigen::Matrix3d m;
  m << 0, -v.z(), v.y(), v.z(), 0, -v.x(), -v.y(), v.x(), 0;
  return m;
}

// 0.5 |L r|^2 over the pose priors (no robust loss, as COLMAP's default), with their
// linearizations when asked. For R <- exp(step) R: e moves by -R^T step (to first order), and
// c = -R^T t by -R^T [t]x step - R^T dt.
double EvaluatePriorCost(const BundleAdjustmentProblem& problem,
                         std::vector<PriorLinearization>* linearizations) {
  double cost = 0;
  for (size_t k = 0; k < problem.pose_priors.size(); ++k) {
    const auto& prior = problem.pose_priors[k];
    const Eigen::Matrix<double, 6, 1> r = PosePriorResidual(problem, prior);
    cost += 0.5 * r.squaredNorm();
    if (linearizations == nullptr) continue;
    const auto& pose = problem.poses[prior.pose];
    const Eigen::Matrix3d rt = pose.rotation->toRotationMatrix().transpose();
    Eigen::Matrix<double, 6, 6> d_pose = Eigen::Matrix<double, 6, 6>::Zero();
    d_pose.topLeftCorner<3, 3>() = -rt;
    d_pose.bottomLeftCorner<3, 3>() = -rt * Skew(*pose.translation);
    d_pose.bottomRightCorner<3, 3>() = -rt;
    (*linearizations)[k] = {r, prior.sqrt_information * d_pose};
  }
  return cost;
}

JacobianRow2 SelectColumns(const JacobianRow2& full, const std::vector<int>& cols) {
  JacobianRow2 out(2, cols.size());
  for (size_t i = 0; i < cols.size(); ++i) out.col(i) = full.col(cols[i]);
  return out;
}

// Normal equations after linearisation, before damping and elimination.
struct NormalEquations {
  ReducedCameraSystem camera_hessian;  // U: camera-camera blocks
  Eigen::VectorXd camera_gradient;     // -J^T W r over the camera unknowns
  struct PointTerm {
    Eigen::Matrix3d hessian = Eigen::Matrix3d::Zero();  // V
    Eigen::Vector3d gradient = Eigen::Vector3d::Zero();
    std::vector<int> blocks;              // camera blocks seeing the point
    std::vector<CouplingBlock> coupling;  // W: dim(block) x 3 per block
    // Reduced-system slot of each block pair (i <= j, row-major), for `slot_blocks`.
    std::vector<int> slot_blocks;
    std::vector<int> pair_slots;
  };
  std::vector<PointTerm> points;
};

// Slots of each observation's (camera, camera), (camera, pose), (pose, pose) blocks.
using ObservationSlots = std::array<int, 3>;

// Every block of U, segment of the gradient and point term is written by the one loop that owns
// it, adding its observations in their order: the sums one thread makes. Poses own their
// (pose, pose) and (camera, pose) blocks, cameras their (camera, camera) block.
void BuildNormalEquations(const BundleAdjustmentProblem& problem, const Layout& layout,
                          const std::vector<Linearization>& lins,
                          const std::vector<ObservationSlots>& obs_slots, NormalEquations* eq) {
  eq->camera_hessian.SetZero();
  eq->camera_gradient.setZero(eq->camera_hessian.dim());
  const auto contributes = [&](int o) { return lins[o].valid && lins[o].weight != 0; };
  ParallelFor(problem.poses.size(), kBlockChunk, [&](int, size_t begin, size_t end) {
    for (size_t p = begin; p < end; ++p) {
      const auto& vars = layout.pose_vars[p];
      if (vars.empty()) continue;
      const int offset = eq->camera_hessian.block_offset(layout.PoseBlock(static_cast<int>(p)));
      for (const int o : layout.pose_observations[p]) {
        if (!contributes(o)) continue;
        const Linearization& lin = lins[o];
        const double w = lin.weight;
        const JacobianRow2 pose = SelectColumns(lin.d_pose, vars);
        const JacobianRow2 camera =
            SelectColumns(lin.d_intrinsics, layout.camera_vars[problem.observations[o].camera]);
        if (camera.cols() > 0)
          AddJacobianProduct(w, camera, pose, &eq->camera_hessian.SlotBlock(obs_slots[o][1]));
        eq->camera_gradient.segment(offset, pose.cols()) -= w * pose.transpose() * lin.residual;
        AddJacobianProduct(w, pose, pose, &eq->camera_hessian.SlotBlock(obs_slots[o][2]));
      }
    }
  });
  ParallelFor(problem.cameras.size(), 1, [&](int, size_t c, size_t) {
    const auto& vars = layout.camera_vars[c];
    if (vars.empty()) return;
    const int offset = eq->camera_hessian.block_offset(layout.CameraBlock(static_cast<int>(c)));
    for (const int o : layout.camera_observations[c]) {
      if (!contributes(o)) continue;
      const Linearization& lin = lins[o];
      const double w = lin.weight;
      const JacobianRow2 camera = SelectColumns(lin.d_intrinsics, vars);
      eq->camera_gradient.segment(offset, camera.cols()) -= w * camera.transpose() * lin.residual;
      AddJacobianProduct(w, camera, camera, &eq->camera_hessian.SlotBlock(obs_slots[o][0]));
    }
  });
  ParallelFor(problem.points.size(), kPointChunk, [&](int, size_t begin, size_t end) {
    for (size_t p = begin; p < end; ++p) {
      NormalEquations::PointTerm& term = eq->points[p];
      term.hessian.setZero();
      term.gradient.setZero();
      term.blocks.clear();
      term.coupling.clear();
      if (layout.point_variable[p]) {
        for (const int o : layout.point_observations[p]) {
          if (!contributes(o)) continue;
          const Linearization& lin = lins[o];
          const auto& obs = problem.observations[o];
          const double w = lin.weight;
          const int blocks[2] = {layout.CameraBlock(obs.camera), layout.PoseBlock(obs.pose)};
          const JacobianRow2 jacobians[2] = {
              SelectColumns(lin.d_intrinsics, layout.camera_vars[obs.camera]),
              SelectColumns(lin.d_pose, layout.pose_vars[obs.pose])};
          term.hessian += w * lin.d_point.transpose() * lin.d_point;
          term.gradient -= w * lin.d_point.transpose() * lin.residual;
          for (int i = 0; i < 2; ++i) {
            if (jacobians[i].cols() == 0) continue;
            const CouplingBlock coupling = JacobianCoupling(w, jacobians[i], lin.d_point);
            const auto it = std::find(term.blocks.begin(), term.blocks.end(), blocks[i]);
            if (it == term.blocks.end()) {
              term.blocks.push_back(blocks[i]);
              term.coupling.push_back(coupling);
            } else {
              term.coupling[it - term.blocks.begin()] += coupling;
            }
          }
        }
      }
      // The blocks seeing a point change only when an observation drops out (behind a camera).
      if (term.blocks == term.slot_blocks) continue;
      term.slot_blocks = term.blocks;
      term.pair_slots.clear();
      for (size_t i = 0; i < term.blocks.size(); ++i) {
        for (size_t j = i; j < term.blocks.size(); ++j)
          term.pair_slots.push_back(eq->camera_hessian.Slot(term.blocks[i], term.blocks[j]));
      }
    }
  });
}

// The pose priors' terms of the normal equations: each prior touches its pose's block alone.
void AddPriorTerms(const BundleAdjustmentProblem& problem, const Layout& layout,
                   const std::vector<PriorLinearization>& lins, const std::vector<int>& prior_slots,
                   NormalEquations* eq) {
  for (size_t k = 0; k < problem.pose_priors.size(); ++k) {
    if (prior_slots[k] < 0) continue;
    const auto& vars = layout.pose_vars[problem.pose_priors[k].pose];
    Eigen::MatrixXd j(6, vars.size());
    for (size_t i = 0; i < vars.size(); ++i) j.col(i) = lins[k].d_pose.col(vars[i]);
    const int offset =
        eq->camera_hessian.block_offset(layout.PoseBlock(problem.pose_priors[k].pose));
    eq->camera_gradient.segment(offset, vars.size()) -= j.transpose() * lins[k].residual;
    eq->camera_hessian.SlotBlock(prior_slots[k]).noalias() += j.transpose() * j;
  }
}

// The focal priors' free focal length entries: (prior, position in the camera's block, entry).
struct FocalPriorTerm {
  int prior;
  int var;
  int param;
};

std::vector<FocalPriorTerm> FocalPriorTerms(const BundleAdjustmentProblem& problem,
                                            const Layout& layout) {
  std::vector<FocalPriorTerm> terms;
  for (size_t k = 0; k < problem.focal_priors.size(); ++k) {
    const int camera = problem.focal_priors[k].camera;
    const auto& vars = layout.camera_vars[camera];
    for (const int i : CameraModelFocalLengthIdxs(problem.cameras[camera].model_id)) {
      const auto it = std::find(vars.begin(), vars.end(), i);
      if (it != vars.end())
        terms.push_back({static_cast<int>(k), static_cast<int>(it - vars.begin()), i});
    }
  }
  return terms;
}

// Each focal prior's log target now: its log_focal, or its group's median (see FocalPrior).
std::vector<double> FocalPriorTargets(const BundleAdjustmentProblem& problem) {
  std::vector<std::vector<double>> log_ratios(problem.focal_groups.size());
  for (size_t g = 0; g < problem.focal_groups.size(); ++g)
    log_ratios[g] = problem.focal_groups[g].fixed_log_ratios;
  for (const auto& prior : problem.focal_priors) {
    const auto& camera = problem.cameras[prior.camera];
    const std::vector<int> idxs = CameraModelFocalLengthIdxs(camera.model_id);
    double f = 0;
    for (const int i : idxs) f += camera.params[i] / idxs.size();
    if (prior.group >= 0 && f > 0) log_ratios[prior.group].push_back(std::log(f) - prior.log_scale);
  }
  std::vector<double> medians(log_ratios.size(), 0);
  for (size_t g = 0; g < log_ratios.size(); ++g) {
    auto& values = log_ratios[g];
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    medians[g] = 0.5 * (values[(values.size() - 1) / 2] + values[values.size() / 2]);
  }
  std::vector<double> targets;
  for (const auto& prior : problem.focal_priors)
    targets.push_back(prior.group >= 0 ? prior.log_scale + medians[prior.group] : prior.log_focal);
  return targets;
}

// The prior's loss at r: quadratic, or Cauchy at its loss_scale.
LossEvaluation FocalPriorLoss(const BundleAdjustmentProblem::FocalPrior& prior, double r) {
  return prior.loss_scale > 0 ? EvaluateLoss(LossKernel::kCauchy, prior.loss_scale, r * r)
                              : LossEvaluation{r * r, 1.0, 0.0};
}

// 0.5 rho(r^2) with r = (log f - target) / sigma over the free focal lengths under a prior.
double EvaluateFocalPriorCost(const BundleAdjustmentProblem& problem,
                              const std::vector<FocalPriorTerm>& terms) {
  if (terms.empty()) return 0;
  const std::vector<double> targets = FocalPriorTargets(problem);
  double cost = 0;
  for (const FocalPriorTerm& t : terms) {
    const auto& prior = problem.focal_priors[t.prior];
    const double f = problem.cameras[prior.camera].params[t.param];
    // A focal length at or below zero cannot be imaged through: charged like an unimageable point.
    if (!(f > 0)) {
      cost += 0.5 * kUnimageableSquaredError;
      continue;
    }
    cost += 0.5 * FocalPriorLoss(prior, (std::log(f) - targets[t.prior]) / prior.sigma).rho;
  }
  return cost;
}

// dr/df = 1 / (sigma f), on the diagonal of the camera's block.
void AddFocalPriorTerms(const BundleAdjustmentProblem& problem, const Layout& layout,
                        const std::vector<FocalPriorTerm>& terms, NormalEquations* eq) {
  if (terms.empty()) return;
  const std::vector<double> targets = FocalPriorTargets(problem);
  for (const FocalPriorTerm& t : terms) {
    const auto& prior = problem.focal_priors[t.prior];
    const double f = problem.cameras[prior.camera].params[t.param];
    if (!(f > 0)) continue;
    const double r = (std::log(f) - targets[t.prior]) / prior.sigma;
    const double j = 1 / (prior.sigma * f);
    // Iteratively reweighted, as the observations' robust losses.
    const double w = FocalPriorLoss(prior, r).rho_prime;
    const int block = layout.CameraBlock(prior.camera);
    eq->camera_gradient[eq->camera_hessian.block_offset(block) + t.var] -= w * j * r;
    eq->camera_hessian.SlotBlock(eq->camera_hessian.Slot(block, block))(t.var, t.var) += w * j * j;
  }
}

Eigen::VectorXd ClampedDiagonal(const Eigen::VectorXd& d) {
  return d.cwiseMax(kMinDiagonal).cwiseMin(kMaxDiagonal);
}

// Saved values of every free parameter, to undo a rejected step.
struct ParameterState {
  std::vector<std::vector<double>> intrinsics;
  std::vector<Eigen::Quaterniond> rotations;
  std::vector<Eigen::Vector3d> translations;
  std::vector<Eigen::Vector3d> points;
};

ParameterState SaveState(const BundleAdjustmentProblem& problem) {
  ParameterState s;
  for (const auto& c : problem.cameras) {
    s.intrinsics.emplace_back(c.params, c.params + std::max(0, CameraModelNumParams(c.model_id)));
  }
  for (const auto& p : problem.poses) {
    s.rotations.push_back(*p.rotation);
    s.translations.push_back(*p.translation);
  }
  for (const auto& p : problem.points) s.points.push_back(*p.xyz);
  return s;
}

void RestoreState(const ParameterState& s, BundleAdjustmentProblem* problem) {
  for (size_t c = 0; c < problem->cameras.size(); ++c) {
    std::copy(s.intrinsics[c].begin(), s.intrinsics[c].end(), problem->cameras[c].params);
  }
  for (size_t p = 0; p < problem->poses.size(); ++p) {
    *problem->poses[p].rotation = s.rotations[p];
    *problem->poses[p].translation = s.translations[p];
  }
  for (size_t p = 0; p < problem->points.size(); ++p) *problem->points[p].xyz = s.points[p];
}

double ParameterNorm(const BundleAdjustmentProblem& problem, const Layout& layout) {
  double sq = 0;
  for (size_t c = 0; c < problem.cameras.size(); ++c) {
    for (int i : layout.camera_vars[c])
      sq += problem.cameras[c].params[i] * problem.cameras[c].params[i];
  }
  for (size_t p = 0; p < problem.poses.size(); ++p) {
    if (!layout.pose_vars[p].empty()) sq += 1.0 + problem.poses[p].translation->squaredNorm();
  }
  for (size_t p = 0; p < problem.points.size(); ++p) {
    if (layout.point_variable[p]) sq += problem.points[p].xyz->squaredNorm();
  }
  return std::sqrt(sq);
}

// The points' share of the damped reduced camera system: S -= sum W V^-1 W^T and
// rhs -= sum W V^-1 g over the points, with V^-1 kept per point for the back-substitution.
class PointElimination {
 public:
  PointElimination(const ReducedCameraSystem& pattern, size_t num_points)
      : num_points_(num_points) {
    const size_t copy_bytes = (pattern.num_values() + pattern.dim()) * sizeof(double);
    const size_t max_chunks = std::clamp<size_t>(
        1 + kSchurPartialBudgetBytes / std::max<size_t>(copy_bytes, 1), 1, kMaxSchurChunks);
    chunk_points_ = std::max(kMinSchurChunkPoints, (num_points + max_chunks - 1) / max_chunks);
    const int num_chunks = NumChunks(num_points, chunk_points_);
    partials_.assign(std::max(0, num_chunks - 1), pattern);
    partial_rhs_.assign(partials_.size(), Eigen::VectorXd::Zero(pattern.dim()));
  }

  void Eliminate(const Layout& layout, const NormalEquations& eq, double lambda,
                 const std::vector<Eigen::Vector3d>& point_diagonals,
                 std::vector<Eigen::Matrix3d>* point_inverses, ReducedCameraSystem* schur,
                 Eigen::VectorXd* rhs) {
    ParallelFor(num_points_, chunk_points_, [&](int chunk, size_t begin, size_t end) {
      ReducedCameraSystem& s = chunk == 0 ? *schur : partials_[chunk - 1];
      Eigen::VectorXd& r = chunk == 0 ? *rhs : partial_rhs_[chunk - 1];
      if (chunk > 0) {
        s.SetZero();
        r.setZero();
      }
      for (size_t p = begin; p < end; ++p) {
        if (!layout.point_variable[p]) continue;
        const auto& term = eq.points[p];
        Eigen::Matrix3d damped = term.hessian;
        damped.diagonal() += lambda * point_diagonals[p];
        (*point_inverses)[p] = damped.inverse();
        const int* slot = term.pair_slots.data();
        for (size_t i = 0; i < term.blocks.size(); ++i) {
          const CouplingBlock wv = CouplingTimes(term.coupling[i], (*point_inverses)[p]);
          r.segment(s.block_offset(term.blocks[i]), s.block_dim(term.blocks[i])) -=
              wv * term.gradient;
          for (size_t j = i; j < term.blocks.size(); ++j, ++slot) {
            if (term.blocks[i] <= term.blocks[j]) {
              SubtractCouplingProduct(wv, term.coupling[j], &s.SlotBlock(*slot));
            } else {
              SubtractCouplingProduct(term.coupling[j], wv, &s.SlotBlock(*slot));
            }
          }
        }
      }
    });
    if (partials_.empty()) return;
    ParallelFor(schur->num_slots(), kSlotChunk, [&](int, size_t begin, size_t end) {
      for (const ReducedCameraSystem& partial : partials_)
        schur->AddValuesFrom(partial, begin, end);
    });
    for (const Eigen::VectorXd& r : partial_rhs_) *rhs += r;
  }

 private:
  size_t num_points_;
  size_t chunk_points_;
  std::vector<ReducedCameraSystem> partials_;
  std::vector<Eigen::VectorXd> partial_rhs_;
};

void ApplyStep(const Layout& layout, const ReducedCameraSystem& system,
               const Eigen::VectorXd& camera_step, const std::vector<Eigen::Vector3d>& point_steps,
               BundleAdjustmentProblem* problem) {
  for (size_t c = 0; c < problem->cameras.size(); ++c) {
    const int offset = system.block_offset(layout.CameraBlock(static_cast<int>(c)));
    const auto& vars = layout.camera_vars[c];
    for (size_t i = 0; i < vars.size(); ++i)
      problem->cameras[c].params[vars[i]] += camera_step[offset + i];
  }
  for (size_t p = 0; p < problem->poses.size(); ++p) {
    const auto& vars = layout.pose_vars[p];
    if (vars.empty()) continue;
    const int offset = system.block_offset(layout.PoseBlock(static_cast<int>(p)));
    Eigen::Matrix<double, 6, 1> step = Eigen::Matrix<double, 6, 1>::Zero();
    for (size_t i = 0; i < vars.size(); ++i) step[vars[i]] = camera_step[offset + i];
    const Eigen::Vector3d rotation_step = step.head<3>();
    const double angle = rotation_step.norm();
    if (angle > 0) {
      auto& rotation = *problem->poses[p].rotation;
      rotation = (Eigen::Quaterniond(Eigen::AngleAxisd(angle, rotation_step / angle)) * rotation)
                     .normalized();
    }
    *problem->poses[p].translation += step.tail<3>();
  }
  ParallelFor(problem->points.size(), kPointChunk, [&](int, size_t begin, size_t end) {
    for (size_t p = begin; p < end; ++p) {
      if (layout.point_variable[p]) *problem->points[p].xyz += point_steps[p];
    }
  });
}

}  // namespace

BundleAdjustmentSummary SolveBundleAdjustment(const BundleAdjustmentOptions& options,
                                              BundleAdjustmentProblem* problem) {
  BundleAdjustmentSummary summary;
  summary.num_observations = static_cast<int>(problem->observations.size());
  const Layout layout = BuildLayout(options, *problem);

  ReducedCameraSolverOptions solver;
  solver.max_dense_dim = options.max_dense_dim;
  solver.max_direct_dim = options.max_direct_dim;
  ReducedCameraSystem pattern(layout.block_dims, solver);
  for (const auto& obs : problem->observations) {
    pattern.AddCoupling(layout.CameraBlock(obs.camera), layout.PoseBlock(obs.pose));
  }
  for (size_t p = 0; p < problem->points.size(); ++p) {
    if (!layout.point_variable[p]) continue;
    std::vector<int> blocks;
    for (int o : layout.point_observations[p]) {
      blocks.push_back(layout.CameraBlock(problem->observations[o].camera));
      blocks.push_back(layout.PoseBlock(problem->observations[o].pose));
    }
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    for (size_t i = 0; i < blocks.size(); ++i) {
      for (size_t j = i; j < blocks.size(); ++j) pattern.AddCoupling(blocks[i], blocks[j]);
    }
  }
  pattern.Finalize();
  std::vector<ObservationSlots> obs_slots(problem->observations.size());
  for (size_t o = 0; o < problem->observations.size(); ++o) {
    const int camera = layout.CameraBlock(problem->observations[o].camera);
    const int pose = layout.PoseBlock(problem->observations[o].pose);
    // Blocks without unknowns have no slot (and are skipped when the equations are built).
    const auto slot = [&](int a, int b) {
      return pattern.block_dim(a) && pattern.block_dim(b) ? pattern.Slot(a, b) : -1;
    };
    obs_slots[o] = {slot(camera, camera), slot(camera, pose), slot(pose, pose)};
  }
  std::vector<int> prior_slots(problem->pose_priors.size(), -1);
  for (size_t k = 0; k < problem->pose_priors.size(); ++k) {
    const int block = layout.PoseBlock(problem->pose_priors[k].pose);
    if (pattern.block_dim(block)) prior_slots[k] = pattern.Slot(block, block);
  }
  summary.num_variables = pattern.dim();
  for (size_t p = 0; p < problem->points.size(); ++p)
    summary.num_variables += layout.point_variable[p] ? 3 : 0;

  NormalEquations eq{pattern, Eigen::VectorXd(), {}};
  eq.points.resize(problem->points.size());
  std::vector<Linearization> lins(problem->observations.size());
  // A step is evaluated with its linearization: most steps are accepted, and an accepted
  // step's linearization is the next iteration's.
  std::vector<Linearization> trial_lins(problem->observations.size());
  std::vector<PriorLinearization> prior_lins(problem->pose_priors.size());
  std::vector<PriorLinearization> trial_prior_lins(problem->pose_priors.size());
  const std::vector<FocalPriorTerm> focal_terms = FocalPriorTerms(*problem, layout);
  double cost = EvaluateCost(options, *problem, &lins) + EvaluatePriorCost(*problem, &prior_lins) +
                EvaluateFocalPriorCost(*problem, focal_terms);
  summary.initial_cost = summary.final_cost = cost;
  if (summary.num_variables == 0) {
    summary.converged = true;
    summary.termination = "no variables";
    return summary;
  }

  double lambda = kInitialLambda;
  double lambda_growth = 2;
  bool relinearize = true;
  std::vector<Eigen::Matrix3d> point_inverses(problem->points.size());
  std::vector<Eigen::Vector3d> point_steps(problem->points.size(), Eigen::Vector3d::Zero());
  std::vector<Eigen::Vector3d> point_diagonals(problem->points.size());
  // Each point's share of the predicted decrease and of the step's squared norm, summed in
  // point order after the parallel back-substitution.
  std::vector<double> point_predicted(problem->points.size(), 0);
  std::vector<double> point_step_sq(problem->points.size(), 0);
  Eigen::VectorXd camera_diagonal;
  ReducedCameraSystem schur = eq.camera_hessian;
  PointElimination elimination(schur, problem->points.size());
  summary.termination = "max_num_iterations";
  for (int iteration = 0; iteration < options.max_num_iterations; ++iteration) {
    summary.num_iterations = iteration + 1;
    if (relinearize) {
      BuildNormalEquations(*problem, layout, lins, obs_slots, &eq);
      AddPriorTerms(*problem, layout, prior_lins, prior_slots, &eq);
      AddFocalPriorTerms(*problem, layout, focal_terms, &eq);
      double max_gradient =
          eq.camera_gradient.size() ? eq.camera_gradient.cwiseAbs().maxCoeff() : 0;
      for (size_t p = 0; p < eq.points.size(); ++p) {
        if (!layout.point_variable[p]) continue;
        max_gradient = std::max(max_gradient, eq.points[p].gradient.cwiseAbs().maxCoeff());
        point_diagonals[p] = ClampedDiagonal(eq.points[p].hessian.diagonal());
      }
      camera_diagonal = ClampedDiagonal(eq.camera_hessian.Diagonal());
      if (max_gradient < options.gradient_tolerance) {
        summary.converged = true;
        summary.termination = "gradient_tolerance";
        break;
      }
      relinearize = false;
    }

    // Damped reduced camera system S = U + lambda D - sum W V^-1 W^T.
    schur.CopyValuesFrom(eq.camera_hessian);
    schur.AddToDiagonal(lambda * camera_diagonal);
    Eigen::VectorXd rhs = eq.camera_gradient;
    elimination.Eliminate(layout, eq, lambda, point_diagonals, &point_inverses, &schur, &rhs);
    Eigen::VectorXd camera_step;
    if (!schur.Solve(rhs, &camera_step)) {
      lambda *= lambda_growth;
      lambda_growth *= 2;
      if (lambda > kMaxLambda) {
        summary.termination = "linear solver failure";
        break;
      }
      continue;
    }
    // Back-substitution of the points, and the decrease the linear model predicts:
    // 0.5 * step . (gradient + lambda D step).
    double predicted = 0.5 * camera_step.dot(eq.camera_gradient +
                                             lambda * camera_diagonal.cwiseProduct(camera_step));
    double step_sq = camera_step.squaredNorm();
    ParallelFor(eq.points.size(), kPointChunk, [&](int, size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        if (!layout.point_variable[p]) continue;
        const auto& term = eq.points[p];
        Eigen::Vector3d reduced = term.gradient;
        for (size_t i = 0; i < term.blocks.size(); ++i) {
          reduced -=
              term.coupling[i].transpose() * camera_step.segment(schur.block_offset(term.blocks[i]),
                                                                 schur.block_dim(term.blocks[i]));
        }
        point_steps[p] = point_inverses[p] * reduced;
        point_predicted[p] =
            0.5 * point_steps[p].dot(term.gradient +
                                     lambda * point_diagonals[p].cwiseProduct(point_steps[p]));
        point_step_sq[p] = point_steps[p].squaredNorm();
      }
    });
    for (size_t p = 0; p < eq.points.size(); ++p) {
      if (!layout.point_variable[p]) continue;
      predicted += point_predicted[p];
      step_sq += point_step_sq[p];
    }
    const double parameter_norm = ParameterNorm(*problem, layout);
    if (std::sqrt(step_sq) <=
        options.parameter_tolerance * (parameter_norm + options.parameter_tolerance)) {
      summary.converged = true;
      summary.termination = "parameter_tolerance";
      break;
    }
    const ParameterState saved = SaveState(*problem);
    ApplyStep(layout, schur, camera_step, point_steps, problem);
    const double new_cost = EvaluateCost(options, *problem, &trial_lins) +
                            EvaluatePriorCost(*problem, &trial_prior_lins) +
                            EvaluateFocalPriorCost(*problem, focal_terms);
    const double gain = (cost - new_cost) / std::max(predicted, std::numeric_limits<double>::min());
    if (std::isfinite(new_cost) && new_cost < cost && gain > 0) {
      // Nielsen's update of the damping.
      lambda *= std::max(1.0 / 3.0, 1.0 - std::pow(2.0 * gain - 1.0, 3));
      lambda_growth = 2;
      const double decrease = cost - new_cost;
      cost = new_cost;
      lins.swap(trial_lins);
      prior_lins.swap(trial_prior_lins);
      relinearize = true;
      if (decrease <= options.function_tolerance * (cost + decrease)) {
        summary.converged = true;
        summary.termination = "function_tolerance";
        summary.num_iterations = iteration + 1;
        break;
      }
    } else {
      RestoreState(saved, problem);
      lambda *= lambda_growth;
      lambda_growth *= 2;
      if (lambda > kMaxLambda) {
        summary.converged = true;
        summary.termination = "no further decrease";
        break;
      }
    }
  }
  summary.final_cost = cost;
  return summary;
}

Eigen::Matrix<double, 6, 6> PoseSqrtInformation(const Eigen::Matrix<double, 6, 6>& covariance,
                                                double min_variance) {
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 6, 6>> eigen(
      0.5 * (covariance + covariance.transpose()));
  const Eigen::Matrix<double, 6, 1> variances = eigen.eigenvalues().cwiseMax(min_variance);
  return variances.cwiseSqrt().cwiseInverse().asDiagonal() * eigen.eigenvectors().transpose();
}

Eigen::Matrix<double, 6, 1> PosePriorResidual(const BundleAdjustmentProblem& problem,
                                              const BundleAdjustmentProblem::PosePrior& prior) {
  const auto& pose = problem.poses[prior.pose];
  const Eigen::AngleAxisd error(pose.rotation->inverse() * prior.rotation);
  Eigen::Matrix<double, 6, 1> r;
  r.head<3>() = error.angle() * error.axis();
  r.tail<3>() = -(pose.rotation->inverse() * *pose.translation) - prior.centre;
  return prior.sqrt_information * r;
}

int ScaleGaugeTranslationIndex(const Eigen::Quaterniond& rotation0,
                               const Eigen::Vector3d& translation0,
                               const Eigen::Quaterniond& rotation1,
                               const Eigen::Vector3d& translation1) {
  const Eigen::Vector3d center0 = -(rotation0.inverse() * translation0);
  const Eigen::Vector3d center1 = -(rotation1.inverse() * translation1);
  int index = 0;
  (rotation1 * (center1 - center0)).cwiseAbs().maxCoeff(&index);
  return index;
}

std::vector<double> ReprojectionErrors(const BundleAdjustmentProblem& problem) {
  std::vector<double> errors(problem.observations.size());
  for (size_t o = 0; o < problem.observations.size(); ++o) {
    const auto& obs = problem.observations[o];
    const auto& camera = problem.cameras[obs.camera];
    const auto& pose = problem.poses[obs.pose];
    Eigen::Vector3d in_cam = *pose.rotation * *problem.points[obs.point].xyz + *pose.translation;
    if (obs.sensor >= 0) in_cam = problem.sensors_from_rig[obs.sensor] * in_cam;
    Eigen::Vector2d xy;
    errors[o] = ProjectWithJacobians(camera.model_id, camera.params, camera.width, camera.height,
                                     in_cam, &xy, nullptr, nullptr)
                    ? (xy - obs.xy).norm()
                    : std::numeric_limits<double>::infinity();
  }
  return errors;
}

BundleAdjustmentSummary SolveTwoStageBundleAdjustment(const BundleAdjustmentOptions& options,
                                                      double max_reprojection_error,
                                                      BundleAdjustmentProblem* problem,
                                                      std::vector<bool>* inliers) {
  BundleAdjustmentOptions robust = options;
  if (robust.loss_kernel == LossKernel::kSquared) robust.loss_kernel = LossKernel::kCauchy;
  const BundleAdjustmentSummary first = SolveBundleAdjustment(robust, problem);
  const std::vector<double> errors = ReprojectionErrors(*problem);
  std::vector<BundleAdjustmentProblem::Observation> kept;
  if (inliers != nullptr) inliers->assign(errors.size(), false);
  for (size_t o = 0; o < errors.size(); ++o) {
    if (errors[o] <= max_reprojection_error) {
      kept.push_back(problem->observations[o]);
      if (inliers != nullptr) (*inliers)[o] = true;
    }
  }
  problem->observations = std::move(kept);
  BundleAdjustmentOptions final_pass = options;
  final_pass.loss_kernel = LossKernel::kSquared;
  BundleAdjustmentSummary second = SolveBundleAdjustment(final_pass, problem);
  second.num_iterations += first.num_iterations;
  second.initial_cost = first.initial_cost;
  return second;
}

}  // namespace edgesfm

// Robust loss kernels for least squares, in the convention of Ceres Solver and
// of Triggs et al., "Bundle Adjustment -- A Modern Synthesis" (2000), sec. 3.3:
// a kernel maps the squared residual norm s = |r|^2 to rho(s) and reports its
// first two derivatives. The solver uses rho'(s) as an iteratively reweighted
// least-squares weight, so every kernel behaves like `squared` near zero and
// caps the influence of residuals beyond `loss_threshold` (the scale a, in
// pixels for reprojection errors).
#pragma once

#include <string>

namespace edgesfm {

enum class LossKernel { kSquared, kHuber, kCauchy, kSoftL1, kTukey };

// rho(s) and its derivatives with respect to s.
struct LossEvaluation {
  double rho = 0.0;
  double rho_prime = 1.0;
  double rho_second = 0.0;
};

// Evaluates the kernel at the squared norm `squared_norm` with scale `threshold`.
LossEvaluation EvaluateLoss(LossKernel kernel, double threshold, double squared_norm);

// Spec 2.12 names (`squared`, `huber`, `cauchy`, `soft_l1`, `tukey`); false if unknown.
bool LossKernelFromName(const std::string& name, LossKernel* kernel);
const char* LossKernelName(LossKernel kernel);

}  // namespace edgesfm

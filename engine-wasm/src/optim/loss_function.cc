#include "optim/loss_function.h"

#include <cmath>

namespace edgesfm {

LossEvaluation EvaluateLoss(LossKernel kernel, double threshold, double s) {
  LossEvaluation e;
  const double a2 = threshold * threshold;
  switch (kernel) {
    case LossKernel::kSquared:
      e.rho = s;
      break;
    case LossKernel::kHuber:
      // Quadratic inside the threshold, linear in |r| outside.
      if (s > a2) {
        const double r = std::sqrt(s);
        e.rho = 2.0 * threshold * r - a2;
        e.rho_prime = threshold / r;
        e.rho_second = -e.rho_prime / (2.0 * s);
      } else {
        e.rho = s;
      }
      break;
    case LossKernel::kCauchy: {
      const double sum = 1.0 + s / a2;
      e.rho = a2 * std::log(sum);
      e.rho_prime = 1.0 / sum;
      e.rho_second = -(1.0 / a2) * e.rho_prime * e.rho_prime;
      break;
    }
    case LossKernel::kSoftL1: {
      const double sum = 1.0 + s / a2;
      const double root = std::sqrt(sum);
      e.rho = 2.0 * a2 * (root - 1.0);
      e.rho_prime = 1.0 / root;
      e.rho_second = -(e.rho_prime / a2) / (2.0 * sum);
      break;
    }
    case LossKernel::kTukey:
      // Redescending: residuals beyond the threshold get zero weight.
      if (s <= a2) {
        const double v = 1.0 - s / a2;
        e.rho = a2 / 3.0 * (1.0 - v * v * v);
        e.rho_prime = v * v;
        e.rho_second = -2.0 * v / a2;
      } else {
        e.rho = a2 / 3.0;
        e.rho_prime = 0.0;
        e.rho_second = 0.0;
      }
      break;
  }
  return e;
}

bool LossKernelFromName(const std::string& name, LossKernel* kernel) {
  if (name == "squared" || name == "trivial")
    *kernel = LossKernel::kSquared;
  else if (name == "huber")
    *kernel = LossKernel::kHuber;
  else if (name == "cauchy")
    *kernel = LossKernel::kCauchy;
  else if (name == "soft_l1")
    *kernel = LossKernel::kSoftL1;
  else if (name == "tukey")
    *kernel = LossKernel::kTukey;
  else
    return false;
  return true;
}

const char* LossKernelName(LossKernel kernel) {
  switch (kernel) {
    case LossKernel::kSquared:
      return "squared";
    case LossKernel::kHuber:
      return "huber";
    case LossKernel::kCauchy:
      return "cauchy";
    case LossKernel::kSoftL1:
      return "soft_l1";
    case LossKernel::kTukey:
      return "tukey";
  }
  return "squared";
}

}  // namespace edgesfm

#include "optim/loss_function.h"

#include <gtest/gtest.h>

#include <cmath>

namespace edgesfm {
namespace {

const LossKernel kAllKernels[] = {LossKernel::kSquared, LossKernel::kHuber, LossKernel::kCauchy,
                                  LossKernel::kSoftL1, LossKernel::kTukey};

TEST(LossFunction, EveryKernelIsQuadraticNearZero) {
  for (LossKernel k : kAllKernels) {
    const LossEvaluation e = EvaluateLoss(k, 2.0, 1e-8);
    EXPECT_NEAR(e.rho, 1e-8, 1e-12) << LossKernelName(k);
    EXPECT_NEAR(e.rho_prime, 1.0, 1e-6) << LossKernelName(k);
  }
}

TEST(LossFunction, DerivativesMatchFiniteDifferences) {
  for (LossKernel k : kAllKernels) {
    for (double s : {0.3, 1.7, 5.0, 30.0}) {
      const double h = 1e-6;
      const LossEvaluation e = EvaluateLoss(k, 1.5, s);
      const LossEvaluation ep = EvaluateLoss(k, 1.5, s + h);
      const LossEvaluation em = EvaluateLoss(k, 1.5, s - h);
      EXPECT_NEAR(e.rho_prime, (ep.rho - em.rho) / (2 * h), 1e-5)
          << LossKernelName(k) << " s=" << s;
      EXPECT_NEAR(e.rho_second, (ep.rho_prime - em.rho_prime) / (2 * h), 1e-5)
          << LossKernelName(k) << " s=" << s;
    }
  }
}

TEST(LossFunction, RobustKernelsDownweightOutliers) {
  const double s = 100.0;  // a 10 px residual with a 1 px threshold
  EXPECT_DOUBLE_EQ(EvaluateLoss(LossKernel::kSquared, 1.0, s).rho_prime, 1.0);
  EXPECT_NEAR(EvaluateLoss(LossKernel::kHuber, 1.0, s).rho_prime, 0.1, 1e-12);
  EXPECT_NEAR(EvaluateLoss(LossKernel::kCauchy, 1.0, s).rho_prime, 1.0 / 101.0, 1e-12);
  EXPECT_NEAR(EvaluateLoss(LossKernel::kSoftL1, 1.0, s).rho_prime, 1.0 / std::sqrt(101.0), 1e-12);
  EXPECT_EQ(EvaluateLoss(LossKernel::kTukey, 1.0, s).rho_prime, 0.0);
  EXPECT_NEAR(EvaluateLoss(LossKernel::kTukey, 1.0, s).rho, 1.0 / 3.0, 1e-12);
}

TEST(LossFunction, NamesRoundTrip) {
  for (LossKernel k : kAllKernels) {
    LossKernel parsed;
    ASSERT_TRUE(LossKernelFromName(LossKernelName(k), &parsed));
    EXPECT_EQ(parsed, k);
  }
  LossKernel unused;
  EXPECT_FALSE(LossKernelFromName("arctan", &unused));
}

}  // namespace
}  // namespace edgesfm

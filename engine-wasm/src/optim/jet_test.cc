#include "optim/jet.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(Jet, DerivativesOfCompositeExpressionMatchAnalytic) {
  // f(x, y) = sqrt(x * y + 1) / (x - y) + atan2(y, x)
  const double x0 = 1.3, y0 = 0.4;
  const Jet<2> x = Jet<2>::Variable(x0, 0);
  const Jet<2> y = Jet<2>::Variable(y0, 1);
  const Jet<2> f = sqrt(x * y + 1.0) / (x - y) + atan2(y, x);
  const double s = std::sqrt(x0 * y0 + 1);
  const double d = x0 - y0;
  const double n = x0 * x0 + y0 * y0;
  EXPECT_NEAR(f.a, s / d + std::atan2(y0, x0), 1e-15);
  EXPECT_NEAR(f.v[0], (y0 / (2 * s)) / d - s / (d * d) - y0 / n, 1e-12);
  EXPECT_NEAR(f.v[1], (x0 / (2 * s)) / d + s / (d * d) + x0 / n, 1e-12);
}

TEST(Jet, ScalarOperandsAndComparisons) {
  const Jet<1> x = Jet<1>::Variable(2.0, 0);
  const Jet<1> g = 3.0 / x - 1.0 * x + (x / 4.0) - (5.0 - x);
  EXPECT_NEAR(g.a, 1.5 - 2.0 + 0.5 - 3.0, 1e-15);
  EXPECT_NEAR(g.v[0], -3.0 / 4.0 - 1.0 + 0.25 + 1.0, 1e-15);
  EXPECT_TRUE(x > Jet<1>(1.0));
  EXPECT_FALSE(x < Jet<1>(1.0));
  Jet<1> acc(1.0);
  acc *= x;
  acc += x;
  acc /= x;
  EXPECT_NEAR(acc.a, 2.0, 1e-15);
  EXPECT_NEAR(acc.v[0], 0.0, 1e-15);
}

}  // namespace
}  // namespace edgesfm

#include "estimators/polynomial.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace edgesfm {
namespace {

TEST(Polynomial, CubicWithThreeRealRoots) {
  // (x - 1)(x + 2)(x - 3.5) = x^3 - 2.5 x^2 - 5.5 x + 7
  std::vector<double> roots = RealPolynomialRoots({1, -2.5, -5.5, 7});
  std::sort(roots.begin(), roots.end());
  ASSERT_EQ(roots.size(), 3u);
  EXPECT_NEAR(roots[0], -2, 1e-12);
  EXPECT_NEAR(roots[1], 1, 1e-12);
  EXPECT_NEAR(roots[2], 3.5, 1e-12);
}

TEST(Polynomial, ComplexRootsAreDropped) {
  // (x^2 + 1)(x - 2) = x^3 - 2x^2 + x - 2
  const std::vector<double> roots = RealPolynomialRoots({1, -2, 1, -2});
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_NEAR(roots[0], 2, 1e-12);
}

TEST(Polynomial, LeadingZerosLowerTheDegree) {
  const std::vector<double> roots = RealPolynomialRoots({0, 0, 2, -4});
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_NEAR(roots[0], 2, 1e-12);
  EXPECT_TRUE(RealPolynomialRoots({0, 0, 0, 5}).empty());
  EXPECT_DOUBLE_EQ(EvaluatePolynomial({1, -2, 1}, 3), 4);
}

}  // namespace
}  // namespace edgesfm

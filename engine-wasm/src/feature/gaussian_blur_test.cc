#include "feature/gaussian_blur.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace edgesfm {
namespace {

TEST(GaussianBlur, KernelIsNormalisedWithRadiusCeilFourSigma) {
  for (double sigma : {0.2, 1.249, 1.6, 3.09}) {
    const GaussianKernel k = MakeGaussianKernel(sigma);
    EXPECT_EQ(k.radius, std::max(1, static_cast<int>(std::ceil(4 * sigma))));
    double sum = k.taps[0];
    for (int r = 1; r <= k.radius; ++r) sum += 2 * k.taps[r];
    EXPECT_NEAR(sum, 1.0, 1e-6);
    for (int r = 1; r <= k.radius; ++r) EXPECT_LT(k.taps[r], k.taps[r - 1]);
  }
}

// Reference: the direct 2-D sum with clamped borders (y then x separable).
TEST(GaussianBlur, EqualsDirectSeparableConvolutionWithClampedBorders) {
  const int w = 23, h = 17;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> img(w * h);
  for (float& v : img) v = u(rng);
  const GaussianKernel k = MakeGaussianKernel(1.7);
  std::vector<float> out(w * h);
  GaussianBlurScratch scratch;
  GaussianBlur(img.data(), out.data(), w, h, k, &scratch);
  auto tap = [&](int r) { return k.taps[std::abs(r)]; };
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      double sum = 0;
      for (int dy = -k.radius; dy <= k.radius; ++dy) {
        for (int dx = -k.radius; dx <= k.radius; ++dx) {
          const int yy = std::clamp(y + dy, 0, h - 1);
          const int xx = std::clamp(x + dx, 0, w - 1);
          sum += tap(dy) * tap(dx) * img[yy * w + xx];
        }
      }
      EXPECT_NEAR(out[y * w + x], sum, 1e-5) << x << "," << y;
    }
  }
}

TEST(GaussianBlur, InPlaceGivesTheSameResultAndConstantsStayConstant) {
  const int w = 40, h = 9;
  std::vector<float> img(w * h, 0.25f);
  img[4 * w + 20] = 1.0f;
  std::vector<float> copy = img, out(w * h);
  const GaussianKernel k = MakeGaussianKernel(2.0);
  GaussianBlurScratch scratch;
  GaussianBlur(img.data(), out.data(), w, h, k, &scratch);
  GaussianBlur(copy.data(), copy.data(), w, h, k, &scratch);
  EXPECT_EQ(out, copy);
  std::vector<float> flat(w * h, 0.5f);
  GaussianBlur(flat.data(), flat.data(), w, h, k, &scratch);
  for (float v : flat) EXPECT_NEAR(v, 0.5f, 1e-6);
}

}  // namespace
}  // namespace edgesfm

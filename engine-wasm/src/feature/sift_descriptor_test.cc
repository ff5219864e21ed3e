#include "feature/sift_descriptor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "feature/sift_math.h"

namespace edgesfm {
namespace {

TEST(SiftMath, FastAtan2IsWithinAHundredthOfARadian) {
  for (double a = -3.1; a < 3.1; a += 0.01) {
    const float v =
        sift_math::FastAtan2(static_cast<float>(std::sin(a)), static_cast<float>(std::cos(a)));
    EXPECT_NEAR(v, a, 0.011);
  }
}

TEST(SiftMath, FastExpnMatchesExpOnItsRange) {
  for (double x = 0; x < 25; x += 0.37) EXPECT_NEAR(sift_math::Expn()(x), std::exp(-x), 2e-3);
  EXPECT_EQ(sift_math::Expn()(26.0), 0.0);
}

TEST(SiftDescriptor, OrientationOfARampIsItsGradientDirection) {
  const int w = 64, h = 64;
  for (double theta : {0.3, 2.0, 4.0}) {
    std::vector<float> img(w * h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        img[y * w + x] = static_cast<float>(0.01 * (std::cos(theta) * x + std::sin(theta) * y));
    std::vector<float> grad;
    ComputeGradients(img.data(), w, h, &grad);
    SiftDetection kp;
    kp.x = 31.3f;
    kp.y = 30.6f;
    kp.sigma = 3.0f;
    double angles[4];
    ASSERT_EQ(ComputeOrientations(grad.data(), w, h, kp, angles), 1);
    // Bilinear votes (VLFeat's) put the peak within about a degree; nearest-lower votes
    // were off by up to half a 10-degree bin.
    EXPECT_NEAR(angles[0], theta, 0.02);
  }
}

TEST(SiftDescriptor, RootSiftQuantisationHasNormAbout512AndUbcBinOrder) {
  float v[128] = {};
  v[0] = 0.6f;  // cell 0, VLFeat orientation bin 0 -> UBC bin 0
  v[1] = 0.8f;  // cell 0, VLFeat bin 1 -> UBC bin 7
  uint8_t out[128];
  QuantizeDescriptor(v, SiftNormalization::kL2, out);
  EXPECT_EQ(out[0], 255);  // min(255, round(512 * 0.6))
  EXPECT_EQ(out[7], 255);
  EXPECT_EQ(out[1], 0);
  QuantizeDescriptor(v, SiftNormalization::kL1Root, out);
  // sqrt(0.6 / 1.4) = 0.6547 -> 335 -> clamped at 255; sqrt(0.8 / 1.4) = 0.756 -> 255.
  EXPECT_EQ(out[0], 255);
  float w[128];
  for (int i = 0; i < 128; ++i) w[i] = 1.0f / std::sqrt(128.0f);
  QuantizeDescriptor(w, SiftNormalization::kL1Root, out);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(out[i], 45);  // round(512 / sqrt(128)) = 45
}

TEST(SiftDescriptor, IsUnitLengthClampedAndRotatesWithTheKeypoint) {
  const int w = 80, h = 80;
  std::vector<float> img(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      img[y * w + x] = static_cast<float>(0.5 + 0.3 * std::sin(0.4 * x) * std::cos(0.25 * y));
  std::vector<float> grad;
  ComputeGradients(img.data(), w, h, &grad);
  SiftDetection kp;
  kp.x = 40;
  kp.y = 40;
  kp.sigma = 2.5f;
  float d[128];
  ComputeDescriptor(grad.data(), w, h, kp, 0.7, d);
  double sq = 0;
  for (float e : d) {
    sq += e * e;
    EXPECT_LE(e, 0.2f / 0.5f);  // clamped before the second normalisation
  }
  EXPECT_NEAR(sq, 1.0, 1e-4);
  // Too close to the bottom border: no descriptor.
  kp.y = h - 1.2f;
  ComputeDescriptor(grad.data(), w, h, kp, 0.7, d);
  for (float e : d) EXPECT_EQ(e, 0.0f);
}

}  // namespace
}  // namespace edgesfm

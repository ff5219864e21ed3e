#include "feature/image_resample.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(ImageResample, Upsample2xInterpolatesMidpointsAndRepeatsTheLastSample) {
  const float src[6] = {0, 2, 4,  //
                        6, 8, 10};
  std::vector<float> dst(6 * 4), scratch;
  Upsample2x(src, 3, 2, dst.data(), &scratch);
  const float row0[6] = {0, 1, 2, 3, 4, 4};
  const float row1[6] = {3, 4, 5, 6, 7, 7};  // halfway between rows 0 and 1
  const float row2[6] = {6, 7, 8, 9, 10, 10};
  for (int x = 0; x < 6; ++x) {
    EXPECT_FLOAT_EQ(dst[0 * 6 + x], row0[x]);
    EXPECT_FLOAT_EQ(dst[1 * 6 + x], row1[x]);
    EXPECT_FLOAT_EQ(dst[2 * 6 + x], row2[x]);
    EXPECT_FLOAT_EQ(dst[3 * 6 + x], row2[x]);
  }
}

TEST(ImageResample, Subsample2xKeepsEvenSamplesAndTruncatesOddSizes) {
  std::vector<float> src(5 * 3);
  for (int i = 0; i < 15; ++i) src[i] = static_cast<float>(i);
  std::vector<float> dst(2 * 1);
  Subsample2x(src.data(), 5, 3, dst.data());
  EXPECT_FLOAT_EQ(dst[0], 0);
  EXPECT_FLOAT_EQ(dst[1], 2);
}

TEST(ImageResample, DownscaleTentPreservesConstantsAndRamps) {
  const int w = 100, h = 60, nw = 32, nh = 19;
  std::vector<float> flat(w * h, 0.3f), out(nw * nh);
  DownscaleTent(flat.data(), w, h, out.data(), nw, nh);
  for (float v : out) EXPECT_NEAR(v, 0.3f, 1e-5);
  // A linear ramp in x stays linear: sample centres map to (i + 0.5) w / nw - 0.5.
  std::vector<float> ramp(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) ramp[y * w + x] = static_cast<float>(x);
  DownscaleTent(ramp.data(), w, h, out.data(), nw, nh);
  for (int x = 2; x < nw - 2; ++x)
    EXPECT_NEAR(out[5 * nw + x], (x + 0.5) * w / nw - 0.5, 0.05);  // discrete taps
}

}  // namespace
}  // namespace edgesfm

#include "feature/sift.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace edgesfm {
namespace {

// A dark background with Gaussian blobs (std `radius`) at given centres.
std::vector<float> BlobImage(int w, int h, const std::vector<std::array<float, 3>>& blobs) {
  std::vector<float> img(w * h, 0.1f);
  for (const auto& b : blobs) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const float dx = x - b[0], dy = y - b[1];
        img[y * w + x] += 0.8f * std::exp(-(dx * dx + dy * dy) / (2 * b[2] * b[2]));
      }
    }
  }
  return img;
}

// Random-blob texture: many blobs of random size, position and sign.
std::vector<float> TextureImage(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ux(0, w), uy(0, h), ur(1.5f, 8.0f), ua(-0.4f, 0.4f);
  std::vector<float> img(w * h, 0.5f);
  for (int i = 0; i < w * h / 150; ++i) {
    const float cx = ux(rng), cy = uy(rng), r = ur(rng), a = ua(rng);
    const int x0 = std::max(0, static_cast<int>(cx - 3 * r)),
              x1 = std::min(w - 1, static_cast<int>(cx + 3 * r));
    const int y0 = std::max(0, static_cast<int>(cy - 3 * r)),
              y1 = std::min(h - 1, static_cast<int>(cy + 3 * r));
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) {
        const float dx = x - cx, dy = y - cy;
        img[y * w + x] += a * std::exp(-(dx * dx + dy * dy) / (2 * r * r));
      }
  }
  for (float& v : img) v = std::min(1.0f, std::max(0.0f, v));
  return img;
}

TEST(Sift, FindsAnIsolatedBlobAtItsCentreAndScaleInColmapCoordinates) {
  const float cx = 60.0f, cy = 70.0f, radius = 6.0f;
  const std::vector<float> img = BlobImage(128, 128, {{cx, cy, radius}});
  SiftExtractor extractor;
  SiftFeatures f;
  ASSERT_TRUE(extractor.Extract(img.data(), 128, 128, SiftExtractionOptions(), &f));
  ASSERT_FALSE(f.keypoints.empty());
  // The strongest response of a Gaussian blob of std r is at sigma = r.
  bool found = false;
  for (const SiftKeypoint& kp : f.keypoints) {
    if (std::hypot(kp.x - (cx + 0.5f), kp.y - (cy + 0.5f)) < 0.3f &&
        std::fabs(kp.scale / radius - 1) < 0.2f)
      found = true;
  }
  EXPECT_TRUE(found);
}

TEST(Sift, OutputIsDeterministicAndDescriptorsAreRootSiftUnitVectors) {
  const std::vector<float> img = TextureImage(160, 120, 3);
  SiftExtractor a, b;
  SiftFeatures fa, fb, fa2;
  ASSERT_TRUE(a.Extract(img.data(), 160, 120, SiftExtractionOptions(), &fa));
  ASSERT_TRUE(b.Extract(img.data(), 160, 120, SiftExtractionOptions(), &fb));
  ASSERT_TRUE(a.Extract(img.data(), 160, 120, SiftExtractionOptions(), &fa2));  // reused buffers
  ASSERT_GT(fa.keypoints.size(), 50u);
  EXPECT_EQ(fa.descriptors, fb.descriptors);
  EXPECT_EQ(fa.descriptors, fa2.descriptors);
  ASSERT_EQ(fa.descriptors.size(), 128 * fa.keypoints.size());
  for (size_t i = 0; i < fa.keypoints.size(); ++i) {
    EXPECT_EQ(fa.keypoints[i].x, fb.keypoints[i].x);
    double sq = 0;
    for (int k = 0; k < 128; ++k) sq += fa.descriptors[128 * i + k] * fa.descriptors[128 * i + k];
    if (sq == 0) continue;  // border keypoint without support
    EXPECT_NEAR(std::sqrt(sq), 512.0, 12.0);
  }
}

TEST(Sift, FeatureBudgetKeepsWholeCoarsestLevelsUntilTheCountFirstExceedsIt) {
  const std::vector<float> img = TextureImage(200, 160, 5);
  SiftExtractor extractor;
  SiftFeatures all, few;
  SiftExtractionOptions options;
  ASSERT_TRUE(extractor.Extract(img.data(), 200, 160, options, &all));
  options.max_num_features = 40;
  ASSERT_TRUE(extractor.Extract(img.data(), 200, 160, options, &few));
  ASSERT_GT(all.keypoints.size(), few.keypoints.size());
  // At least the budget (the last level is kept whole, orientations add more).
  EXPECT_GE(few.keypoints.size(), 40u);
  // The kept features are exactly the tail (the coarsest part) of the full list.
  const size_t offset = all.keypoints.size() - few.keypoints.size();
  for (size_t i = 0; i < few.keypoints.size(); ++i) {
    EXPECT_EQ(few.keypoints[i].x, all.keypoints[offset + i].x);
    EXPECT_EQ(few.keypoints[i].scale, all.keypoints[offset + i].scale);
  }
  float min_kept = 1e9f, max_dropped = 0;
  for (size_t i = 0; i < offset; ++i) max_dropped = std::max(max_dropped, all.keypoints[i].scale);
  for (const auto& kp : few.keypoints) min_kept = std::min(min_kept, kp.scale);
  EXPECT_GT(min_kept * 1.5f, max_dropped);  // levels overlap only by the sub-level offset
}

TEST(Sift, LargeImagesAreDownscaledAndKeypointsMappedBackToTheOriginalFrame) {
  const std::vector<float> small = BlobImage(100, 80, {{40.0f, 30.0f, 4.0f}});
  const std::vector<float> big = BlobImage(200, 160, {{80.5f, 60.5f, 8.0f}});  // same scene, 2x
  SiftExtractor extractor;
  SiftFeatures fs, fb;
  SiftExtractionOptions options;
  ASSERT_TRUE(extractor.Extract(small.data(), 100, 80, options, &fs));
  options.max_image_size = 100;
  ASSERT_TRUE(extractor.Extract(big.data(), 200, 160, options, &fb));
  ASSERT_FALSE(fs.keypoints.empty());
  ASSERT_FALSE(fb.keypoints.empty());
  // The blob's keypoint in the big image is at twice the small image's position.
  bool found = false;
  for (const auto& kp : fb.keypoints)
    if (std::hypot(kp.x - 81.0f, kp.y - 61.0f) < 1.0f && std::fabs(kp.scale / 8.0f - 1) < 0.25f)
      found = true;
  EXPECT_TRUE(found);
}

TEST(Sift, RejectsInvalidInput) {
  SiftExtractor extractor;
  SiftFeatures f;
  float px = 0;
  EXPECT_FALSE(extractor.Extract(&px, 0, 1, SiftExtractionOptions(), &f));
  SiftExtractionOptions bad;
  bad.octave_resolution = 0;
  EXPECT_FALSE(extractor.Extract(&px, 1, 1, bad, &f));
  EXPECT_TRUE(extractor.Extract(&px, 1, 1, SiftExtractionOptions(), &f));  // too small: no features
  EXPECT_TRUE(f.keypoints.empty());
}

}  // namespace
}  // namespace edgesfm

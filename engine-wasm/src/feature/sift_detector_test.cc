#include "feature/sift_detector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace edgesfm {
namespace {

// Three DoG levels sampled from a quadratic bump with its peak at (x0, y0, s0) relative to
// the centre level: the quadratic fit of section 3 recovers it exactly.
struct QuadraticDog {
  int w = 21, h = 17;
  std::vector<float> levels[3];
  QuadraticDog(double x0, double y0, double s0, double peak, double curvature_x,
               double curvature_y) {
    for (int s = 0; s < 3; ++s) {
      levels[s].resize(w * h);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const double dx = x - x0, dy = y - y0, ds = (s - 1) - s0;
          levels[s][y * w + x] = static_cast<float>(
              peak - 0.001 * (curvature_x * dx * dx + curvature_y * dy * dy + ds * ds));
        }
    }
  }
  DogLevels View() const {
    return DogLevels{levels[0].data(), levels[1].data(), levels[2].data(), w, h};
  }
};

TEST(SiftDetector, RefinesAnExtremumToSubPixelAndSubScalePrecision) {
  const QuadraticDog dog(10.3, 7.8, 0.2, 0.05, 1.0, 1.0);
  std::vector<SiftDetection> found;
  DetectDogExtrema(dog.View(), 1, SiftExtractionOptions(), &found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(found[0].x, 10.3, 1e-3);
  EXPECT_NEAR(found[0].y, 7.8, 1e-3);
  EXPECT_EQ(found[0].level, 1);
  const double sigma0 = 1.6 * std::pow(2.0, 1.0 / 3);
  EXPECT_NEAR(found[0].sigma, sigma0 * std::pow(2.0, (1 + 0.2) / 3), 1e-3);
}

TEST(SiftDetector, RecoversAPeakNearlyHalfwayBetweenTwoPixels) {
  // The sampled maximum is at x = 10; the fitted offset 0.45 stays below the 0.6 that would
  // move the sample point.
  const QuadraticDog dog(10.45, 8.0, 0.0, 0.05, 1.0, 1.0);
  std::vector<SiftDetection> found;
  DetectDogExtrema(dog.View(), 0, SiftExtractionOptions(), &found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(found[0].x, 10.45, 1e-3);
}

TEST(SiftDetector, RejectsLowContrastAndEdges) {
  SiftExtractionOptions options;
  const QuadraticDog faint(10.0, 8.0, 0.0, 0.5 * options.peak_threshold, 1.0, 1.0);
  std::vector<SiftDetection> found;
  DetectDogExtrema(faint.View(), 0, options, &found);
  EXPECT_TRUE(found.empty());
  // Curvature ratio 20 > edge_threshold 10: an edge-like ridge.
  const QuadraticDog ridge(10.0, 8.0, 0.0, 0.05, 20.0, 1.0);
  DetectDogExtrema(ridge.View(), 0, options, &found);
  EXPECT_TRUE(found.empty());
  // Ratio 5 passes.
  const QuadraticDog blob(10.0, 8.0, 0.0, 0.05, 5.0, 1.0);
  DetectDogExtrema(blob.View(), 0, options, &found);
  EXPECT_EQ(found.size(), 1u);
}

}  // namespace
}  // namespace edgesfm

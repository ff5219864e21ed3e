#include "feature/sift_matcher.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace edgesfm {
namespace {

// Random unit-like descriptors quantised as SIFT's: 512 * v, v of unit norm.
std::vector<uint8_t> RandomDescriptors(size_t n, std::mt19937* rng) {
  std::vector<uint8_t> d(n * 128);
  std::uniform_real_distribution<float> u(0, 1);
  for (size_t i = 0; i < n; ++i) {
    float v[128], norm = 0;
    for (float& e : v) {
      e = u(*rng) * u(*rng);
      norm += e * e;
    }
    for (int k = 0; k < 128; ++k)
      d[i * 128 + k] =
          static_cast<uint8_t>(std::min(255.0f, std::round(512 * v[k] / std::sqrt(norm))));
  }
  return d;
}

// COLMAP's rule written directly over the full dot-product matrix.
std::vector<DescriptorMatch> Reference(const std::vector<uint8_t>& a, size_t n1,
                                       const std::vector<uint8_t>& b, size_t n2,
                                       const SiftMatchingOptions& o) {
  auto dot = [&](size_t i, size_t j) {
    int s = 0;
    for (int k = 0; k < 128; ++k) s += a[i * 128 + k] * b[j * 128 + k];
    return s;
  };
  auto one_way = [&](size_t n, size_t m, bool transpose) {
    std::vector<int> best_of(n, -1);
    for (size_t i = 0; i < n; ++i) {
      int best = 0, second = 0, bi = -1;
      for (size_t j = 0; j < m; ++j) {
        const int d = transpose ? dot(j, i) : dot(i, j);
        if (d > best) {
          second = best;
          best = d;
          bi = static_cast<int>(j);
        } else if (d > second)
          second = d;
      }
      if (bi < 0) continue;
      const float k = 1.0f / (512.0f * 512.0f);
      const float d1 = std::acos(std::min(k * best, 1.0f)),
                  d2 = std::acos(std::min(k * second, 1.0f));
      if (d1 > o.max_distance || d1 >= static_cast<float>(o.max_ratio) * d2) continue;
      best_of[i] = bi;
    }
    return best_of;
  };
  const std::vector<int> m12 = one_way(n1, n2, false), m21 = one_way(n2, n1, true);
  std::vector<DescriptorMatch> out;
  for (size_t i = 0; i < n1; ++i) {
    if (m12[i] < 0) continue;
    if (o.cross_check && m21[m12[i]] != static_cast<int>(i)) continue;
    out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(m12[i])});
  }
  return out;
}

TEST(SiftMatcher, AgreesWithColmapsRuleOnNoisyCopies) {
  std::mt19937 rng(11);
  const size_t n1 = 203, n2 = 150;  // not multiples of the 4x4 tile
  std::vector<uint8_t> a = RandomDescriptors(n1, &rng);
  // b: noisy copies of a's first 120 rows, shuffled, plus 30 distractors.
  std::vector<uint8_t> b = RandomDescriptors(n2, &rng);
  std::normal_distribution<float> noise(0, 12);
  for (size_t j = 0; j < 120; ++j) {
    const size_t i = (j * 37) % n1;
    for (int k = 0; k < 128; ++k)
      b[j * 128 + k] = static_cast<uint8_t>(std::clamp(a[i * 128 + k] + noise(rng), 0.0f, 255.0f));
  }
  for (bool cross : {true, false}) {
    for (double ratio : {0.8, 0.95}) {
      SiftMatchingOptions o;
      o.cross_check = cross;
      o.max_ratio = ratio;
      const auto got = MatchSiftDescriptors(a.data(), n1, b.data(), n2, o);
      const auto want = Reference(a, n1, b, n2, o);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].index1, want[i].index1);
        EXPECT_EQ(got[i].index2, want[i].index2);
      }
      if (cross && ratio == 0.8) {
        EXPECT_GT(got.size(), 60u);
      }
    }
  }
}

TEST(SiftMatcher, RejectsAmbiguousDuplicatesAndEmptyInputs) {
  std::mt19937 rng(3);
  std::vector<uint8_t> a = RandomDescriptors(1, &rng);
  std::vector<uint8_t> b(a);
  b.insert(b.end(), a.begin(), a.end());  // two identical candidates: best == second
  EXPECT_TRUE(MatchSiftDescriptors(a.data(), 1, b.data(), 2, SiftMatchingOptions()).empty());
  EXPECT_EQ(MatchSiftDescriptors(a.data(), 1, b.data(), 1, SiftMatchingOptions()).size(), 1u);
  EXPECT_TRUE(MatchSiftDescriptors(a.data(), 0, b.data(), 2, SiftMatchingOptions()).empty());
  std::vector<uint8_t> zero(128, 0);
  EXPECT_TRUE(MatchSiftDescriptors(zero.data(), 1, b.data(), 1, SiftMatchingOptions()).empty());
}

}  // namespace
}  // namespace edgesfm

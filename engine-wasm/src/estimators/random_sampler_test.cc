#include "estimators/random_sampler.h"

#include <gtest/gtest.h>

#include <set>

namespace edgesfm {
namespace {

TEST(RandomSampler, DrawsDistinctIndicesInRange) {
  RandomSampler sampler(5, 42);
  sampler.Initialize(8);
  std::vector<size_t> sample;
  for (int trial = 0; trial < 100; ++trial) {
    sampler.Sample(&sample);
    ASSERT_EQ(sample.size(), 5u);
    const std::set<size_t> distinct(sample.begin(), sample.end());
    EXPECT_EQ(distinct.size(), 5u);
    EXPECT_LT(*distinct.rbegin(), 8u);
  }
}

TEST(RandomSampler, SameSeedSameSamples) {
  RandomSampler a(3, 7), b(3, 7), c(3, 8);
  a.Initialize(100);
  b.Initialize(100);
  c.Initialize(100);
  std::vector<size_t> sa, sb, sc;
  bool all_equal_c = true;
  for (int trial = 0; trial < 20; ++trial) {
    a.Sample(&sa);
    b.Sample(&sb);
    c.Sample(&sc);
    EXPECT_EQ(sa, sb);
    all_equal_c = all_equal_c && sa == sc;
  }
  EXPECT_FALSE(all_equal_c);
}

TEST(RandomSampler, IsRoughlyUniform) {
  RandomSampler sampler(1, 1);
  sampler.Initialize(4);
  std::vector<int> counts(4, 0);
  std::vector<size_t> sample;
  for (int trial = 0; trial < 4000; ++trial) {
    sampler.Sample(&sample);
    counts[sample[0]] += 1;
  }
  for (const int count : counts) EXPECT_NEAR(count, 1000, 150);
}

}  // namespace
}  // namespace edgesfm

#include "util/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace edgesfm {
namespace {

// Restores the default thread count when a test ends.
struct ThreadLimit {
  explicit ThreadLimit(int threads) { SetParallelThreadLimit(threads); }
  ~ThreadLimit() { SetParallelThreadLimit(0); }
};

TEST(ParallelFor, NativeBuildHasThreads) {
  // A gtest binary is native: threads wherever the machine has more than one core.
  EXPECT_GE(ParallelThreads(), 1);
  EXPECT_LE(ParallelThreads(), kMaxParallelThreads);
  ThreadLimit serial(1);
  EXPECT_EQ(ParallelThreads(), 1);
}

TEST(ParallelFor, ChunksCoverTheRangeOnceWithFixedBounds) {
  for (const int threads : {1, 0}) {
    ThreadLimit limit(threads);
    std::vector<std::atomic<int>> hits(1000);
    std::vector<std::pair<size_t, size_t>> bounds(NumChunks(1000, 64));
    ParallelFor(1000, 64, [&](int chunk, size_t begin, size_t end) {
      bounds[chunk] = {begin, end};
      for (size_t i = begin; i < end; ++i) hits[i] += 1;
    });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
    ASSERT_EQ(bounds.size(), 16u);
    for (size_t c = 0; c < bounds.size(); ++c) {
      EXPECT_EQ(bounds[c].first, c * 64);
      EXPECT_EQ(bounds[c].second, std::min<size_t>(1000, (c + 1) * 64));
    }
  }
  EXPECT_EQ(NumChunks(0, 64), 0);
  ParallelFor(0, 64, [](int, size_t, size_t) { FAIL() << "no chunk for an empty range"; });
}

// Partial sums per chunk reduced in chunk order: the bits do not depend on the thread count.
TEST(ParallelFor, ChunkOrderReductionIsTheSameOnAnyThreadCount) {
  std::vector<double> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.37 * i) * std::pow(10, i % 7);
  const auto sum = [&] {
    std::vector<double> partial(NumChunks(values.size(), 1000), 0);
    ParallelFor(values.size(), 1000, [&](int chunk, size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) partial[chunk] += values[i];
    });
    double total = 0;
    for (const double p : partial) total += p;
    return total;
  };
  double serial;
  {
    ThreadLimit limit(1);
    serial = sum();
  }
  for (int run = 0; run < 5; ++run) EXPECT_EQ(sum(), serial);
}

TEST(ParallelFor, RethrowsTheLowestFailingChunkAndStaysUsable) {
  for (const int threads : {1, 0}) {
    ThreadLimit limit(threads);
    try {
      ParallelFor(100, 1, [](int chunk, size_t, size_t) {
        if (chunk % 10 == 3) throw std::runtime_error("chunk " + std::to_string(chunk));
      });
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk 3");
    }
    std::atomic<int> chunks{0};
    ParallelFor(100, 1, [&](int, size_t, size_t) { chunks += 1; });
    EXPECT_EQ(chunks.load(), 100);
  }
}

TEST(ParallelFor, NestedLoopsRunAndCoverTheirRanges) {
  std::vector<std::atomic<int>> hits(64 * 64);
  ParallelFor(64, 4, [&](int, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      ParallelFor(64, 8, [&](int, size_t b, size_t e) {
        for (size_t j = b; j < e; ++j) hits[i * 64 + j] += 1;
      });
    }
  });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

}  // namespace
}  // namespace edgesfm

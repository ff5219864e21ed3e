// Draws minimal samples for RANSAC: k distinct indices out of n, uniformly, from a
// seeded Mersenne twister so that a given seed reproduces the same estimate on every
// platform (native and wasm): the spec's `seed` makes runs deterministic.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace edgesfm {

class RandomSampler {
 public:
  RandomSampler(size_t num_samples_per_draw, uint64_t seed)
      : k_(num_samples_per_draw), rng_(static_cast<std::mt19937_64::result_type>(seed)) {}

  // Prepares drawing from indices 0..num_points-1.
  void Initialize(size_t num_points);

  // k distinct indices (partial Fisher-Yates shuffle of the kept permutation).
  void Sample(std::vector<size_t>* sample);

  // Copies the sampled elements of X and Y.
  template <typename X_t, typename Y_t>
  void SampleXY(const std::vector<X_t>& X, const std::vector<Y_t>& Y, std::vector<X_t>* X_rand,
                std::vector<Y_t>* Y_rand) {
    Sample(&sample_);
    X_rand->resize(k_);
    Y_rand->resize(k_);
    for (size_t i = 0; i < k_; ++i) {
      (*X_rand)[i] = X[sample_[i]];
      (*Y_rand)[i] = Y[sample_[i]];
    }
  }

 private:
  // Uniform integer in [0, n) without the platform-dependent std::uniform_int_distribution.
  size_t UniformIndex(size_t n);

  size_t k_;
  std::mt19937_64 rng_;
  std::vector<size_t> permutation_;
  std::vector<size_t> sample_;
};

}  // namespace edgesfm

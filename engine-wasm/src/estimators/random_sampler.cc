#include "estimators/random_sampler.h"

#include <numeric>
#include <stdexcept>
#include <utility>

namespace edgesfm {

void RandomSampler::Initialize(size_t num_points) {
  if (num_points < k_) throw std::invalid_argument("RandomSampler: fewer points than k");
  permutation_.resize(num_points);
  std::iota(permutation_.begin(), permutation_.end(), 0);
}

size_t RandomSampler::UniformIndex(size_t n) {
  // Rejection sampling keeps the draw unbiased and identical across standard libraries.
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t value;
  do {
    value = rng_();
  } while (value >= limit);
  return static_cast<size_t>(value % n);
}

void RandomSampler::Sample(std::vector<size_t>* sample) {
  sample->resize(k_);
  const size_t n = permutation_.size();
  for (size_t i = 0; i < k_; ++i) {
    const size_t j = i + UniformIndex(n - i);
    std::swap(permutation_[i], permutation_[j]);
    (*sample)[i] = permutation_[i];
  }
}

}  // namespace edgesfm

#include "estimators/loransac.h"

namespace edgesfm {

size_t ComputeRansacNumTrials(size_t num_inliers, size_t num_samples, size_t k,
                              double confidence, double multiplier) {
  if (num_inliers < k) return std::numeric_limits<size_t>::max();
  const double prob_failure = 1 - confidence;
  if (prob_failure <= 0) return std::numeric_limits<size_t>::max();
  // Probability that a sample drawn without replacement is all inliers (exact
  // hypergeometric product rather than ratio^k, which overestimates it for small sets).
  double prob_all_inliers = 1;
  for (size_t i = 0; i < k; ++i) {
    prob_all_inliers *= static_cast<double>(num_inliers - i) / static_cast<double>(num_samples - i);
  }
  const double prob_some_outlier = 1 - prob_all_inliers;
  if (prob_some_outlier <= 0) return 1;
  if (prob_some_outlier >= 1) return std::numeric_limits<size_t>::max();
  const double trials = std::ceil(std::log(prob_failure) / std::log(prob_some_outlier) * multiplier);
  return trials >= static_cast<double>(std::numeric_limits<size_t>::max())
             ? std::numeric_limits<size_t>::max()
             : static_cast<size_t>(trials);
}

}  // namespace edgesfm

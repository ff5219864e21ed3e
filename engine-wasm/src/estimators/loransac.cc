#include "estimators/loransac.h"

namespace edgesfm {

size_t ComputeRansacNumTrials(size_t num_inliers, size_t num_samples, size_t k, double confidence,
                              double multiplier) {
  const double prob_failure = 1 - confidence;
  if (prob_failure <= 0) return std::numeric_limits<size_t>::max();
  // COLMAP 3.8's estimate (ransac.h ComputeNumTrials): an all-inlier sample has
  // probability ratio^k. (The exact product for drawing without replacement asks for up
  // to twice the trials on pairs with a few dozen matches, at no gain COLMAP measures.)
  const double inlier_ratio = static_cast<double>(num_inliers) / static_cast<double>(num_samples);
  const double prob_some_outlier = 1 - std::pow(inlier_ratio, static_cast<double>(k));
  if (prob_some_outlier <= 0) return 1;
  if (prob_some_outlier >= 1) return std::numeric_limits<size_t>::max();
  const double trials =
      std::ceil(std::log(prob_failure) / std::log(prob_some_outlier) * multiplier);
  return trials >= static_cast<double>(std::numeric_limits<size_t>::max())
             ? std::numeric_limits<size_t>::max()
             : static_cast<size_t>(trials);
}

}  // namespace edgesfm

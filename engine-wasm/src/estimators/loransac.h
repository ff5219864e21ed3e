// Robust model estimation: LO-RANSAC (Chum, Matas & Kittler, "Locally Optimized
// RANSAC", DAGM 2003) with adaptive stopping (Hartley & Zisserman, "Multiple View
// Geometry", 2nd ed., algorithm 4.5), shaped like COLMAP's LORANSAC.
//
// An Estimator is a class with
//   using X_t = ...; using Y_t = ...; using M_t = ...;
//   static constexpr size_t kMinNumSamples = ...;
//   static void Estimate(const std::vector<X_t>& X, const std::vector<Y_t>& Y,
//                        std::vector<M_t>* models);       // 0..n models per sample
//   static void Residuals(const std::vector<X_t>& X, const std::vector<Y_t>& Y,
//                         const M_t& model, std::vector<double>* residuals);  // squared
// The LocalEstimator (same types) re-fits a model to all inliers of the best sample
// model; it may be a non-minimal solver (e.g. 8-point after 7-point). Estimate and
// Residuals may also be const member functions of an estimator that carries settings
// (e.g. a minimum triangulation angle): pass the configured instances to the constructor.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "estimators/random_sampler.h"

namespace edgesfm {

struct RansacOptions {
  // Inlier threshold on the (unsquared) error; residuals are compared to its square.
  double max_error = 4.0;
  // A priori minimum inlier ratio: bounds the number of trials to what this ratio needs
  // for `confidence` (COLMAP's semantics; VerifySpec.min_inlier_ratio feeds it).
  double min_inlier_ratio = 0.1;
  // Stop once an all-inlier sample has been drawn with this probability.
  double confidence = 0.999;
  // Safety factor on the adaptive number of trials.
  double dyn_num_trials_multiplier = 3.0;
  int min_num_trials = 0;
  int max_num_trials = 10000;
  // The same seed gives the same result (spec: `seed`).
  uint64_t random_seed = 0;
};

// Support of a model: more inliers is better, then a smaller residual sum.
struct InlierSupport {
  size_t num_inliers = 0;
  double residual_sum = std::numeric_limits<double>::max();

  static InlierSupport Evaluate(const std::vector<double>& residuals, double max_residual) {
    InlierSupport support;
    support.residual_sum = 0;
    for (const double residual : residuals) {
      if (residual <= max_residual) {
        support.num_inliers += 1;
        support.residual_sum += residual;
      }
    }
    return support;
  }
  bool IsBetterThan(const InlierSupport& other) const {
    if (num_inliers != other.num_inliers) return num_inliers > other.num_inliers;
    return residual_sum < other.residual_sum;
  }
};

// Trials needed to draw one all-inlier sample of size k with probability `confidence`
// when num_inliers of num_samples are inliers, times the multiplier (COLMAP 3.8's formula:
// the inlier ratio to the power k).
size_t ComputeRansacNumTrials(size_t num_inliers, size_t num_samples, size_t k, double confidence,
                              double multiplier);

template <typename Estimator, typename LocalEstimator = Estimator>
class LoRansac {
 public:
  using X_t = typename Estimator::X_t;
  using Y_t = typename Estimator::Y_t;
  using M_t = typename Estimator::M_t;

  struct Report {
    bool success = false;
    size_t num_trials = 0;
    InlierSupport support;
    std::vector<char> inlier_mask;
    M_t model{};
  };

  explicit LoRansac(const RansacOptions& options, Estimator estimator = Estimator(),
                    LocalEstimator local_estimator = LocalEstimator())
      : options_(options),
        estimator_(std::move(estimator)),
        local_estimator_(std::move(local_estimator)) {
    if (!(options.max_error > 0)) throw std::invalid_argument("LoRansac: max_error <= 0");
    if (options.min_inlier_ratio < 0 || options.min_inlier_ratio > 1 || options.confidence < 0 ||
        options.confidence > 1 || options.min_num_trials > options.max_num_trials) {
      throw std::invalid_argument("LoRansac: invalid options");
    }
  }

  Report Estimate(const std::vector<X_t>& X, const std::vector<Y_t>& Y) const;

 private:
  RansacOptions options_;
  Estimator estimator_;
  LocalEstimator local_estimator_;
};

template <typename Estimator, typename LocalEstimator>
typename LoRansac<Estimator, LocalEstimator>::Report LoRansac<Estimator, LocalEstimator>::Estimate(
    const std::vector<X_t>& X, const std::vector<Y_t>& Y) const {
  if (X.size() != Y.size()) throw std::invalid_argument("LoRansac: X and Y sizes differ");
  Report report;
  const size_t num_samples = X.size();
  constexpr size_t k = Estimator::kMinNumSamples;
  if (num_samples < k) return report;

  const double max_residual = options_.max_error * options_.max_error;
  // The a-priori inlier ratio caps the trials (a lower ratio allows more).
  constexpr size_t kNominalSamples = 100000;
  const size_t max_num_trials = std::min<size_t>(
      options_.max_num_trials,
      ComputeRansacNumTrials(static_cast<size_t>(options_.min_inlier_ratio * kNominalSamples),
                             kNominalSamples, k, options_.confidence,
                             options_.dyn_num_trials_multiplier));
  size_t dyn_max_num_trials = max_num_trials;

  RandomSampler sampler(k, options_.random_seed);
  sampler.Initialize(num_samples);

  InlierSupport best_support;
  bool has_best = false;
  M_t best_model{};

  std::vector<X_t> X_sample, X_inlier;
  std::vector<Y_t> Y_sample, Y_inlier;
  std::vector<M_t> models, local_models;
  std::vector<double> residuals(num_samples), best_residuals(num_samples);

  // Re-fits on the inliers of `best_residuals` while that grows the inlier set.
  auto locally_optimize = [&]() {
    constexpr int kMaxLocalIterations = 10;
    for (int iteration = 0; iteration < kMaxLocalIterations; ++iteration) {
      X_inlier.clear();
      Y_inlier.clear();
      for (size_t i = 0; i < num_samples; ++i) {
        if (best_residuals[i] <= max_residual) {
          X_inlier.push_back(X[i]);
          Y_inlier.push_back(Y[i]);
        }
      }
      if (X_inlier.size() < LocalEstimator::kMinNumSamples) return;
      local_models.clear();
      local_estimator_.Estimate(X_inlier, Y_inlier, &local_models);
      const size_t previous_num_inliers = best_support.num_inliers;
      for (const M_t& local_model : local_models) {
        local_estimator_.Residuals(X, Y, local_model, &residuals);
        const InlierSupport support = InlierSupport::Evaluate(residuals, max_residual);
        if (support.IsBetterThan(best_support)) {
          best_support = support;
          best_model = local_model;
          best_residuals.swap(residuals);
          residuals.resize(num_samples);
        }
      }
      // Continue only while the inlier set expands.
      if (best_support.num_inliers <= previous_num_inliers) return;
    }
  };

  // COLMAP 3.8's budget: the adaptive bound is checked after each model, so the trial
  // that reaches it still runs (up to that model); report.num_trials counts trials run.
  bool abort = false;
  for (report.num_trials = 0; report.num_trials < max_num_trials && !abort; ++report.num_trials) {
    sampler.SampleXY(X, Y, &X_sample, &Y_sample);
    models.clear();
    estimator_.Estimate(X_sample, Y_sample, &models);
    for (const M_t& model : models) {
      estimator_.Residuals(X, Y, model, &residuals);
      const InlierSupport support = InlierSupport::Evaluate(residuals, max_residual);
      if (!has_best || support.IsBetterThan(best_support)) {
        has_best = true;
        best_support = support;
        best_model = model;
        best_residuals.swap(residuals);
        residuals.resize(num_samples);
        if (best_support.num_inliers > k) locally_optimize();
        dyn_max_num_trials =
            ComputeRansacNumTrials(best_support.num_inliers, num_samples, k, options_.confidence,
                                   options_.dyn_num_trials_multiplier);
      }
      if (report.num_trials >= dyn_max_num_trials &&
          report.num_trials >= static_cast<size_t>(options_.min_num_trials)) {
        abort = true;
        break;
      }
    }
  }

  if (!has_best || best_support.num_inliers < k) return report;
  report.success = true;
  report.support = best_support;
  report.model = best_model;
  report.inlier_mask.resize(num_samples);
  for (size_t i = 0; i < num_samples; ++i) {
    report.inlier_mask[i] = best_residuals[i] <= max_residual;
  }
  return report;
}

}  // namespace edgesfm

#include "estimators/loransac.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <random>

namespace edgesfm {
namespace {

// y = a x + b through two points (minimal) ...
struct LineEstimator {
  using X_t = double;
  using Y_t = double;
  using M_t = Eigen::Vector2d;
  static constexpr size_t kMinNumSamples = 2;
  static void Estimate(const std::vector<double>& X, const std::vector<double>& Y,
                       std::vector<M_t>* models) {
    if (X[0] == X[1]) return;
    const double a = (Y[1] - Y[0]) / (X[1] - X[0]);
    models->emplace_back(a, Y[0] - a * X[0]);
  }
  static void Residuals(const std::vector<double>& X, const std::vector<double>& Y, const M_t& line,
                        std::vector<double>* residuals) {
    residuals->resize(X.size());
    for (size_t i = 0; i < X.size(); ++i) {
      const double r = Y[i] - (line[0] * X[i] + line[1]);
      (*residuals)[i] = r * r;
    }
  }
};

// ... and by least squares through all inliers (the local optimisation).
struct LeastSquaresLineEstimator : LineEstimator {
  static constexpr size_t kMinNumSamples = 2;
  static void Estimate(const std::vector<double>& X, const std::vector<double>& Y,
                       std::vector<M_t>* models) {
    Eigen::MatrixXd A(X.size(), 2);
    Eigen::VectorXd b(X.size());
    for (size_t i = 0; i < X.size(); ++i) {
      A.row(i) << X[i], 1;
      b[i] = Y[i];
    }
    models->push_back(A.colPivHouseholderQr().solve(b));
  }
};

struct LineData {
  std::vector<double> x, y;
  std::vector<bool> is_inlier;
};

LineData MakeLine(size_t n, double outlier_ratio, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-10, 10);
  std::normal_distribution<double> gaussian(0, noise);
  LineData data;
  for (size_t i = 0; i < n; ++i) {
    const double x = uniform(rng);
    const bool inlier = i >= outlier_ratio * n;
    data.x.push_back(x);
    data.y.push_back(inlier ? 2 * x - 1 + gaussian(rng) : uniform(rng) * 5);
    data.is_inlier.push_back(inlier);
  }
  return data;
}

TEST(LoRansac, FindsTheLineAndItsInliersDespiteOutliers) {
  const LineData data = MakeLine(300, 0.4, 0.05, 1);
  RansacOptions options;
  options.max_error = 0.3;
  const auto report =
      LoRansac<LineEstimator, LeastSquaresLineEstimator>(options).Estimate(data.x, data.y);
  ASSERT_TRUE(report.success);
  EXPECT_NEAR(report.model[0], 2, 0.01);
  EXPECT_NEAR(report.model[1], -1, 0.02);
  size_t true_inliers_found = 0;
  for (size_t i = 0; i < data.x.size(); ++i) {
    if (data.is_inlier[i] && report.inlier_mask[i]) true_inliers_found += 1;
  }
  EXPECT_GE(true_inliers_found, 175u);  // of 180, noise is 1/6 of the threshold
  EXPECT_GE(report.support.num_inliers, 175u);
  EXPECT_LE(report.support.num_inliers, 200u);
  // Adaptive stopping: 60% inliers and k = 2 need far fewer than max_num_trials.
  EXPECT_LT(report.num_trials, 100u);
}

TEST(LoRansac, IsDeterministicForASeed) {
  const LineData data = MakeLine(200, 0.5, 0.1, 2);
  RansacOptions options;
  options.max_error = 0.3;
  options.random_seed = 17;
  const auto a = LoRansac<LineEstimator>(options).Estimate(data.x, data.y);
  const auto b = LoRansac<LineEstimator>(options).Estimate(data.x, data.y);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.inlier_mask, b.inlier_mask);
  EXPECT_EQ(a.num_trials, b.num_trials);
}

TEST(LoRansac, MinInlierRatioBoundsTheTrials) {
  // Pure noise: no consensus, so trials run to the bound set by min_inlier_ratio.
  const LineData data = MakeLine(100, 1.0, 0, 3);
  RansacOptions options;
  options.max_error = 1e-6;
  options.min_inlier_ratio = 0.5;
  const auto report = LoRansac<LineEstimator>(options).Estimate(data.x, data.y);
  EXPECT_EQ(report.num_trials, ComputeRansacNumTrials(50000, 100000, 2, options.confidence,
                                                      options.dyn_num_trials_multiplier));
  // A lower a-priori ratio lifts the bound up to max_num_trials.
  options.min_inlier_ratio = 0.01;
  options.max_num_trials = 500;
  EXPECT_EQ(LoRansac<LineEstimator>(options).Estimate(data.x, data.y).num_trials, 500u);
}

TEST(LoRansac, RunsTheTrialThatReachesTheAdaptiveBoundAsColmap) {
  // Every point on the line: the first model explains all, the bound drops to one trial,
  // and (COLMAP 3.8) the bound is checked after each model, so trial 1 still runs.
  const LineData data = MakeLine(50, 0, 1e-9, 4);
  RansacOptions options;
  options.max_error = 1e-6;
  options.min_num_trials = 0;
  EXPECT_EQ(LoRansac<LineEstimator>(options).Estimate(data.x, data.y).num_trials, 2u);
  // min_num_trials holds the loop open regardless.
  options.min_num_trials = 7;
  EXPECT_EQ(LoRansac<LineEstimator>(options).Estimate(data.x, data.y).num_trials, 8u);
}

TEST(LoRansac, FailsWithTooFewPoints) {
  RansacOptions options;
  EXPECT_FALSE(LoRansac<LineEstimator>(options).Estimate({1.0}, {2.0}).success);
}

TEST(ComputeRansacNumTrials, MatchesTheClosedForm) {
  // 50% inliers, k = 2, 99% confidence: log(0.01) / log(1 - 0.25) ~ 16.
  EXPECT_NEAR(static_cast<double>(ComputeRansacNumTrials(500000, 1000000, 2, 0.99, 1.0)), 17, 1);
  EXPECT_EQ(ComputeRansacNumTrials(10, 10, 2, 0.99, 1.0), 1u);
  // COLMAP 3.8's ratio^k, not the product for drawing without replacement (which would
  // ask 4977 trials here): 20 of 40 inliers, k = 7, 99.9%, times 3.
  EXPECT_EQ(ComputeRansacNumTrials(20, 40, 7, 0.999, 3.0),
            static_cast<size_t>(std::ceil(std::log(0.001) / std::log(1 - std::pow(0.5, 7)) * 3)));
  // No inlier at all: no bound.
  EXPECT_EQ(ComputeRansacNumTrials(0, 40, 7, 0.999, 3.0), std::numeric_limits<size_t>::max());
}

}  // namespace
}  // namespace edgesfm

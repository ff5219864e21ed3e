#include "optim/bundle_adjustment.h"

#include <gtest/gtest.h>

#include <random>

#include "geometry/sim3.h"
#include "util/parallel_for.h"

namespace edgesfm {
namespace {

// A ring of cameras looking at a cloud of points, one shared SIMPLE_RADIAL camera;
// `truth` keeps the exact values, the problem views the perturbed copies.
struct SyntheticScene {
  std::vector<double> true_intrinsics = {800, 320, 240, 0.05};
  std::vector<Eigen::Quaterniond> true_rotations;
  std::vector<Eigen::Vector3d> true_translations;
  std::vector<Eigen::Vector3d> true_points;

  std::vector<double> intrinsics;
  std::vector<Eigen::Quaterniond> rotations;
  std::vector<Eigen::Vector3d> translations;
  std::vector<Eigen::Vector3d> points;
  std::vector<bool> is_outlier;
  BundleAdjustmentProblem problem;

  SyntheticScene(int num_images, int num_points, double noise_px, double outlier_ratio,
                 unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> uniform(-1, 1);
    std::normal_distribution<double> normal(0, 1);
    for (int i = 0; i < num_images; ++i) {
      const double angle = 0.15 * i;
      const Eigen::Vector3d center(6 * std::sin(angle), 0.3 * uniform(rng), -6 * std::cos(angle));
      // Look at the origin: camera z axis towards -center.
      const Eigen::Vector3d z = (-center).normalized();
      const Eigen::Vector3d x = Eigen::Vector3d::UnitY().cross(z).normalized();
      const Eigen::Vector3d y = z.cross(x);
      Eigen::Matrix3d r;
      r << x.transpose(), y.transpose(), z.transpose();
      true_rotations.emplace_back(r);
      true_translations.push_back(-r * center);
    }
    for (int j = 0; j < num_points; ++j)
      true_points.emplace_back(uniform(rng), uniform(rng), uniform(rng));
    intrinsics = true_intrinsics;
    intrinsics[0] *= 1.03;
    intrinsics[3] = 0;
    for (int i = 0; i < num_images; ++i) {
      const Eigen::Vector3d axis(normal(rng), normal(rng), normal(rng));
      rotations.push_back(i == 0 ? true_rotations[i]
                                 : Eigen::Quaterniond(Eigen::AngleAxisd(0.02, axis.normalized())) *
                                       true_rotations[i]);
      translations.push_back(i == 0 ? true_translations[i]
                                    : true_translations[i] + 0.05 * Eigen::Vector3d(normal(rng),
                                                                                    normal(rng),
                                                                                    normal(rng)));
    }
    for (const auto& p : true_points)
      points.push_back(p + 0.03 * Eigen::Vector3d(normal(rng), normal(rng), normal(rng)));

    problem.cameras.push_back({CameraModelId::kSimpleRadial, intrinsics.data(), 640, 480, false});
    for (int i = 0; i < num_images; ++i) {
      BundleAdjustmentProblem::Pose pose;
      pose.rotation = &rotations[i];
      pose.translation = &translations[i];
      problem.poses.push_back(pose);
    }
    // Gauge as COLMAP: the first pose, and one translation entry of the second (scale).
    problem.poses[0].SetConstant();
    const int largest = ScaleGaugeTranslationIndex(true_rotations[0], true_translations[0],
                                                   true_rotations[1], true_translations[1]);
    problem.poses[1].constant_translation[largest] = true;
    translations[1][largest] = true_translations[1][largest];
    for (auto& p : points) problem.points.push_back({&p, false});
    for (int j = 0; j < num_points; ++j) {
      for (int i = 0; i < num_images; ++i) {
        const Eigen::Vector3d in_cam = true_rotations[i] * true_points[j] + true_translations[i];
        double x, y;
        SimpleRadialCameraModel::ImgFromCam(true_intrinsics.data(), in_cam.x(), in_cam.y(),
                                            in_cam.z(), 640, 480, &x, &y);
        Eigen::Vector2d xy(x + noise_px * normal(rng), y + noise_px * normal(rng));
        const bool outlier = std::uniform_real_distribution<double>(0, 1)(rng) < outlier_ratio;
        if (outlier) xy += Eigen::Vector2d(uniform(rng), uniform(rng)) * 40;
        is_outlier.push_back(outlier);
        problem.observations.push_back({0, i, j, xy});
      }
    }
  }

  double MaxCenterError() const {
    double e = 0;
    for (size_t i = 0; i < rotations.size(); ++i) {
      const Eigen::Vector3d c = -(rotations[i].inverse() * translations[i]);
      const Eigen::Vector3d t = -(true_rotations[i].inverse() * true_translations[i]);
      e = std::max(e, (c - t).norm());
    }
    return e;
  }
  double MaxRotationErrorDeg() const {
    double e = 0;
    for (size_t i = 0; i < rotations.size(); ++i) {
      e = std::max(e, rotations[i].angularDistance(true_rotations[i]) * 180 / M_PI);
    }
    return e;
  }
  // The cost at the true parameters: with noise, a converged solver must reach at
  // most this (the optimum fits the noise).
  double TruthCost(const BundleAdjustmentOptions& options) const {
    SyntheticScene copy = *this;
    copy.intrinsics = true_intrinsics;
    copy.rotations = true_rotations;
    copy.translations = true_translations;
    copy.points = true_points;
    copy.Rebind();
    BundleAdjustmentOptions evaluate_only = options;
    evaluate_only.max_num_iterations = 0;
    return SolveBundleAdjustment(evaluate_only, &copy.problem).initial_cost;
  }
  // Points the problem's views at this object's storage (after a copy).
  void Rebind() {
    problem.cameras[0].params = intrinsics.data();
    for (size_t i = 0; i < rotations.size(); ++i) {
      problem.poses[i].rotation = &rotations[i];
      problem.poses[i].translation = &translations[i];
    }
    for (size_t j = 0; j < points.size(); ++j) problem.points[j].xyz = &points[j];
  }
  double RelativeFocalError() const { return std::abs(intrinsics[0] / true_intrinsics[0] - 1); }
};

TEST(BundleAdjustment, ConvergesToTruthFromPerturbedStart) {
  SyntheticScene scene(8, 150, 0.5, 0.0, 1);
  const double center_error_before = scene.MaxCenterError();
  BundleAdjustmentOptions options;
  const BundleAdjustmentSummary summary = SolveBundleAdjustment(options, &scene.problem);
  EXPECT_TRUE(summary.converged) << summary.termination;
  EXPECT_LT(summary.final_cost, 0.01 * summary.initial_cost);
  // Noise of 0.5 px per coordinate: the RMS reprojection error of the optimum is ~0.5 px.
  EXPECT_NEAR(std::sqrt(2 * summary.final_cost / summary.num_observations), 0.5 * std::sqrt(2.0),
              0.1);
  EXPECT_LE(summary.final_cost, scene.TruthCost(options));
  EXPECT_LT(scene.MaxCenterError(), 0.05);
  EXPECT_LT(scene.MaxCenterError(), 0.5 * center_error_before);
  EXPECT_LT(scene.MaxRotationErrorDeg(), 0.25);
  EXPECT_LT(scene.RelativeFocalError(), 0.003);
  EXPECT_NEAR(scene.intrinsics[3], scene.true_intrinsics[3], 0.01);
  // Held by the gauge.
  EXPECT_TRUE(scene.translations[0].isApprox(scene.true_translations[0]));
}

// The hot loops run on util/parallel_for.h's fixed chunks (here 2000 points: 8 chunks of the
// point elimination, 20 of the observations), so one thread and all of them give the same bits.
TEST(BundleAdjustment, ThreadsGiveBitIdenticalResults) {
  const auto solve = [](int threads) {
    SetParallelThreadLimit(threads);
    SyntheticScene scene(10, 2000, 0.5, 0.05, 11);
    BundleAdjustmentOptions options;
    options.loss_kernel = LossKernel::kCauchy;
    const BundleAdjustmentSummary summary = SolveBundleAdjustment(options, &scene.problem);
    SetParallelThreadLimit(0);
    return std::make_pair(summary, scene);
  };
  const auto [serial, serial_scene] = solve(1);
  const auto [parallel, parallel_scene] = solve(0);
  EXPECT_TRUE(serial.converged) << serial.termination;
  EXPECT_EQ(parallel.num_iterations, serial.num_iterations);
  EXPECT_EQ(parallel.final_cost, serial.final_cost);
  EXPECT_EQ(parallel_scene.intrinsics, serial_scene.intrinsics);
  for (size_t i = 0; i < serial_scene.rotations.size(); ++i) {
    EXPECT_EQ(parallel_scene.rotations[i].coeffs(), serial_scene.rotations[i].coeffs()) << i;
    EXPECT_EQ(parallel_scene.translations[i], serial_scene.translations[i]) << i;
  }
  EXPECT_EQ(parallel_scene.points, serial_scene.points);
}

TEST(BundleAdjustment, SparseAndIterativeSolversAgreeWithDense) {
  SyntheticScene dense(6, 80, 0.5, 0.0, 2);
  BundleAdjustmentOptions options;
  const BundleAdjustmentSummary a = SolveBundleAdjustment(options, &dense.problem);
  // Sparse Cholesky, then preconditioned conjugate gradients.
  for (const int max_direct_dim : {1000, 0}) {
    SyntheticScene other(6, 80, 0.5, 0.0, 2);
    options.max_dense_dim = 0;
    options.max_direct_dim = max_direct_dim;
    const BundleAdjustmentSummary b = SolveBundleAdjustment(options, &other.problem);
    EXPECT_NEAR(a.final_cost, b.final_cost, 1e-6 * a.final_cost) << max_direct_dim;
    EXPECT_LT((dense.translations[3] - other.translations[3]).norm(), 1e-6) << max_direct_dim;
  }
}

TEST(BundleAdjustment, EveryLossKernelConvergesOnCleanData) {
  for (LossKernel kernel : {LossKernel::kSquared, LossKernel::kHuber, LossKernel::kCauchy,
                            LossKernel::kSoftL1, LossKernel::kTukey}) {
    SyntheticScene scene(6, 100, 0.3, 0.0, 3);
    BundleAdjustmentOptions options;
    options.loss_kernel = kernel;
    // Tukey ignores residuals beyond its threshold; the start is ~10 px off.
    options.loss_threshold = kernel == LossKernel::kTukey ? 50.0 : 1.0;
    const BundleAdjustmentSummary summary = SolveBundleAdjustment(options, &scene.problem);
    EXPECT_LE(summary.final_cost, scene.TruthCost(options)) << LossKernelName(kernel);
    EXPECT_LT(scene.MaxCenterError(), 0.05) << LossKernelName(kernel);
    EXPECT_LT(scene.MaxRotationErrorDeg(), 0.25) << LossKernelName(kernel);
  }
}

TEST(BundleAdjustment, RobustKernelsResistOutliersWhereSquaredDoesNot) {
  SyntheticScene squared(8, 150, 0.5, 0.1, 4);
  SyntheticScene cauchy(8, 150, 0.5, 0.1, 4);
  BundleAdjustmentOptions options;
  SolveBundleAdjustment(options, &squared.problem);
  options.loss_kernel = LossKernel::kCauchy;
  options.loss_threshold = 1.0;
  SolveBundleAdjustment(options, &cauchy.problem);
  EXPECT_LT(cauchy.MaxCenterError(), 0.05);
  EXPECT_LT(cauchy.MaxRotationErrorDeg(), 0.25);
  EXPECT_LT(cauchy.RelativeFocalError(), 0.003);
  EXPECT_GT(squared.MaxCenterError(), 2 * cauchy.MaxCenterError());
}

TEST(BundleAdjustment, TwoStageDropsOutliersAndConverges) {
  SyntheticScene scene(8, 150, 0.5, 0.1, 5);
  BundleAdjustmentOptions options;
  std::vector<bool> inliers;
  const size_t num_before = scene.problem.observations.size();
  const BundleAdjustmentSummary summary =
      SolveTwoStageBundleAdjustment(options, 4.0, &scene.problem, &inliers);
  ASSERT_EQ(inliers.size(), num_before);
  int wrong = 0;
  for (size_t o = 0; o < num_before; ++o) {
    // Outliers displaced by less than 4 px are indistinguishable from inliers.
    if (!scene.is_outlier[o] && !inliers[o]) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_LT(scene.problem.observations.size(), num_before);
  EXPECT_LT(scene.MaxCenterError(), 0.05);
  EXPECT_LT(std::sqrt(2 * summary.final_cost / summary.num_observations), 1.0);
}

TEST(BundleAdjustment, RefineFlagsHoldIntrinsics) {
  SyntheticScene scene(6, 80, 0.5, 0.0, 6);
  const std::vector<double> start = scene.intrinsics;
  BundleAdjustmentOptions options;
  options.refine_focal_length = false;
  options.refine_extra_params = false;
  options.refine_principal_point = false;
  SolveBundleAdjustment(options, &scene.problem);
  EXPECT_EQ(scene.intrinsics, start);

  SyntheticScene principal(6, 80, 0.5, 0.0, 6);
  principal.intrinsics[1] += 5;  // principal point off by 5 px
  options.refine_principal_point = true;
  SolveBundleAdjustment(options, &principal.problem);
  EXPECT_EQ(principal.intrinsics[0], start[0]);
  EXPECT_EQ(principal.intrinsics[3], start[3]);
  EXPECT_NE(principal.intrinsics[1], start[1] + 5);

  SyntheticScene constant(6, 80, 0.5, 0.0, 6);
  constant.problem.cameras[0].constant = true;
  SolveBundleAdjustment(BundleAdjustmentOptions(), &constant.problem);
  EXPECT_EQ(constant.intrinsics, start);
}

TEST(BundleAdjustment, ConstantPointsAndPosesStayPut) {
  SyntheticScene scene(6, 80, 0.5, 0.0, 7);
  scene.problem.points[5].constant = true;
  scene.problem.poses[3].SetConstant();
  const Eigen::Vector3d point = scene.points[5];
  const Eigen::Vector3d translation = scene.translations[3];
  const Eigen::Vector3d free_point = scene.points[6];
  SolveBundleAdjustment(BundleAdjustmentOptions(), &scene.problem);
  EXPECT_EQ(scene.points[5], point);
  EXPECT_EQ(scene.translations[3], translation);
  EXPECT_NE(scene.points[6], free_point);
}

// Pose priors at the true poses (6x6 covariance: rotation sigma, centre sigma) on a model moved
// off them by a similarity, with the gauge left free: the priors are what fix it.
void AddTruePriors(SyntheticScene* scene, double rotation_sigma, double centre_sigma) {
  Eigen::Matrix<double, 6, 6> covariance = Eigen::Matrix<double, 6, 6>::Zero();
  covariance.diagonal() << Eigen::Vector3d::Constant(rotation_sigma * rotation_sigma),
      Eigen::Vector3d::Constant(centre_sigma * centre_sigma);
  for (size_t i = 0; i < scene->rotations.size(); ++i) {
    BundleAdjustmentProblem::PosePrior prior;
    prior.pose = static_cast<int>(i);
    prior.rotation = scene->true_rotations[i];
    prior.centre = -(scene->true_rotations[i].inverse() * scene->true_translations[i]);
    prior.sqrt_information = PoseSqrtInformation(covariance);
    scene->problem.pose_priors.push_back(prior);
  }
}

void MoveModel(SyntheticScene* scene, const Sim3d& new_from_old) {
  for (auto& pose : scene->problem.poses) {
    pose.constant_rotation = false;
    pose.constant_translation = {false, false, false};
  }
  for (size_t i = 0; i < scene->rotations.size(); ++i) {
    const Rigid3d moved =
        TransformCameraPose(new_from_old, Rigid3d(scene->rotations[i], scene->translations[i]));
    scene->rotations[i] = moved.rotation;
    scene->translations[i] = moved.translation;
  }
  for (auto& p : scene->points) p = new_from_old * p;
}

TEST(BundleAdjustment, PosePriorsPutTheModelInTheirFrame) {
  SyntheticScene scene(8, 150, 0.5, 0.0, 8);
  MoveModel(&scene,
            Sim3d(1.05, Eigen::Quaterniond(Eigen::AngleAxisd(0.03, Eigen::Vector3d::UnitY())),
                  Eigen::Vector3d(0.2, -0.1, 0.15)));
  const double before = scene.MaxCenterError();
  AddTruePriors(&scene, 0.01, 0.02);
  const BundleAdjustmentSummary summary =
      SolveBundleAdjustment(BundleAdjustmentOptions(), &scene.problem);
  EXPECT_TRUE(summary.converged) << summary.termination;
  EXPECT_GT(before, 0.2);
  EXPECT_LT(scene.MaxCenterError(), 0.05);
  EXPECT_LT(scene.MaxRotationErrorDeg(), 0.25);
  // The priors agree with the images: the reprojection error is the noise's (~0.5 px per
  // coordinate).
  EXPECT_NEAR(std::sqrt(2 * summary.final_cost / summary.num_observations), 0.5 * std::sqrt(2.0),
              0.1);
}

TEST(BundleAdjustment, PositionPriorsAloneFixTheGaugeOfANonCollinearRig) {
  SyntheticScene scene(8, 150, 0.5, 0.0, 9);
  MoveModel(&scene,
            Sim3d(0.95, Eigen::Quaterniond(Eigen::AngleAxisd(-0.02, Eigen::Vector3d::UnitZ())),
                  Eigen::Vector3d(-0.1, 0.2, 0.1)));
  // A GPS-like prior: the orientation free (huge variance), the centre to 2 cm.
  AddTruePriors(&scene, 1e6, 0.02);
  SolveBundleAdjustment(BundleAdjustmentOptions(), &scene.problem);
  EXPECT_LT(scene.MaxCenterError(), 0.05);
  EXPECT_LT(scene.MaxRotationErrorDeg(), 0.25);
}

TEST(BundleAdjustment, PriorsWeighByTheirCovariance) {
  // One image's prior 0.5 off: with a loose covariance it barely pulls, with a tight one it wins.
  for (const double sigma : {1.0, 1e-4}) {
    SyntheticScene scene(8, 150, 0.5, 0.0, 10);
    AddTruePriors(&scene, 0.01, 0.02);
    auto& off = scene.problem.pose_priors[4];
    off.centre += Eigen::Vector3d(0.5, 0, 0);
    Eigen::Matrix<double, 6, 6> covariance =
        Eigen::Matrix<double, 6, 6>::Identity() * sigma * sigma;
    off.sqrt_information = PoseSqrtInformation(covariance);
    SolveBundleAdjustment(BundleAdjustmentOptions(), &scene.problem);
    const Eigen::Vector3d centre = -(scene.rotations[4].inverse() * scene.translations[4]);
    const double pulled = (centre - (off.centre - Eigen::Vector3d(0.5, 0, 0))).norm();
    if (sigma > 0.5) {
      EXPECT_LT(pulled, 0.05);
    } else {
      EXPECT_NEAR(centre.x(), off.centre.x(), 0.01);
    }
  }
}

TEST(BundleAdjustment, PoseSqrtInformationWhitens) {
  Eigen::Matrix<double, 6, 6> a = Eigen::Matrix<double, 6, 6>::Random();
  const Eigen::Matrix<double, 6, 6> covariance =
      a * a.transpose() + 0.1 * Eigen::Matrix<double, 6, 6>::Identity();
  const Eigen::Matrix<double, 6, 6> l = PoseSqrtInformation(covariance);
  EXPECT_TRUE((l.transpose() * l * covariance).isIdentity(1e-9));
  // A zero variance is held firmly, not divided by.
  const Eigen::Matrix<double, 6, 6> singular =
      PoseSqrtInformation(Eigen::Matrix<double, 6, 6>::Zero());
  EXPECT_TRUE(singular.allFinite());
  EXPECT_GT(singular.norm(), 1e5);
}

}  // namespace
}  // namespace edgesfm

#include "sfm/global_positioning.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <random>

#include "util/parallel_for.h"

namespace edgesfm {
namespace {

struct Scene {
  std::vector<Eigen::Vector3d> centres, points;
  GlobalPositioningProblem problem;
};

// Cameras on a ring of radius 5 around points in [-1, 1]^3; every camera sees every point
// with probability `visibility`; directions with `noise_deg` of angular noise and a fraction
// `outliers` replaced by random directions.
Scene MakeScene(int num_cameras, int num_points, double visibility, double noise_deg,
                double outliers, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::normal_distribution<double> normal(0, 1);
  Scene s;
  for (int i = 0; i < num_cameras; ++i) {
    const double a = 2 * M_PI * i / num_cameras;
    s.centres.emplace_back(5 * std::cos(a), 0.5 * uniform(rng), 5 * std::sin(a));
  }
  for (int j = 0; j < num_points; ++j)
    s.points.emplace_back(uniform(rng), uniform(rng), uniform(rng));
  s.problem.num_cameras = num_cameras;
  s.problem.num_points = num_points;
  for (int i = 0; i < num_cameras; ++i) {
    for (int j = 0; j < num_points; ++j) {
      if (0.5 * (uniform(rng) + 1) > visibility) continue;
      PositioningObservation ob;
      ob.camera = i;
      ob.point = j;
      if (0.5 * (uniform(rng) + 1) < outliers) {
        ob.direction = Eigen::Vector3d(normal(rng), normal(rng), normal(rng)).normalized();
      } else {
        const Eigen::Vector3d d = (s.points[j] - s.centres[i]).normalized();
        const Eigen::Vector3d axis =
            d.cross(Eigen::Vector3d(normal(rng), normal(rng), normal(rng)));
        ob.direction =
            Eigen::AngleAxisd(noise_deg * M_PI / 180 * normal(rng), axis.normalized()) * d;
      }
      s.problem.observations.push_back(ob);
    }
  }
  return s;
}

// Largest centre error after aligning the solution to the truth by a similarity, as a
// fraction of the ring's radius.
double MaxCentreError(const Scene& scene, const GlobalPositioningResult& result) {
  Eigen::Matrix3Xd src(3, scene.centres.size()), dst(3, scene.centres.size());
  for (size_t i = 0; i < scene.centres.size(); ++i) {
    src.col(i) = result.centres[i];
    dst.col(i) = scene.centres[i];
  }
  const Eigen::Matrix4d t = Eigen::umeyama(src, dst, true);
  double worst = 0;
  for (size_t i = 0; i < scene.centres.size(); ++i) {
    const Eigen::Vector3d moved = t.topLeftCorner<3, 3>() * src.col(i) + t.topRightCorner<3, 1>();
    worst = std::max(worst, (moved - dst.col(i)).norm() / 5);
  }
  return worst;
}

class GlobalPositioningFormulations : public ::testing::TestWithParam<PositioningFormulation> {};

TEST_P(GlobalPositioningFormulations, ExactDirectionsGiveTheScene) {
  const Scene scene = MakeScene(12, 150, 0.7, 0, 0, 3);
  GlobalPositioningOptions options;
  options.formulation = GetParam();
  options.max_num_iterations = 200;
  const GlobalPositioningResult result = SolveGlobalPositioning(options, scene.problem);
  EXPECT_LT(result.final_cost, 1e-6 * result.initial_cost);
  EXPECT_LT(MaxCentreError(scene, result), 1e-3);
}

TEST_P(GlobalPositioningFormulations, NoisyDirectionsAndOutliers) {
  // 0.3 deg of noise and 10% wrong directions: rejection rounds keep the centres within 2% of
  // the radius.
  const Scene scene = MakeScene(20, 300, 0.5, 0.3, 0.1, 7);
  GlobalPositioningOptions options;
  options.formulation = GetParam();
  const GlobalPositioningResult result = SolveGlobalPositioning(options, scene.problem);
  EXPECT_LT(MaxCentreError(scene, result), 0.02);
  size_t inliers = 0;
  for (const PositioningObservation& ob : scene.problem.observations) {
    inliers += PositioningAngleErrorDeg(result.centres[ob.camera], result.points[ob.point],
                                        ob.direction) < 2;
  }
  EXPECT_GT(inliers, 0.85 * scene.problem.observations.size());
}

INSTANTIATE_TEST_SUITE_P(All, GlobalPositioningFormulations,
                         ::testing::Values(PositioningFormulation::kExplicitScale,
                                           PositioningFormulation::kEliminatedScale));

TEST(GlobalPositioning, DeterministicForASeed) {
  const Scene scene = MakeScene(8, 80, 0.8, 0.1, 0, 11);
  GlobalPositioningOptions options;
  options.seed = 5;
  const GlobalPositioningResult a = SolveGlobalPositioning(options, scene.problem);
  const GlobalPositioningResult b = SolveGlobalPositioning(options, scene.problem);
  for (size_t i = 0; i < a.centres.size(); ++i) EXPECT_EQ(a.centres[i], b.centres[i]);
}

// 1500 points and ~9000 observations: several chunks of every parallel loop.
TEST(GlobalPositioning, ThreadsGiveBitIdenticalResults) {
  const Scene scene = MakeScene(10, 1500, 0.6, 0.1, 0.05, 13);
  GlobalPositioningOptions options;
  options.seed = 5;
  SetParallelThreadLimit(1);
  const GlobalPositioningResult serial = SolveGlobalPositioning(options, scene.problem);
  SetParallelThreadLimit(0);
  const GlobalPositioningResult parallel = SolveGlobalPositioning(options, scene.problem);
  EXPECT_EQ(parallel.centres, serial.centres);
  EXPECT_EQ(parallel.points, serial.points);
}

TEST(GlobalPositioning, AngleError) {
  EXPECT_NEAR(PositioningAngleErrorDeg(Eigen::Vector3d::Zero(), Eigen::Vector3d(0, 0, 2),
                                       Eigen::Vector3d(0, 1, 0)),
              90, 1e-9);
  EXPECT_NEAR(PositioningAngleErrorDeg(Eigen::Vector3d::Zero(), Eigen::Vector3d(0, 0, 2),
                                       Eigen::Vector3d(0, 0, 1)),
              0, 1e-6);
}

}  // namespace
}  // namespace edgesfm

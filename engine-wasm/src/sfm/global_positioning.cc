#include "sfm/global_positioning.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <utility>

#include "optim/reduced_camera_system.h"
#include "util/parallel_for.h"

namespace edgesfm {
namespace {

constexpr double kMinScale = 1e-5;

// One observation linearised, with its scale (explicit formulation) already eliminated:
// its contributions to the camera block, the point block, their coupling and both
// right-hand sides, and what back-substitution of the scale needs.
struct Linearised {
  Eigen::Matrix3d h_cc, h_xx, h_cx;
  Eigen::Vector3d b_c, b_x;
  // Explicit scale: the step of d is (b_d - w d u . (dx - dc)) / h_dd.
  double b_d = 0, h_dd = 1, wd = 0;
  Eigen::Vector3d u = Eigen::Vector3d::Zero();
};

double HuberRho(double squared_norm, double threshold) {
  const double t2 = threshold * threshold;
  return squared_norm <= t2 ? squared_norm : 2 * threshold * std::sqrt(squared_norm) - t2;
}

// IRLS weight rho'(s) of the Huber loss.
double HuberWeight(double squared_norm, double threshold) {
  return squared_norm <= threshold * threshold ? 1.0 : threshold / std::sqrt(squared_norm);
}

Eigen::Vector3d Residual(PositioningFormulation formulation, const Eigen::Vector3d& c,
                         const Eigen::Vector3d& x, double d, const Eigen::Vector3d& v) {
  const Eigen::Vector3d u = x - c;
  if (formulation == PositioningFormulation::kExplicitScale) return v - d * u;
  const double n = u.norm();
  return n > 0 ? Eigen::Vector3d(u / n - v) : Eigen::Vector3d(-v);
}

struct State {
  std::vector<Eigen::Vector3d> centres, points;
  std::vector<double> scales;
};

// Chunk sizes of the parallel loops (util/parallel_for.h): fixed, so that the result does not
// depend on the number of threads.
constexpr size_t kObservationChunk = 1024;
constexpr size_t kPointChunk = 512;

double Cost(const GlobalPositioningOptions& options, const GlobalPositioningProblem& problem,
            const State& s) {
  std::vector<double> rho(problem.observations.size());
  ParallelFor(rho.size(), kObservationChunk, [&](int, size_t begin, size_t end) {
    for (size_t o = begin; o < end; ++o) {
      const PositioningObservation& ob = problem.observations[o];
      const Eigen::Vector3d r = Residual(options.formulation, s.centres[ob.camera],
                                         s.points[ob.point], s.scales[o], ob.direction);
      rho[o] = HuberRho(r.squaredNorm(), options.loss_threshold);
    }
  });
  // Summed in observation order, as one thread would.
  double cost = 0;
  for (const double r : rho) cost += r;
  return 0.5 * cost;
}

Linearised Linearise(const GlobalPositioningOptions& options, const PositioningObservation& ob,
                     const State& s, size_t o, double lambda) {
  Linearised l;
  const Eigen::Vector3d u = s.points[ob.point] - s.centres[ob.camera];
  const Eigen::Matrix3d eye = Eigen::Matrix3d::Identity();
  if (options.formulation == PositioningFormulation::kExplicitScale) {
    const double d = s.scales[o];
    const Eigen::Vector3d r = ob.direction - d * u;
    const double w = HuberWeight(r.squaredNorm(), options.loss_threshold);
    // J_c = d I, J_x = -d I, J_d = -u.
    const double wd2 = w * d * d;
    l.h_dd = w * u.squaredNorm() * (1 + lambda) + 1e-12;
    l.b_d = w * u.dot(r);
    l.wd = w * d;
    l.u = u;
    const Eigen::Matrix3d correction = (l.wd * l.wd / l.h_dd) * u * u.transpose();
    l.h_cc = wd2 * eye - correction;
    l.h_xx = l.h_cc;
    l.h_cx = -l.h_cc;
    l.b_c = -l.wd * r + l.wd * u * (l.b_d / l.h_dd);
    l.b_x = -l.b_c;
  } else {
    const double n = std::max(u.norm(), 1e-12);
    const Eigen::Vector3d unit = u / n;
    const Eigen::Vector3d r = unit - ob.direction;
    const double w = HuberWeight(r.squaredNorm(), options.loss_threshold);
    // J_x = P, J_c = -P with P = (I - unit unit^T) / n (symmetric, P^T P = P / n).
    const Eigen::Matrix3d p = (eye - unit * unit.transpose()) / n;
    l.h_xx = w * p * p;
    l.h_cc = l.h_xx;
    l.h_cx = -l.h_xx;
    l.b_x = -w * p * r;
    l.b_c = -l.b_x;
  }
  return l;
}

// Levenberg-Marquardt from `s` over the problem's observations; returns the final cost and
// counts iterations into `num_iterations`.
double Minimise(const GlobalPositioningOptions& options, const GlobalPositioningProblem& problem,
                State* state, int* num_iterations) {
  State& s = *state;
  const auto& obs = problem.observations;
  double final_cost = Cost(options, problem, s);
  // Camera 0 holds the gauge's translation: its block has no unknowns.
  std::vector<int> dims(problem.num_cameras, 3);
  dims[0] = 0;
  std::vector<std::vector<size_t>> point_obs(problem.num_points);
  for (size_t o = 0; o < obs.size(); ++o) point_obs[obs[o].point].push_back(o);
  ReducedCameraSystem system(dims);
  std::set<std::pair<int, int>> couplings;
  for (const auto& list : point_obs) {
    for (size_t a : list) {
      for (size_t b : list) {
        const int ca = obs[a].camera, cb = obs[b].camera;
        if (ca < cb && couplings.emplace(ca, cb).second) system.AddCoupling(ca, cb);
      }
    }
  }
  system.Finalize();

  double lambda = 1e-4;
  std::vector<Linearised> lin(obs.size());
  for (int iteration = 0; iteration < options.max_num_iterations; ++iteration) {
    *num_iterations += 1;
    system.SetZero();
    ParallelFor(obs.size(), kObservationChunk, [&](int, size_t begin, size_t end) {
      for (size_t o = begin; o < end; ++o) lin[o] = Linearise(options, obs[o], s, o, lambda);
    });
    // Marquardt's damping: each diagonal entry scaled by 1 + lambda. The scales' blocks are
    // damped in Linearise (before their elimination), cameras' and points' here.
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(system.dim());
    for (size_t o = 0; o < obs.size(); ++o) {
      const int c = obs[o].camera;
      if (dims[c] == 0) continue;
      Eigen::Matrix3d h = lin[o].h_cc;
      h.diagonal() *= 1 + lambda;
      system.AddBlock(c, c, h);
      rhs.segment<3>(system.block_offset(c)) += lin[o].b_c;
    }
    std::vector<Eigen::Matrix3d> point_inverse(problem.num_points);
    std::vector<Eigen::Vector3d> point_rhs(problem.num_points);
    ParallelFor(problem.num_points, kPointChunk, [&](int, size_t begin, size_t end) {
      for (size_t j = begin; j < end; ++j) {
        Eigen::Matrix3d h = Eigen::Matrix3d::Zero();
        Eigen::Vector3d b = Eigen::Vector3d::Zero();
        for (size_t o : point_obs[j]) {
          h += lin[o].h_xx;
          b += lin[o].b_x;
        }
        h.diagonal() *= 1 + lambda;
        h.diagonal().array() += 1e-12;
        point_inverse[j] = h.inverse();
        point_rhs[j] = b;
      }
    });
    // The camera blocks are shared between points: summed on one thread, in point order.
    for (int j = 0; j < problem.num_points; ++j) {
      const Eigen::Vector3d& b = point_rhs[j];
      for (size_t a : point_obs[j]) {
        const int ca = obs[a].camera;
        if (dims[ca] == 0) continue;
        const Eigen::Matrix3d left = lin[a].h_cx * point_inverse[j];
        rhs.segment<3>(system.block_offset(ca)) -= left * b;
        for (size_t bo : point_obs[j]) {
          const int cb = obs[bo].camera;
          if (dims[cb] == 0 || cb < ca) continue;
          system.AddBlock(ca, cb, -(left * lin[bo].h_cx.transpose()).eval());
        }
      }
    }
    Eigen::VectorXd dc;
    if (!system.Solve(rhs, &dc)) {
      lambda *= 10;
      if (lambda > 1e12) break;
      continue;
    }
    State candidate = s;
    std::vector<Eigen::Vector3d> camera_step(problem.num_cameras, Eigen::Vector3d::Zero());
    for (int c = 0; c < problem.num_cameras; ++c) {
      if (dims[c] == 0) continue;
      camera_step[c] = dc.segment<3>(system.block_offset(c));
      candidate.centres[c] += camera_step[c];
    }
    // Each point and its observations' scales are its own.
    ParallelFor(problem.num_points, kPointChunk, [&](int, size_t begin, size_t end) {
      for (size_t j = begin; j < end; ++j) {
        Eigen::Vector3d b = point_rhs[j];
        for (size_t o : point_obs[j]) b -= lin[o].h_cx.transpose() * camera_step[obs[o].camera];
        const Eigen::Vector3d dx = point_inverse[j] * b;
        candidate.points[j] += dx;
        if (options.formulation != PositioningFormulation::kExplicitScale) continue;
        for (size_t o : point_obs[j]) {
          const double dd =
              (lin[o].b_d - lin[o].wd * lin[o].u.dot(dx - camera_step[obs[o].camera])) /
              lin[o].h_dd;
          candidate.scales[o] = std::max(kMinScale, s.scales[o] + dd);
        }
      }
    });
    const double cost = Cost(options, problem, candidate);
    if (cost < final_cost) {
      const double decrease = (final_cost - cost) / std::max(final_cost, 1e-300);
      s = std::move(candidate);
      final_cost = cost;
      lambda = std::max(lambda / 10, 1e-12);
      if (decrease < options.function_tolerance) break;
    } else {
      lambda *= 10;
      if (lambda > 1e12) break;
    }
  }
  return final_cost;
}

}  // namespace

double PositioningAngleErrorDeg(const Eigen::Vector3d& centre, const Eigen::Vector3d& point,
                                const Eigen::Vector3d& direction) {
  const Eigen::Vector3d u = point - centre;
  const double n = u.norm() * direction.norm();
  if (n <= 0) return 180;
  const double cosine = std::clamp(u.dot(direction) / n, -1.0, 1.0);
  return std::acos(cosine) * 180 / M_PI;
}

GlobalPositioningResult SolveGlobalPositioning(const GlobalPositioningOptions& options,
                                               const GlobalPositioningProblem& problem) {
  const auto& obs = problem.observations;
  State s;
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  const auto random_vector = [&] {
    const double x = uniform(rng), y = uniform(rng), z = uniform(rng);
    return Eigen::Vector3d(x, y, z);
  };
  for (int i = 0; i < problem.num_cameras; ++i) s.centres.push_back(random_vector());
  for (int j = 0; j < problem.num_points; ++j) s.points.push_back(random_vector());
  s.scales.assign(obs.size(), 1.0);

  GlobalPositioningResult result;
  result.initial_cost = Cost(options, problem, s);
  result.final_cost = result.initial_cost;
  result.inlier.assign(obs.size(), true);
  if (problem.num_cameras >= 2 && !obs.empty()) {
    result.final_cost = Minimise(options, problem, &s, &result.num_iterations);
  }
  // Rejection rounds: observations further than outlier_angle_deg from the solution's
  // direction are dropped and the rest solved again from where it stands (a convex loss still
  // lets gross outliers pull; without them the inliers decide).
  for (int round = 0; round < options.num_outlier_rounds && problem.num_cameras >= 2; ++round) {
    GlobalPositioningProblem kept;
    kept.num_cameras = problem.num_cameras;
    kept.num_points = problem.num_points;
    State next{s.centres, s.points, {}};
    size_t dropped = 0;
    for (size_t o = 0; o < obs.size(); ++o) {
      if (!result.inlier[o]) continue;
      const PositioningObservation& ob = obs[o];
      if (PositioningAngleErrorDeg(s.centres[ob.camera], s.points[ob.point], ob.direction) >
          options.outlier_angle_deg) {
        result.inlier[o] = false;
        dropped += 1;
        continue;
      }
      kept.observations.push_back(ob);
      next.scales.push_back(s.scales[o]);
    }
    if (dropped == 0 || kept.observations.empty()) break;
    result.final_cost = Minimise(options, kept, &next, &result.num_iterations);
    // Scales follow the kept observations; the dropped ones keep theirs (unused).
    size_t k = 0;
    for (size_t o = 0; o < obs.size(); ++o) {
      if (result.inlier[o]) s.scales[o] = next.scales[k++];
    }
    s.centres = std::move(next.centres);
    s.points = std::move(next.points);
  }
  result.centres = std::move(s.centres);
  result.points = std::move(s.points);
  return result;
}

}  // namespace edgesfm

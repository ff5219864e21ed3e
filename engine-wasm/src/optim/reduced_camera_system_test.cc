#include "optim/reduced_camera_system.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <random>

namespace edgesfm {
namespace {

// Builds a block-sparse SPD matrix (a chain of coupled blocks) both in the system and
// densely, and checks the dense and the sparse factorisations against Eigen's LDLT.
void CheckSolveMatchesDense(const ReducedCameraSolverOptions& options) {
  const std::vector<int> dims = {6, 0, 6, 4, 6, 6};
  ReducedCameraSystem system(dims, options);
  for (int i = 0; i + 1 < static_cast<int>(dims.size()); ++i) system.AddCoupling(i, i + 1);
  system.AddCoupling(0, 5);
  system.Finalize();
  system.SetZero();
  const int n = system.dim();
  ASSERT_EQ(n, 28);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(n, n);
  auto add = [&](int a, int b) {
    if (dims[a] == 0 || dims[b] == 0) return;
    Eigen::MatrixXd j(3, dims[a] + (a == b ? 0 : dims[b]));
    for (int k = 0; k < j.size(); ++k) j.data()[k] = normal(rng);
    // Contribution J^T J of a residual touching blocks a and b.
    const Eigen::MatrixXd h = j.transpose() * j;
    const Eigen::MatrixXd ja = j.leftCols(dims[a]);
    system.AddBlock(a, a, ja.transpose() * ja);
    if (a != b) {
      const Eigen::MatrixXd jb = j.rightCols(dims[b]);
      system.AddBlock(b, b, jb.transpose() * jb);
      system.AddBlock(b, a, jb.transpose() * ja);
    }
    const int oa = system.block_offset(a), ob = system.block_offset(b);
    dense.block(oa, oa, dims[a], dims[a]) += h.topLeftCorner(dims[a], dims[a]);
    if (a != b) {
      dense.block(ob, ob, dims[b], dims[b]) += h.bottomRightCorner(dims[b], dims[b]);
      dense.block(oa, ob, dims[a], dims[b]) += h.topRightCorner(dims[a], dims[b]);
      dense.block(ob, oa, dims[b], dims[a]) += h.bottomLeftCorner(dims[b], dims[a]);
    }
  };
  for (int rep = 0; rep < 4; ++rep) {
    for (int i = 0; i + 1 < static_cast<int>(dims.size()); ++i) add(i, i + 1);
    add(0, 5);
  }
  const Eigen::VectorXd damping = Eigen::VectorXd::Constant(n, 0.5);
  system.AddToDiagonal(damping);
  dense.diagonal() += damping;
  EXPECT_LT((system.Diagonal() - dense.diagonal()).norm(), 1e-12);
  Eigen::VectorXd rhs(n);
  for (int k = 0; k < n; ++k) rhs[k] = normal(rng);
  Eigen::VectorXd x;
  ASSERT_TRUE(system.Solve(rhs, &x));
  const Eigen::VectorXd expected = dense.ldlt().solve(rhs);
  EXPECT_LT((x - expected).norm(), 1e-9 * (1 + expected.norm()));
}

ReducedCameraSolverOptions Solver(int max_dense_dim, int max_direct_dim) {
  ReducedCameraSolverOptions options;
  options.max_dense_dim = max_dense_dim;
  options.max_direct_dim = max_direct_dim;
  options.cg_tolerance = 1e-14;
  return options;
}

TEST(ReducedCameraSystem, DenseCholeskyMatchesReference) {
  CheckSolveMatchesDense(Solver(1000, 1000));
}
TEST(ReducedCameraSystem, SparseCholeskyMatchesReference) {
  CheckSolveMatchesDense(Solver(0, 1000));
}
// 28 unknowns: conjugate gradients are exact in at most 28 steps, up to rounding.
TEST(ReducedCameraSystem, PreconditionedConjugateGradientsMatchReference) {
  CheckSolveMatchesDense(Solver(0, 0));
}

TEST(ReducedCameraSystem, IndefiniteSystemIsReported) {
  for (const auto& solver : {Solver(10, 10), Solver(0, 10), Solver(0, 0)}) {
    ReducedCameraSystem system({2}, solver);
    system.Finalize();
    system.SetZero();
    Eigen::MatrixXd m(2, 2);
    m << 1, 0, 0, -1;
    system.AddBlock(0, 0, m);
    Eigen::VectorXd x;
    EXPECT_FALSE(system.Solve(Eigen::VectorXd::Ones(2), &x));
  }
}

}  // namespace
}  // namespace edgesfm
